/*
** decode.c: one perf record from a byte span and a layout (see decode.h).
**
** A cursor walks the record body; every take is checked against the end
** of the body, and counts read from the record (callchain nr, raw size,
** branch nr, ...) are checked by division before any multiplication, so a
** hostile count can neither overflow nor run past the span.
*/
#include "decode.h"

/* ---- the cursor ---- */

typedef struct cursor {
  const unsigned char *p;       /* record start */
  size_t off, end;              /* next byte, end of the body */
  const char *why;              /* first field that did not fit */
} cursor;

static const unsigned char *take(cursor *c, size_t n, const char *what) {
  if (c->why) return NULL;
  if (n > c->end - c->off) { c->why = what; return NULL; }
  const unsigned char *q = c->p + c->off;
  c->off += n;
  return q;
}

static uint64_t take64(cursor *c, const char *what) {
  const unsigned char *q = take(c, 8, what);
  return q ? pl_u64at(q) : 0;
}

static void take2x32(cursor *c, uint32_t *a, uint32_t *b, const char *what) {
  const unsigned char *q = take(c, 8, what);
  *a = q ? pl_u32at(q) : 0;
  *b = q ? pl_u32at(q + 4) : 0;
}

/* n items of `size` bytes each: NULL (and why set) unless all fit. */
static const unsigned char *take_array(cursor *c, uint64_t n, size_t size,
                                       const char *what) {
  if (c->why) return NULL;
  if (n > (c->end - c->off) / size) { c->why = what; return NULL; }
  return take(c, (size_t)n * size, what);
}

/* A NUL-terminated string padded to 8 bytes, running to the body's end:
** the span stops at the first NUL (or the end if there is none). */
static pl_span take_string(cursor *c) {
  pl_span s = { NULL, 0 };
  if (c->why) return s;
  s.p = c->p + c->off;
  size_t room = c->end - c->off;
  const unsigned char *nul = memchr(s.p, 0, room);
  s.n = nul ? (size_t)(nul - s.p) : room;
  c->off = c->end;
  return s;
}

static int popcount64(uint64_t x) {
  return __builtin_popcountll(x);
}

/* ---- struct read_format ---- */

/* The words of a read, copied out of the (unaligned) record and decoded by
** read_format.h; a group's entries stay in the record, decoded one by one. */
static void take_read(cursor *c, uint64_t fmt, pl_readv *rv) {
  uint64_t w[5] = { 0 };
  pl_counts k = { 0 };
  memset(rv, 0, sizeof *rv);
  rv->format = fmt;
  size_t words = (fmt & PL_F_GROUP) ? pl_rf_head_words(fmt) : pl_rf_single_words(fmt);
  const unsigned char *q = take_array(c, words, 8, "read");
  if (!q) return;
  memcpy(w, q, words * 8);
  if (fmt & PL_F_GROUP) {
    rv->nr = pl_rf_head(w, fmt, &k);
    rv->stride = 8 * pl_rf_entry_words(fmt);
    rv->entries = take_array(c, rv->nr, rv->stride, "read: nr entries");
    if (!rv->entries) rv->nr = 0;
  } else {
    pl_rf_single(w, fmt, &k);
    rv->value = k.value;
    rv->id = k.id;
    rv->lost = k.lost;
  }
  rv->time_enabled = k.enabled;
  rv->time_running = k.running;
}

void pl_readv_entry(const pl_readv *rv, uint64_t i, uint64_t *value,
                    uint64_t *id, uint64_t *lost) {
  *value = *id = *lost = 0;
  if (!(rv->format & PL_F_GROUP)) {
    if (i == 0) { *value = rv->value; *id = rv->id; *lost = rv->lost; }
    return;
  }
  if (i >= rv->nr) return;
  uint64_t w[3] = { 0 };
  pl_counts k;
  memcpy(w, rv->entries + i * rv->stride, rv->stride);
  pl_rf_entry(w, rv->format, &k);
  *value = k.value;
  *id = k.id;
  *lost = k.lost;
}

/* ---- PERF_RECORD_SAMPLE, in the order perf_output_sample() writes ---- */

static void take_regs(cursor *c, uint64_t mask, pl_regs *r, const char *what) {
  r->mask = mask;
  r->abi = take64(c, what);
  r->v = NULL;
  r->n = 0;
  /* the values follow only when abi != NONE (kernel: "if (abi)") */
  if (r->abi != PL_REGS_ABI_NONE && !c->why) {
    r->n = (size_t)popcount64(mask);
    r->v = take_array(c, r->n, 8, what);
    if (!r->v) r->n = 0;
  }
}

/* Every field is written once: taken from the record when its bit is set,
** zeroed otherwise (cheaper than clearing the whole struct first). */
#define U64_IF(bit, field, what) \
  s->field = (st & (bit)) ? take64(c, what) : 0

static void decode_sample(cursor *c, const pl_layout *lay, pl_sample *s) {
  uint64_t st = lay->sample_type;
  U64_IF(PL_S_IDENTIFIER, identifier, "identifier");
  U64_IF(PL_S_IP, ip, "ip");
  if (st & PL_S_TID) take2x32(c, &s->pid, &s->tid, "tid");
  else s->pid = s->tid = 0;
  U64_IF(PL_S_TIME, time, "time");
  U64_IF(PL_S_ADDR, addr, "addr");
  U64_IF(PL_S_ID, id, "id");
  U64_IF(PL_S_STREAM_ID, stream_id, "stream_id");
  if (st & PL_S_CPU) take2x32(c, &s->cpu, &s->res, "cpu");
  else s->cpu = s->res = 0;
  U64_IF(PL_S_PERIOD, period, "period");
  if (st & PL_S_READ) take_read(c, lay->read_format, &s->read);
  else memset(&s->read, 0, sizeof s->read);
  s->callchain_nr = 0;
  s->callchain = NULL;
  if (st & PL_S_CALLCHAIN) {
    s->callchain_nr = take64(c, "callchain.nr");
    s->callchain = take_array(c, s->callchain_nr, 8, "callchain: nr entries");
    if (!s->callchain) s->callchain_nr = 0;
  }
  s->raw.p = NULL;
  s->raw.n = 0;
  if (st & PL_S_RAW) {
    const unsigned char *q = take(c, 4, "raw.size");
    uint32_t n = q ? pl_u32at(q) : 0;
    s->raw.p = take(c, n, "raw: size bytes");
    s->raw.n = s->raw.p ? n : 0;
  }
  memset(&s->branch, 0, sizeof s->branch);
  if (st & PL_S_BRANCH_STACK) {
    s->branch.nr = take64(c, "branch_stack.nr");
    if (lay->branch_sample_type & PL_B_HW_INDEX) {
      s->branch.has_hw_idx = 1;
      s->branch.hw_idx = take64(c, "branch_stack.hw_idx");
    }
    s->branch.entries = take_array(c, s->branch.nr, 24, "branch_stack: nr entries");
    if (lay->branch_sample_type & PL_B_COUNTERS)
      s->branch.counters = take_array(c, s->branch.nr, 8, "branch_stack: nr counters");
    if (c->why) s->branch.nr = 0;
  }
  if (st & PL_S_REGS_USER) take_regs(c, lay->regs_user, &s->regs_user, "regs_user");
  else memset(&s->regs_user, 0, sizeof s->regs_user);
  memset(&s->stack_user, 0, sizeof s->stack_user);
  if (st & PL_S_STACK_USER) {
    /* size, then (only when size != 0) data[size] and dyn_size */
    s->stack_user.size = take64(c, "stack_user.size");
    if (s->stack_user.size) {
      s->stack_user.data = take_array(c, s->stack_user.size, 1, "stack_user: size bytes");
      s->stack_user.dyn_size = take64(c, "stack_user.dyn_size");
      if (s->stack_user.dyn_size > s->stack_user.size && !c->why)
        c->why = "stack_user: dyn_size > size";
    }
  }
  U64_IF(PL_S_WEIGHT_TYPE, weight, "weight");
  U64_IF(PL_S_DATA_SRC, data_src, "data_src");
  U64_IF(PL_S_TRANSACTION, transaction, "transaction");
  if (st & PL_S_REGS_INTR) take_regs(c, lay->regs_intr, &s->regs_intr, "regs_intr");
  else memset(&s->regs_intr, 0, sizeof s->regs_intr);
  U64_IF(PL_S_PHYS_ADDR, phys_addr, "phys_addr");
  U64_IF(PL_S_CGROUP, cgroup, "cgroup");
  U64_IF(PL_S_DATA_PAGE_SIZE, data_page_size, "data_page_size");
  U64_IF(PL_S_CODE_PAGE_SIZE, code_page_size, "code_page_size");
  /* The kernel writes AUX last (perf_output_sample); the uapi comment lists
  ** it before the page sizes. */
  s->aux.p = NULL;
  s->aux.n = 0;
  if (st & PL_S_AUX) {
    uint64_t n = take64(c, "aux.size");
    s->aux.p = take_array(c, n, 1, "aux: size bytes");
    s->aux.n = s->aux.p ? (size_t)n : 0;
  }
}

/* ---- the sample_id_all trailer ---- */

size_t pl_sid_size(uint64_t st) {
  return 8 * (size_t)(!!(st & PL_S_TID) + !!(st & PL_S_TIME) + !!(st & PL_S_ID) +
                      !!(st & PL_S_STREAM_ID) + !!(st & PL_S_CPU) +
                      !!(st & PL_S_IDENTIFIER));
}

static void decode_sid(const unsigned char *q, uint64_t st, pl_sid *sid) {
  sid->fields = st & PL_S_ID_FIELDS;
  if (st & PL_S_TID) { sid->pid = pl_u32at(q); sid->tid = pl_u32at(q + 4); q += 8; }
  if (st & PL_S_TIME) { sid->time = pl_u64at(q); q += 8; }
  if (st & PL_S_ID) { sid->id = pl_u64at(q); q += 8; }
  if (st & PL_S_STREAM_ID) { sid->stream_id = pl_u64at(q); q += 8; }
  if (st & PL_S_CPU) { sid->cpu = pl_u32at(q); sid->res = pl_u32at(q + 4); q += 8; }
  if (st & PL_S_IDENTIFIER) sid->identifier = pl_u64at(q);
}

/* ---- the other record types (layouts from enum perf_event_type) ---- */

/* The bodies with more than a few fields; each is called from one place
** (decode_other), where the compiler inlines it. */

static void decode_mmap(cursor *c, pl_record *r) {
  take2x32(c, &r->u.mmap.pid, &r->u.mmap.tid, "pid");
  r->u.mmap.addr = take64(c, "addr");
  r->u.mmap.len = take64(c, "len");
  r->u.mmap.pgoff = take64(c, "pgoff");
  if (r->type == PL_REC_MMAP2) {
    const unsigned char *q = take(c, 24, "maj/min/ino or build_id");
    if (q && (r->misc & PL_MISC_MMAP_BUILD_ID)) {
      /* u8 build_id_size, u8 + u16 reserved, u8 build_id[20] */
      r->u.mmap.build_id_size = q[0];
      r->u.mmap.build_id = q + 4;
      if (q[0] > 20) c->why = "build_id_size > 20";
    } else if (q) {
      r->u.mmap.maj = pl_u32at(q);
      r->u.mmap.min = pl_u32at(q + 4);
      r->u.mmap.ino = pl_u64at(q + 8);
      r->u.mmap.ino_generation = pl_u64at(q + 16);
    }
    take2x32(c, &r->u.mmap.prot, &r->u.mmap.flags, "prot");
  }
  r->u.mmap.filename = take_string(c);
}

static void decode_ksymbol(cursor *c, pl_record *r) {
  r->u.ksymbol.addr = take64(c, "addr");
  const unsigned char *q = take(c, 8, "len");
  if (q) {
    r->u.ksymbol.len = pl_u32at(q);
    r->u.ksymbol.ksym_type = pl_u16at(q + 4);
    r->u.ksymbol.flags = pl_u16at(q + 6);
  }
  r->u.ksymbol.name = take_string(c);
}

static void decode_bpf_event(cursor *c, pl_record *r) {
  const unsigned char *q = take(c, 16, "bpf_event");
  if (q) {
    r->u.bpf_event.type = pl_u16at(q);
    r->u.bpf_event.flags = pl_u16at(q + 2);
    r->u.bpf_event.id = pl_u32at(q + 4);
    r->u.bpf_event.tag = q + 8;   /* BPF_TAG_SIZE = 8 */
  }
}

static void decode_text_poke(cursor *c, pl_record *r) {
  r->u.text_poke.addr = take64(c, "addr");
  const unsigned char *q = take(c, 4, "old_len");
  if (q) {
    r->u.text_poke.old_len = pl_u16at(q);
    r->u.text_poke.new_len = pl_u16at(q + 2);
    r->u.text_poke.bytes = take(c, (size_t)r->u.text_poke.old_len +
                                r->u.text_poke.new_len, "text_poke: bytes");
  }
}

static void decode_other(cursor *c, const pl_layout *lay, pl_record *r) {
  switch (r->type) {
  case PL_REC_MMAP:
  case PL_REC_MMAP2:
    decode_mmap(c, r);
    break;
  case PL_REC_LOST:
    r->u.lost.id = take64(c, "id");
    r->u.lost.lost = take64(c, "lost");
    break;
  case PL_REC_COMM:
    take2x32(c, &r->u.comm.pid, &r->u.comm.tid, "pid");
    r->u.comm.comm = take_string(c);
    break;
  case PL_REC_EXIT:
  case PL_REC_FORK:
    take2x32(c, &r->u.task.pid, &r->u.task.ppid, "pid");
    take2x32(c, &r->u.task.tid, &r->u.task.ptid, "tid");
    r->u.task.time = take64(c, "time");
    break;
  case PL_REC_THROTTLE:
  case PL_REC_UNTHROTTLE:
    r->u.throttle.time = take64(c, "time");
    r->u.throttle.id = take64(c, "id");
    r->u.throttle.stream_id = take64(c, "stream_id");
    break;
  case PL_REC_READ:
    take2x32(c, &r->u.read.pid, &r->u.read.tid, "pid");
    take_read(c, lay->read_format, &r->u.read.values);
    break;
  case PL_REC_AUX:
    r->u.aux.aux_offset = take64(c, "aux_offset");
    r->u.aux.aux_size = take64(c, "aux_size");
    r->u.aux.flags = take64(c, "flags");
    break;
  case PL_REC_ITRACE_START:
    take2x32(c, &r->u.itrace_start.pid, &r->u.itrace_start.tid, "pid");
    break;
  case PL_REC_LOST_SAMPLES:
    r->u.lost_samples.lost = take64(c, "lost");
    break;
  case PL_REC_SWITCH:
    break;
  case PL_REC_SWITCH_CPU_WIDE:
    take2x32(c, &r->u.switch_cpu_wide.next_prev_pid,
             &r->u.switch_cpu_wide.next_prev_tid, "next_prev_pid");
    break;
  case PL_REC_NAMESPACES:
    take2x32(c, &r->u.namespaces.pid, &r->u.namespaces.tid, "pid");
    r->u.namespaces.nr = take64(c, "nr_namespaces");
    r->u.namespaces.links = take_array(c, r->u.namespaces.nr, 16,
                                       "namespaces: nr entries");
    if (!r->u.namespaces.links) r->u.namespaces.nr = 0;
    break;
  case PL_REC_KSYMBOL:
    decode_ksymbol(c, r);
    break;
  case PL_REC_BPF_EVENT:
    decode_bpf_event(c, r);
    break;
  case PL_REC_CGROUP:
    r->u.cgroup.id = take64(c, "id");
    r->u.cgroup.path = take_string(c);
    break;
  case PL_REC_TEXT_POKE:
    decode_text_poke(c, r);
    break;
  case PL_REC_AUX_OUTPUT_HW_ID:
    r->u.aux_output_hw_id.hw_id = take64(c, "hw_id");
    break;
  }
}

/* ---- entry points ---- */

int pl_decode(const unsigned char *p, size_t len, const pl_layout *lay,
              pl_record *r, const char **why) {
  /* the union is cleared by the part that fills it (decode_sample, or
  ** below for the other types), so it is not cleared twice */
  r->type = 0;
  r->misc = r->size = 0;
  r->known = 0;
  memset(&r->sid, 0, sizeof r->sid);
  *why = NULL;
  r->p = p;
  r->layout = lay;
  r->avail = len < 8 ? len : 8;
  if (len < 8) return PL_DECODE_SHORT;
  r->type = pl_u32at(p);
  r->misc = pl_u16at(p + 4);
  r->size = pl_u16at(p + 6);
  if (r->size < 8) return PL_DECODE_SIZE;
  if (r->size > len) { r->avail = len; return PL_DECODE_SHORT; }
  r->avail = r->size;
  if (!lay || r->type == 0 || r->type >= PL_REC_NTYPES) {
    memset(&r->u, 0, sizeof r->u);
    return PL_DECODE_OK;
  }

  cursor c = { p, 8, r->size, NULL };
  if (r->type == PL_REC_SAMPLE) {
    decode_sample(&c, lay, &r->u.sample);
  } else {
    memset(&r->u, 0, sizeof r->u);
    if (lay->sample_id_all) {
      size_t n = pl_sid_size(lay->sample_type);
      if (n > (size_t)r->size - 8) return PL_DECODE_TRAILER;
      c.end = r->size - n;
      decode_sid(p + c.end, lay->sample_type, &r->sid);
    }
    decode_other(&c, lay, r);
  }
  if (c.why) { *why = c.why; return PL_DECODE_BODY; }
  r->known = 1;
  return PL_DECODE_OK;
}

const char *pl_decode_strerror(int code) {
  switch (code) {
  case PL_DECODE_OK: return "ok";
  case PL_DECODE_SHORT: return "record shorter than its header says";
  case PL_DECODE_SIZE: return "record size smaller than a header";
  case PL_DECODE_BODY: return "field runs past the end of the record";
  case PL_DECODE_TRAILER: return "sample_id trailer larger than the record";
  }
  return "unknown decoding error";
}

static const char *const type_names[PL_REC_NTYPES] = {
  NULL, "mmap", "lost", "comm", "exit", "throttle", "unthrottle", "fork",
  "read", "sample", "mmap2", "aux", "itrace_start", "lost_samples", "switch",
  "switch_cpu_wide", "namespaces", "ksymbol", "bpf_event", "cgroup",
  "text_poke", "aux_output_hw_id",
};

const char *pl_record_type_name(uint32_t type) {
  return type < PL_REC_NTYPES ? type_names[type] : NULL;
}

const char *pl_reg_name(unsigned bit) {
#if defined(__x86_64__) || defined(__i386__)
  static const char *const x86[64] = {
    "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "cs",
    "ss", "ds", "es", "fs", "gs", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    "xmm0", "xmm0_hi", "xmm1", "xmm1_hi", "xmm2", "xmm2_hi", "xmm3",
    "xmm3_hi", "xmm4", "xmm4_hi", "xmm5", "xmm5_hi", "xmm6", "xmm6_hi",
    "xmm7", "xmm7_hi", "xmm8", "xmm8_hi", "xmm9", "xmm9_hi", "xmm10",
    "xmm10_hi", "xmm11", "xmm11_hi", "xmm12", "xmm12_hi", "xmm13",
    "xmm13_hi", "xmm14", "xmm14_hi", "xmm15", "xmm15_hi",
  };
  return bit < 64 ? x86[bit] : NULL;
#else
  (void)bit;
  return NULL;
#endif
}

/* ---- demultiplexing ---- */

/* Offset of the id in a sample, or -1: IDENTIFIER is always first; ID is
** found when only fixed-size fields (ip, tid, time, addr) precede it. */
static int sample_id_pos(uint64_t st) {
  if (st & PL_S_IDENTIFIER) return 8;
  if (!(st & PL_S_ID)) return -1;
  return 8 + 8 * (!!(st & PL_S_IP) + !!(st & PL_S_TID) + !!(st & PL_S_TIME) +
                  !!(st & PL_S_ADDR));
}

/* Offset from the end of the id in a trailer, or -1. */
static int other_id_pos(const pl_layout *l) {
  uint64_t st = l->sample_type;
  if (!l->sample_id_all) return -1;
  if (st & PL_S_IDENTIFIER) return 8;
  if (!(st & PL_S_ID)) return -1;
  return 8 * (1 + !!(st & PL_S_STREAM_ID) + !!(st & PL_S_CPU));
}

static int same_sample_shape(const pl_layout *a, const pl_layout *b) {
  return a->sample_type == b->sample_type && a->read_format == b->read_format &&
         a->branch_sample_type == b->branch_sample_type &&
         a->regs_user == b->regs_user && a->regs_intr == b->regs_intr;
}

static int same_other_shape(const pl_layout *a, const pl_layout *b) {
  return a->sample_id_all == b->sample_id_all &&
         a->read_format == b->read_format &&
         (!a->sample_id_all || (a->sample_type & PL_S_ID_FIELDS) ==
                               (b->sample_type & PL_S_ID_FIELDS));
}

/* Records can be told apart when the events that write them agree on
** their layout or carry an id at one position: samples come only from the
** events that sample (a dummy tracking event, or one with no period,
** never does), the other records (comm, mmap, lost...) from any. */
int pl_layouts_init(pl_layouts *s, const pl_layout *v, size_t n,
                    const char **why) {
  s->v = v;
  s->n = n;
  s->sample_pos = s->other_pos = -1;
  s->same_sample = s->same_other = 1;
  s->sampler = -1;
  for (size_t i = 0; i < n; i++) {
    int pos = other_id_pos(&v[i]);
    if (i == 0) s->other_pos = pos;
    else if (pos != s->other_pos) s->other_pos = -1;
    if (i > 0 && !same_other_shape(&v[0], &v[i])) s->same_other = 0;
    if (v[i].no_samples) continue;
    pos = sample_id_pos(v[i].sample_type);
    if (s->sampler < 0) {
      s->sampler = (int)i;
      s->sample_pos = pos;
    } else {
      if (pos != s->sample_pos) s->sample_pos = -1;
      if (!same_sample_shape(&v[s->sampler], &v[i])) s->same_sample = 0;
    }
  }
  if (s->sampler < 0) {                 /* none samples: decode as the first */
    s->sampler = 0;
    s->sample_pos = n ? sample_id_pos(v[0].sample_type) : -1;
  }
  *why = NULL;
  if ((!s->same_sample && s->sample_pos < 0) ||
      (!s->same_other && s->other_pos < 0)) {
    *why = "events sharing a ring differ in layout and their records carry "
           "no id at a common position: add \"identifier\" to every "
           "sample_type (and set sample_id_all)";
    return -1;
  }
  return 0;
}

int pl_record_id(const pl_layouts *s, const unsigned char *p, size_t len,
                 uint64_t *id) {
  if (len < 8) return 0;
  uint32_t type = pl_u32at(p);
  size_t size = pl_u16at(p + 6);
  if (size > len) return 0;
  if (type == PL_REC_SAMPLE) {
    if (s->sample_pos < 0 || (size_t)s->sample_pos + 8 > size) return 0;
    *id = pl_u64at(p + s->sample_pos);
    return 1;
  }
  if (s->other_pos < 0 || (size_t)s->other_pos + 8 > size) return 0;
  *id = pl_u64at(p + size - s->other_pos);
  return 1;
}

const pl_layout *pl_layouts_find(const pl_layouts *s, const unsigned char *p,
                                 size_t len, const char **why) {
  *why = NULL;
  if (s->n == 0) { *why = "no layout"; return NULL; }
  uint64_t id;
  if (s->n == 1) {
    /* a record from an event this ring does not know (redirected with
    ** set_output behind its back) is caught when ids are known */
    if (s->v[0].id && pl_record_id(s, p, len, &id) && id != s->v[0].id) {
      *why = "record id matches no event of this ring (add events with rb:attach)";
      return NULL;
    }
    return &s->v[0];
  }
  int sample = len >= 8 && pl_u32at(p) == PL_REC_SAMPLE;
  if (sample && s->same_sample) return &s->v[s->sampler];
  if (!sample && s->same_other) return &s->v[0];
  if (!pl_record_id(s, p, len, &id)) {
    *why = "record carries no id to tell which event wrote it";
    return NULL;
  }
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].id == id) return &s->v[i];
  *why = "record id matches no event of this ring (add events with rb:attach)";
  return NULL;
}

int pl_record_time(const pl_layout *lay, const unsigned char *p, size_t len,
                   uint64_t *time) {
  if (!lay || len < 8) return 0;
  uint64_t st = lay->sample_type;
  if (!(st & PL_S_TIME)) return 0;
  uint32_t type = pl_u32at(p);
  size_t size = pl_u16at(p + 6);
  if (size < 8 || size > len) return 0;
  size_t pos;
  if (type == PL_REC_SAMPLE) {
    pos = 8 + 8 * (size_t)(!!(st & PL_S_IDENTIFIER) + !!(st & PL_S_IP) +
                           !!(st & PL_S_TID));
  } else {
    if (!lay->sample_id_all || type >= PL_REC_NTYPES || type == 0) return 0;
    size_t back = 8 * (size_t)(1 + !!(st & PL_S_ID) + !!(st & PL_S_STREAM_ID) +
                               !!(st & PL_S_CPU) + !!(st & PL_S_IDENTIFIER));
    if (back > size - 8) return 0;
    pos = size - back;
  }
  if (pos + 8 > size) return 0;
  *time = pl_u64at(p + pos);
  return 1;
}
