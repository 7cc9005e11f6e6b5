/*
** perf_uapi.h: the kernel ABI this module speaks, as of Linux 6.18.
**
** The installed <linux/perf_event.h> may be older than the running kernel
** (Debian 12 ships the 6.1 header). Everything newer is carried here, and
** perf_event_attr is mirrored by our own struct pl_attr so that fields such
** as config3 and aux_action exist whatever header is installed.
** Source: include/uapi/linux/perf_event.h.
*/
#ifndef PERF_UAPI_H
#define PERF_UAPI_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

/* read_format: PERF_FORMAT_LOST arrived in 6.0 */
#ifndef PERF_FORMAT_LOST
#define PERF_FORMAT_LOST (1U << 4)
#endif

/* sample_type bits up to 6.18 */
#define PL_SAMPLE_DATA_PAGE_SIZE  (1ULL << 22)
#define PL_SAMPLE_CODE_PAGE_SIZE  (1ULL << 23)
#define PL_SAMPLE_WEIGHT_STRUCT   (1ULL << 24)
#define PL_SAMPLE_MAX             (1ULL << 25)

/* branch_sample_type bits newer than 6.1 */
#define PL_SAMPLE_BRANCH_PRIV_SAVE (1ULL << 18)
#define PL_SAMPLE_BRANCH_COUNTERS  (1ULL << 19)
#define PL_SAMPLE_BRANCH_MAX       (1ULL << 20)

/* software events up to 6.18 */
#define PL_COUNT_SW_CGROUP_SWITCHES 11
#define PL_COUNT_SW_MAX             12

/* record types up to 6.18 (enum perf_event_type) */
#define PL_RECORD_AUX_OUTPUT_HW_ID 21
#define PL_RECORD_MAX              22

/* attr sizes: VER7 (128) added sig_data, VER8 (136, 6.3) config3 */
#ifndef PERF_ATTR_SIZE_VER7
#define PERF_ATTR_SIZE_VER7 128
#endif
#define PL_ATTR_SIZE_VER8 136

/*
** struct pl_attr mirrors struct perf_event_attr of Linux 6.18 byte for
** byte. The 1-bit flags live in one 64-bit word (`flags`) and are addressed
** by bit number (PL_FLAG_*), which is how the kernel's bitfield is laid out
** on little-endian targets: the first declared flag is bit 0.
*/
struct pl_attr {
  uint32_t type;
  uint32_t size;
  uint64_t config;
  uint64_t sample_period;       /* union with sample_freq */
  uint64_t sample_type;
  uint64_t read_format;
  uint64_t flags;               /* disabled ... sigtrap, see PL_FLAG_* */
  uint32_t wakeup_events;       /* union with wakeup_watermark */
  uint32_t bp_type;
  uint64_t config1;             /* union: bp_addr, kprobe_func, uprobe_path */
  uint64_t config2;             /* union: bp_len, kprobe_addr, probe_offset */
  uint64_t branch_sample_type;
  uint64_t sample_regs_user;
  uint32_t sample_stack_user;
  int32_t  clockid;
  uint64_t sample_regs_intr;
  uint32_t aux_watermark;
  uint16_t sample_max_stack;
  uint16_t reserved_2;
  uint32_t aux_sample_size;
  uint32_t aux_action;          /* aux_start_paused:1, aux_pause:1, aux_resume:1 */
  uint64_t sig_data;
  uint64_t config3;
};

_Static_assert(sizeof(struct pl_attr) == PL_ATTR_SIZE_VER8, "pl_attr size");
_Static_assert(offsetof(struct pl_attr, flags) == 40, "pl_attr flags");
_Static_assert(offsetof(struct pl_attr, config1) == 56, "pl_attr config1");
_Static_assert(offsetof(struct pl_attr, sig_data) == 120, "pl_attr sig_data");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "struct pl_attr assumes a little-endian bitfield layout"
#endif

/* bit numbers of the flags word, in the kernel's declaration order */
enum {
  PL_FLAG_DISABLED, PL_FLAG_INHERIT, PL_FLAG_PINNED, PL_FLAG_EXCLUSIVE,
  PL_FLAG_EXCLUDE_USER, PL_FLAG_EXCLUDE_KERNEL, PL_FLAG_EXCLUDE_HV,
  PL_FLAG_EXCLUDE_IDLE, PL_FLAG_MMAP, PL_FLAG_COMM, PL_FLAG_FREQ,
  PL_FLAG_INHERIT_STAT, PL_FLAG_ENABLE_ON_EXEC, PL_FLAG_TASK,
  PL_FLAG_WATERMARK, PL_FLAG_PRECISE_IP /* 2 bits: 15-16 */,
  PL_FLAG_MMAP_DATA = 17, PL_FLAG_SAMPLE_ID_ALL, PL_FLAG_EXCLUDE_HOST,
  PL_FLAG_EXCLUDE_GUEST, PL_FLAG_EXCLUDE_CALLCHAIN_KERNEL,
  PL_FLAG_EXCLUDE_CALLCHAIN_USER, PL_FLAG_MMAP2, PL_FLAG_COMM_EXEC,
  PL_FLAG_USE_CLOCKID, PL_FLAG_CONTEXT_SWITCH, PL_FLAG_WRITE_BACKWARD,
  PL_FLAG_NAMESPACES, PL_FLAG_KSYMBOL, PL_FLAG_BPF_EVENT, PL_FLAG_AUX_OUTPUT,
  PL_FLAG_CGROUP, PL_FLAG_TEXT_POKE, PL_FLAG_BUILD_ID, PL_FLAG_INHERIT_THREAD,
  PL_FLAG_REMOVE_ON_EXEC, PL_FLAG_SIGTRAP,
  PL_FLAG_COUNT                 /* first reserved bit (38) */
};

#define PL_HAS(a, bit) ((((a)->flags) >> (bit)) & 1u)

#endif
