/*
** decode.h: perf ring-buffer records, decoded in plain C.
**
** The decoder reads one record from a contiguous byte span and a layout
** (the attr fields that shape records: sample_type, read_format, ...).
** It allocates nothing and knows nothing of Lua, so it can be unit-tested
** and fuzzed alone. Every read is bounds-checked against the record's own
** size; nothing outside [p, p + len) is ever touched. Variable parts
** (strings, arrays) are returned as pointers into the span, which need not
** be aligned: read them with pl_u64at() and friends.
**
** Source of truth for layouts: include/uapi/linux/perf_event.h (enum
** perf_event_type) and kernel/events/core.c perf_output_sample(), as of
** Linux 6.18.
*/
#ifndef PERF_DECODE_H
#define PERF_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "read_format.h"

#pragma GCC visibility push(hidden)

/* record types, enum perf_event_type (6.18) */
enum {
  PL_REC_MMAP = 1, PL_REC_LOST, PL_REC_COMM, PL_REC_EXIT, PL_REC_THROTTLE,
  PL_REC_UNTHROTTLE, PL_REC_FORK, PL_REC_READ, PL_REC_SAMPLE, PL_REC_MMAP2,
  PL_REC_AUX, PL_REC_ITRACE_START, PL_REC_LOST_SAMPLES, PL_REC_SWITCH,
  PL_REC_SWITCH_CPU_WIDE, PL_REC_NAMESPACES, PL_REC_KSYMBOL,
  PL_REC_BPF_EVENT, PL_REC_CGROUP, PL_REC_TEXT_POKE, PL_REC_AUX_OUTPUT_HW_ID,
  PL_REC_NTYPES                 /* first type this decoder does not know */
};

/* sample_type bits (enum perf_event_sample_format, 6.18) */
#define PL_S_IP             (1ULL << 0)
#define PL_S_TID            (1ULL << 1)
#define PL_S_TIME           (1ULL << 2)
#define PL_S_ADDR           (1ULL << 3)
#define PL_S_READ           (1ULL << 4)
#define PL_S_CALLCHAIN      (1ULL << 5)
#define PL_S_ID             (1ULL << 6)
#define PL_S_CPU            (1ULL << 7)
#define PL_S_PERIOD         (1ULL << 8)
#define PL_S_STREAM_ID      (1ULL << 9)
#define PL_S_RAW            (1ULL << 10)
#define PL_S_BRANCH_STACK   (1ULL << 11)
#define PL_S_REGS_USER      (1ULL << 12)
#define PL_S_STACK_USER     (1ULL << 13)
#define PL_S_WEIGHT         (1ULL << 14)
#define PL_S_DATA_SRC       (1ULL << 15)
#define PL_S_IDENTIFIER     (1ULL << 16)
#define PL_S_TRANSACTION    (1ULL << 17)
#define PL_S_REGS_INTR      (1ULL << 18)
#define PL_S_PHYS_ADDR      (1ULL << 19)
#define PL_S_AUX            (1ULL << 20)
#define PL_S_CGROUP         (1ULL << 21)
#define PL_S_DATA_PAGE_SIZE (1ULL << 22)
#define PL_S_CODE_PAGE_SIZE (1ULL << 23)
#define PL_S_WEIGHT_STRUCT  (1ULL << 24)
#define PL_S_WEIGHT_TYPE    (PL_S_WEIGHT | PL_S_WEIGHT_STRUCT)
/* the fields a sample_id_all trailer can carry */
#define PL_S_ID_FIELDS (PL_S_TID | PL_S_TIME | PL_S_ID | PL_S_STREAM_ID | \
                        PL_S_CPU | PL_S_IDENTIFIER)

/* read_format bits (PL_F_*) and layout: read_format.h */

/* branch_sample_type bits that change the sample's shape */
#define PL_B_HW_INDEX (1ULL << 17)
#define PL_B_COUNTERS (1ULL << 19)

/* header.misc */
#define PL_MISC_CPUMODE_MASK 7u
#define PL_MISC_MMAP_DATA    (1u << 13)   /* mmap, mmap2 */
#define PL_MISC_COMM_EXEC    (1u << 13)   /* comm */
#define PL_MISC_SWITCH_OUT   (1u << 13)   /* switch, switch_cpu_wide */
#define PL_MISC_EXACT_IP     (1u << 14)   /* sample */
#define PL_MISC_SWITCH_OUT_PREEMPT (1u << 14)
#define PL_MISC_MMAP_BUILD_ID (1u << 14)  /* mmap2 */

/* callchain context markers (enum perf_callchain_context): an entry at or
** above PL_CONTEXT_MAX is a marker, not an address */
#define PL_CONTEXT_HV           ((uint64_t)-32)
#define PL_CONTEXT_KERNEL       ((uint64_t)-128)
#define PL_CONTEXT_USER         ((uint64_t)-512)
#define PL_CONTEXT_GUEST        ((uint64_t)-2048)
#define PL_CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define PL_CONTEXT_GUEST_USER   ((uint64_t)-2560)
#define PL_CONTEXT_MAX          ((uint64_t)-4095)

/* sample_regs ABI (enum perf_sample_regs_abi) */
#define PL_REGS_ABI_NONE 0
#define PL_REGS_ABI_32   1
#define PL_REGS_ABI_64   2

/* A u32 field the kernel fills from a pid_t (pid, tid, ppid, ptid,
** next_prev_pid/tid), as the signed value it is: -1 stays -1. */
#define PL_SIGNED32(v) ((uint64_t)(int64_t)(int32_t)(uint32_t)(v))

/* ---- unaligned little-endian loads (the host is little-endian) ---- */
static inline uint64_t pl_u64at(const unsigned char *p) {
  uint64_t v; memcpy(&v, p, 8); return v;
}
static inline uint32_t pl_u32at(const unsigned char *p) {
  uint32_t v; memcpy(&v, p, 4); return v;
}
static inline uint16_t pl_u16at(const unsigned char *p) {
  uint16_t v; memcpy(&v, p, 2); return v;
}

/*
** A layout: what the decoder must know about the event that wrote a
** record. `id` is the event's id (PERF_EVENT_IOC_ID), used to demultiplex
** a stream that several events write into.
*/
typedef struct pl_layout {
  uint64_t sample_type;
  uint64_t read_format;
  uint64_t branch_sample_type;
  uint64_t regs_user;           /* sample_regs_user mask */
  uint64_t regs_intr;           /* sample_regs_intr mask */
  uint64_t id;
  int sample_id_all;
  int no_samples;               /* the event never writes a sample record */
} pl_layout;

/* A byte span inside the record. */
typedef struct pl_span {
  const unsigned char *p;
  size_t n;
} pl_span;

/*
** struct read_format. Not group: value [time_enabled] [time_running] [id]
** [lost]. Group: nr [time_enabled] [time_running] then nr entries of
** value [id] [lost]; entry i is at `entries + i * stride`.
*/
typedef struct pl_readv {
  uint64_t format;
  uint64_t time_enabled, time_running;
  uint64_t value, id, lost;     /* not group */
  uint64_t nr;                  /* group: number of entries */
  const unsigned char *entries;
  size_t stride;
} pl_readv;

/* The fields of a sample_id_all trailer; `fields` says which are present
** (PL_S_* bits). */
typedef struct pl_sid {
  uint64_t fields;
  uint32_t pid, tid;
  uint64_t time, id, stream_id;
  uint32_t cpu, res;
  uint64_t identifier;
} pl_sid;

typedef struct pl_regs {
  uint64_t abi;                 /* PL_REGS_ABI_*; NONE means no values */
  uint64_t mask;                /* which registers, from the layout */
  const unsigned char *v;       /* n values, in mask bit order */
  size_t n;
} pl_regs;

typedef struct pl_sample {
  uint64_t identifier, ip;
  uint32_t pid, tid;
  uint64_t time, addr, id, stream_id;
  uint32_t cpu, res;
  uint64_t period;
  pl_readv read;
  uint64_t callchain_nr;        /* callchain at `callchain` (u64 each) */
  const unsigned char *callchain;
  pl_span raw;
  struct {
    uint64_t nr, hw_idx;
    int has_hw_idx;
    const unsigned char *entries;   /* nr * {from, to, flags} */
    const unsigned char *counters;  /* nr * u64, or NULL */
  } branch;
  pl_regs regs_user, regs_intr;
  struct {
    uint64_t size, dyn_size;
    const unsigned char *data;
  } stack_user;
  uint64_t weight, data_src, transaction, phys_addr, cgroup;
  uint64_t data_page_size, code_page_size;
  pl_span aux;
} pl_sample;

typedef struct pl_record {
  uint32_t type;
  uint16_t misc, size;
  const unsigned char *p;       /* the whole record, header included */
  size_t avail;                 /* bytes of it at p: min(size, span) */
  const pl_layout *layout;      /* as given to pl_decode */
  pl_sid sid;                   /* trailer of a non-sample record */
  int known;                    /* type decoded (else: raw bytes only) */
  union {
    pl_sample sample;
    struct {                    /* mmap and mmap2 */
      uint32_t pid, tid;
      uint64_t addr, len, pgoff;
      uint32_t maj, min;
      uint64_t ino, ino_generation;
      uint8_t build_id_size;    /* mmap2 with PL_MISC_MMAP_BUILD_ID */
      const unsigned char *build_id;   /* 20 bytes, or NULL */
      uint32_t prot, flags;
      pl_span filename;
    } mmap;
    struct { uint64_t id, lost; } lost;
    struct { uint32_t pid, tid; pl_span comm; } comm;
    struct { uint32_t pid, ppid, tid, ptid; uint64_t time; } task; /* exit, fork */
    struct { uint64_t time, id, stream_id; } throttle;
    struct { uint32_t pid, tid; pl_readv values; } read;
    struct { uint64_t aux_offset, aux_size, flags; } aux;
    struct { uint32_t pid, tid; } itrace_start;
    struct { uint64_t lost; } lost_samples;
    struct { uint32_t next_prev_pid, next_prev_tid; } switch_cpu_wide;
    struct {
      uint32_t pid, tid;
      uint64_t nr;
      const unsigned char *links;     /* nr * {dev, ino} */
    } namespaces;
    struct {
      uint64_t addr;
      uint32_t len;
      uint16_t ksym_type, flags;
      pl_span name;
    } ksymbol;
    struct {
      uint16_t type, flags;
      uint32_t id;
      const unsigned char *tag;       /* 8 bytes */
    } bpf_event;
    struct { uint64_t id; pl_span path; } cgroup;
    struct {
      uint64_t addr;
      uint16_t old_len, new_len;
      const unsigned char *bytes;     /* old_len + new_len */
    } text_poke;
    struct { uint64_t hw_id; } aux_output_hw_id;
  } u;
} pl_record;

/* Decoding results. */
enum {
  PL_DECODE_OK = 0,
  PL_DECODE_SHORT,      /* span shorter than a header or than header.size */
  PL_DECODE_SIZE,       /* header.size < 8 */
  PL_DECODE_BODY,       /* a field runs past the record: see r->why */
  PL_DECODE_TRAILER     /* sample_id_all trailer larger than the record */
};

/*
** Decodes the record at p (len bytes available, at least header.size) with
** layout `lay` (may be NULL: then only the header is decoded and known = 0).
** Returns PL_DECODE_*; on PL_DECODE_BODY, *why names the field that did not
** fit (a static string). The header fields and p are set in every case.
*/
int pl_decode(const unsigned char *p, size_t len, const pl_layout *lay,
              pl_record *r, const char **why);

/* A short message for a PL_DECODE_* code. */
const char *pl_decode_strerror(int code);

/* The kernel's name for a record type, lower-cased ("sample"), or NULL. */
const char *pl_record_type_name(uint32_t type);

/* The name of sample_regs bit `bit` (x86: enum perf_event_x86_regs of
** arch/x86/include/uapi/asm/perf_regs.h, lower-cased as perf's --user-regs
** takes them: "ax" .. "r15"; XMMn spans bits 32+2n, "xmmN", and 33+2n,
** "xmmN_hi"), or NULL where this architecture names no such register. */
const char *pl_reg_name(unsigned bit);

/* Bytes the sample_id_all trailer takes for this sample_type. */
size_t pl_sid_size(uint64_t sample_type);

/* Entry i of a group read (value, id, lost: absent ones are 0). */
void pl_readv_entry(const pl_readv *rv, uint64_t i, uint64_t *value,
                    uint64_t *id, uint64_t *lost);

/*
** Several layouts sharing one stream, told apart by event id. Samples carry
** the id at a fixed offset from the start (PERF_SAMPLE_IDENTIFIER, or
** PERF_SAMPLE_ID when only fixed-size fields precede it); other records
** carry it at a fixed offset from the end of their sample_id_all trailer.
** pl_layouts_init checks that every layout agrees on those positions.
*/
typedef struct pl_layouts {
  const pl_layout *v;
  size_t n;
  int sample_pos;       /* byte offset of the id in a sample, or -1 */
  int other_pos;        /* byte offset of the id from a record's end, or -1 */
  int same_sample;      /* every layout that samples decodes samples alike */
  int same_other;       /* every layout decodes other records alike */
  int sampler;          /* the first layout that samples (0 if none does) */
} pl_layouts;

/* Prepares a set over v[0..n). Returns 0, or -1 with *why saying what
** prevents demultiplexing (the set is still usable: records that cannot be
** attributed get no layout). */
int pl_layouts_init(pl_layouts *s, const pl_layout *v, size_t n,
                    const char **why);

/* The layout for the record at p (len bytes, header.size <= len), or NULL
** with *why set: the id is unknown, or the stream cannot be demultiplexed. */
const pl_layout *pl_layouts_find(const pl_layouts *s, const unsigned char *p,
                                 size_t len, const char **why);

/* The id at the position pl_layouts_find uses, if the record has one. */
int pl_record_id(const pl_layouts *s, const unsigned char *p, size_t len,
                 uint64_t *id);

/* The timestamp of a record (sample TIME, or the trailer's time), if the
** layout gives it one without decoding the rest. */
int pl_record_time(const pl_layout *lay, const unsigned char *p, size_t len,
                   uint64_t *time);

#pragma GCC visibility pop

#endif
