/*
** record_push.c: decoded records (decode.h) as Lua tables.
**
** Field names are the kernel's (include/uapi/linux/perf_event.h). Header
** misc flags are booleans named after PERF_RECORD_MISC_* lower-cased
** (exact_ip, comm_exec, switch_out, ...), set only when true.
*/
#include <stdio.h>

#include "lauxlib.h"

#include "record_push.h"

/* Every top-level key a record table can have, so a reused table can be
** cleared of what the previous record left. */
#define KEYS(X) \
  X(type) X(misc) X(cpumode) X(error) X(raw) X(type_id) \
  X(identifier) X(ip) X(pid) X(tid) X(time) X(addr) X(id) X(stream_id) \
  X(cpu) X(period) X(read) X(callchain) X(branch_stack) X(regs_user) \
  X(stack_user) X(weight) X(weight_struct) X(data_src) X(mem) \
  X(transaction) X(regs_intr) X(phys_addr) X(cgroup) X(data_page_size) \
  X(code_page_size) X(aux) X(exact_ip) \
  X(len) X(pgoff) X(maj) X(min) X(ino) X(ino_generation) X(build_id) \
  X(prot) X(flags) X(filename) X(mmap_data) X(mmap_build_id) \
  X(lost) X(comm) X(comm_exec) X(ppid) X(ptid) X(aux_offset) X(aux_size) \
  X(switch_out) X(switch_out_preempt) X(next_prev_pid) X(next_prev_tid) \
  X(namespaces) X(ksym_type) X(name) X(bpf_type) X(tag) X(path) \
  X(old_len) X(new_len) X(bytes) X(hw_id) X(sample_id) X(res)

#define KEY_ENUM(k) K_##k,
enum { KEYS(KEY_ENUM) K_COUNT };
#define KEY_NAME(k) #k,
static const char *const key_names[K_COUNT] = { KEYS(KEY_NAME) };

_Static_assert(K_COUNT <= 128, "pl_keyset holds 128 keys");

/*
** Keys are Lua strings made once and kept in a registry table (strings
** 1..K_COUNT are the keys, then the record type names, then the cpumode
** names), so filling a field is rawgeti + push + rawset: no C string is
** hashed or compared per record.
*/
static const char strings_anchor = 0;
#define S_TYPE(t) (K_COUNT + 1 + (int)(t))            /* t < PL_REC_NTYPES */
#define S_UNKNOWN (K_COUNT + 1 + PL_REC_NTYPES)
#define S_CPUMODE(m) (S_UNKNOWN + 1 + (int)(m))       /* m in 0..7 */
#define S_RECORD_MT (S_CPUMODE(7) + 1)                 /* the records' metatable */

static const char *const cpumode_names[8] = {
  "unknown", "kernel", "user", "hypervisor", "guest_kernel", "guest_user",
  "unknown", "unknown",
};

const char *pl_cpumode_name(unsigned m) { return cpumode_names[m & 7]; }

void pl_record_push_init(lua_State *L) {
  lua_createtable(L, S_RECORD_MT, 0);
  for (int k = 0; k < K_COUNT; k++) {
    lua_pushstring(L, key_names[k]);
    lua_rawseti(L, -2, k + 1);
  }
  for (uint32_t t = 0; t < PL_REC_NTYPES; t++) {
    const char *name = pl_record_type_name(t);
    lua_pushstring(L, name ? name : "unknown");
    lua_rawseti(L, -2, S_TYPE(t));
  }
  lua_pushliteral(L, "unknown");
  lua_rawseti(L, -2, S_UNKNOWN);
  /* the records' metatable (show.c made it; absent where no core is) */
  luaL_getmetatable(L, "perf.record");
  lua_rawseti(L, -2, S_RECORD_MT);
  for (int m = 0; m < 8; m++) {
    lua_pushstring(L, cpumode_names[m]);
    lua_rawseti(L, -2, S_CPUMODE(m));
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &strings_anchor);
}

typedef struct pusher {
  lua_State *L;
  int t;                        /* absolute index of the record table */
  int s;                        /* absolute index of the strings table */
  pl_keyset set;                /* keys written */
} pusher;

static void mark(pusher *P, int k) {
  P->set.bits[k >> 6] |= 1ULL << (k & 63);
}

static void key(pusher *P, int k) {
  lua_rawgeti(P->L, P->s, k + 1);
  mark(P, k);
}

/* value on top of the stack -> t[key] */
static void put(pusher *P, int k) {
  key(P, k);
  lua_insert(P->L, -2);
  lua_rawset(P->L, P->t);
}

static void put_int(pusher *P, int k, uint64_t v) {
  key(P, k);
  lua_pushinteger(P->L, (lua_Integer)v);
  lua_rawset(P->L, P->t);
}

static void put_str(pusher *P, int k, int string_index) {
  key(P, k);
  lua_rawgeti(P->L, P->s, string_index);
  lua_rawset(P->L, P->t);
}

static void put_span(pusher *P, int k, pl_span s) {
  key(P, k);
  lua_pushlstring(P->L, s.n ? (const char *)s.p : "", s.n);
  lua_rawset(P->L, P->t);
}

static void put_true(pusher *P, int k) {
  key(P, k);
  lua_pushboolean(P->L, 1);
  lua_rawset(P->L, P->t);
}

static int has(const pusher *P, int k) {
  return (P->set.bits[k >> 6] >> (k & 63)) & 1;
}

/* ---- shared pieces ---- */

static void field_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

void pl_readv_push(lua_State *L, const pl_readv *rv) {
  uint64_t f = rv->format;
  if (f & PL_F_GROUP) {
    lua_createtable(L, (int)(rv->nr < 64 ? rv->nr : 64), 2);
    for (uint64_t i = 0; i < rv->nr; i++) {
      uint64_t v, id, lost;
      pl_readv_entry(rv, i, &v, &id, &lost);
      lua_createtable(L, 0, 3);
      field_int(L, "value", v);
      if (f & PL_F_ID) field_int(L, "id", id);
      if (f & PL_F_LOST) field_int(L, "lost", lost);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  } else {
    lua_createtable(L, 0, 5);
    field_int(L, "value", rv->value);
    if (f & PL_F_ID) field_int(L, "id", rv->id);
    if (f & PL_F_LOST) field_int(L, "lost", rv->lost);
  }
  if (f & PL_F_TOTAL_TIME_ENABLED) field_int(L, "time_enabled", rv->time_enabled);
  if (f & PL_F_TOTAL_TIME_RUNNING) field_int(L, "time_running", rv->time_running);
}

static void push_hex(lua_State *L, const unsigned char *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < n; i++) {
    luaL_addchar(&b, digits[p[i] >> 4]);
    luaL_addchar(&b, digits[p[i] & 15]);
  }
  luaL_pushresult(&b);
}

/* ---- sample fields ---- */

static const char *context_name(uint64_t v) {
  switch (v) {
  case PL_CONTEXT_HV: return "hv";
  case PL_CONTEXT_KERNEL: return "kernel";
  case PL_CONTEXT_USER: return "user";
  case PL_CONTEXT_GUEST: return "guest";
  case PL_CONTEXT_GUEST_KERNEL: return "guest_kernel";
  case PL_CONTEXT_GUEST_USER: return "guest_user";
  }
  return "context";
}

/* Callchain entries as a list: addresses are integers, the kernel's
** PERF_CONTEXT_* markers (values >= PERF_CONTEXT_MAX) are strings. */
static void push_callchain(lua_State *L, const pl_sample *s) {
  lua_createtable(L, (int)(s->callchain_nr < 256 ? s->callchain_nr : 256), 0);
  for (uint64_t i = 0; i < s->callchain_nr; i++) {
    uint64_t v = pl_u64at(s->callchain + 8 * i);
    if (v >= PL_CONTEXT_MAX) lua_pushstring(L, context_name(v));
    else lua_pushinteger(L, (lua_Integer)v);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void field_bool(lua_State *L, const char *k, uint64_t v) {
  lua_pushboolean(L, v != 0);
  lua_setfield(L, -2, k);
}

/* struct perf_branch_entry: from, to, then a flags word (6.18 bitfield:
** mispred:1 predicted:1 in_tx:1 abort:1 cycles:16 type:4 spec:2
** new_type:4 priv:3). */
static void push_branches(lua_State *L, const pl_sample *s) {
  uint64_t nr = s->branch.nr;
  lua_createtable(L, (int)(nr < 64 ? nr : 64), 1);
  if (s->branch.has_hw_idx) field_int(L, "hw_idx", s->branch.hw_idx);
  for (uint64_t i = 0; i < nr; i++) {
    const unsigned char *e = s->branch.entries + 24 * i;
    uint64_t fl = pl_u64at(e + 16);
    lua_createtable(L, 0, 12);
    field_int(L, "from", pl_u64at(e));
    field_int(L, "to", pl_u64at(e + 8));
    field_bool(L, "mispred", fl & 1);
    field_bool(L, "predicted", (fl >> 1) & 1);
    field_bool(L, "in_tx", (fl >> 2) & 1);
    field_bool(L, "abort", (fl >> 3) & 1);
    field_int(L, "cycles", (fl >> 4) & 0xffff);
    field_int(L, "type", (fl >> 20) & 0xf);
    field_int(L, "spec", (fl >> 24) & 0x3);
    field_int(L, "new_type", (fl >> 26) & 0xf);
    field_int(L, "priv", (fl >> 30) & 0x7);
    if (s->branch.counters) field_int(L, "counters", pl_u64at(s->branch.counters + 8 * i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* A register's name (pl_reg_name), or "regN" where it has none. */
static void reg_name(unsigned bit, char *buf, size_t len) {
  const char *name = pl_reg_name(bit);
  if (name) snprintf(buf, len, "%s", name);
  else snprintf(buf, len, "reg%u", bit);
}

static void push_regs(lua_State *L, const pl_regs *r) {
  lua_createtable(L, 0, (int)r->n + 1);
  field_int(L, "abi", r->abi);
  size_t i = 0;
  for (unsigned bit = 0; bit < 64 && i < r->n; bit++) {
    if (!((r->mask >> bit) & 1)) continue;
    char name[16];
    reg_name(bit, name, sizeof name);
    field_int(L, name, pl_u64at(r->v + 8 * i));
    i++;
  }
}

/* A list of the names of the bits set in v. */
static void push_bitnames(lua_State *L, uint64_t v, const char *const *names,
                          unsigned n) {
  lua_createtable(L, 4, 0);
  int k = 1;
  for (unsigned b = 0; b < n; b++)
    if ((v >> b) & 1) {
      lua_pushstring(L, names[b]);
      lua_rawseti(L, -2, k++);
    }
}

/* union perf_mem_data_src, field by field (PERF_MEM_* in the uapi). */
static void push_data_src(lua_State *L, uint64_t d) {
  static const char *const op[] = { "na", "load", "store", "pfetch", "exec" };
  static const char *const lvl[] = {
    "na", "hit", "miss", "l1", "lfb", "l2", "l3", "loc_ram", "rem_ram1",
    "rem_ram2", "rem_cce1", "rem_cce2", "io", "unc" };
  static const char *const snoop[] = { "na", "none", "hit", "miss", "hitm" };
  static const char *const lock[] = { "na", "locked" };
  static const char *const tlb[] = { "na", "hit", "miss", "l1", "l2", "wk", "os" };
  static const char *const snoopx[] = { "fwd", "peer" };
  static const char *const blk[] = { "na", "data", "addr" };
  static const char *const lvlnum[16] = {
    NULL, "l1", "l2", "l3", "l4", NULL, NULL, NULL, NULL, "cxl", "io",
    "any_cache", "lfb", "ram", "pmem", "na" };
  uint64_t mop = d & 0x1f, mlvl = (d >> 5) & 0x3fff, msnoop = (d >> 19) & 0x1f;
  uint64_t mlock = (d >> 24) & 3, mdtlb = (d >> 26) & 0x7f;
  uint64_t mnum = (d >> 33) & 0xf, mremote = (d >> 37) & 1;
  uint64_t msnoopx = (d >> 38) & 3, mblk = (d >> 40) & 7, mhops = (d >> 43) & 7;
  lua_createtable(L, 0, 20);
  field_int(L, "mem_op", mop);
  field_int(L, "mem_lvl", mlvl);
  field_int(L, "mem_snoop", msnoop);
  field_int(L, "mem_lock", mlock);
  field_int(L, "mem_dtlb", mdtlb);
  field_int(L, "mem_lvl_num", mnum);
  field_int(L, "mem_remote", mremote);
  field_int(L, "mem_snoopx", msnoopx);
  field_int(L, "mem_blk", mblk);
  field_int(L, "mem_hops", mhops);
  push_bitnames(L, mop, op, 5); lua_setfield(L, -2, "op");
  push_bitnames(L, mlvl, lvl, 14); lua_setfield(L, -2, "lvl");
  push_bitnames(L, msnoop, snoop, 5); lua_setfield(L, -2, "snoop");
  push_bitnames(L, mlock, lock, 2); lua_setfield(L, -2, "lock");
  push_bitnames(L, mdtlb, tlb, 7); lua_setfield(L, -2, "dtlb");
  push_bitnames(L, msnoopx, snoopx, 2); lua_setfield(L, -2, "snoopx");
  push_bitnames(L, mblk, blk, 3); lua_setfield(L, -2, "blk");
  if (lvlnum[mnum]) { lua_pushstring(L, lvlnum[mnum]); lua_setfield(L, -2, "lvl_num"); }
  field_bool(L, "remote", mremote);
  field_int(L, "hops", mhops);
}

static void push_sample(pusher *P, const pl_record *r) {
  lua_State *L = P->L;
  const pl_sample *s = &r->u.sample;
  uint64_t st = r->layout->sample_type;
  if (r->misc & PL_MISC_EXACT_IP) put_true(P, K_exact_ip);
  if (st & PL_S_IDENTIFIER) put_int(P, K_identifier, s->identifier);
  if (st & PL_S_IP) put_int(P, K_ip, s->ip);
  if (st & PL_S_TID) { put_int(P, K_pid, PL_SIGNED32(s->pid)); put_int(P, K_tid, PL_SIGNED32(s->tid)); }
  if (st & PL_S_TIME) put_int(P, K_time, s->time);
  if (st & PL_S_ADDR) put_int(P, K_addr, s->addr);
  if (st & PL_S_ID) put_int(P, K_id, s->id);
  else if (st & PL_S_IDENTIFIER) put_int(P, K_id, s->identifier);  /* the same id */
  if (st & PL_S_STREAM_ID) put_int(P, K_stream_id, s->stream_id);
  if (st & PL_S_CPU) put_int(P, K_cpu, s->cpu);
  if (st & PL_S_PERIOD) put_int(P, K_period, s->period);
  if (st & PL_S_READ) { pl_readv_push(L, &s->read); put(P, K_read); }
  if (st & PL_S_CALLCHAIN) { push_callchain(L, s); put(P, K_callchain); }
  if (st & PL_S_RAW) put_span(P, K_raw, s->raw);
  if (st & PL_S_BRANCH_STACK) { push_branches(L, s); put(P, K_branch_stack); }
  if (st & PL_S_REGS_USER) { push_regs(L, &s->regs_user); put(P, K_regs_user); }
  if (st & PL_S_STACK_USER) {
    lua_createtable(L, 0, 3);
    field_int(L, "size", s->stack_user.size);
    if (s->stack_user.size) {
      lua_pushlstring(L, (const char *)s->stack_user.data, (size_t)s->stack_user.size);
      lua_setfield(L, -2, "data");
      field_int(L, "dyn_size", s->stack_user.dyn_size);
    }
    put(P, K_stack_user);
  }
  if (st & PL_S_WEIGHT_TYPE) {
    put_int(P, K_weight, s->weight);
    if (st & PL_S_WEIGHT_STRUCT) {
      /* union perf_sample_weight: u32 var1_dw, u16 var2_w, u16 var3_w */
      lua_createtable(L, 0, 3);
      field_int(L, "var1_dw", s->weight & 0xffffffffu);
      field_int(L, "var2_w", (s->weight >> 32) & 0xffff);
      field_int(L, "var3_w", s->weight >> 48);
      put(P, K_weight_struct);
    }
  }
  if (st & PL_S_DATA_SRC) {
    put_int(P, K_data_src, s->data_src);
    push_data_src(L, s->data_src);
    put(P, K_mem);
  }
  if (st & PL_S_TRANSACTION) put_int(P, K_transaction, s->transaction);
  if (st & PL_S_REGS_INTR) { push_regs(L, &s->regs_intr); put(P, K_regs_intr); }
  if (st & PL_S_PHYS_ADDR) put_int(P, K_phys_addr, s->phys_addr);
  if (st & PL_S_CGROUP) put_int(P, K_cgroup, s->cgroup);
  if (st & PL_S_DATA_PAGE_SIZE) put_int(P, K_data_page_size, s->data_page_size);
  if (st & PL_S_CODE_PAGE_SIZE) put_int(P, K_code_page_size, s->code_page_size);
  if (st & PL_S_AUX) put_span(P, K_aux, s->aux);
}

/* ---- other records ---- */

static const char *const ns_names[] = {
  "net", "uts", "ipc", "pid", "user", "mnt", "cgroup" };

/* The bodies of the other records with more than a few fields; each is
** called from one place (push_other), where the compiler inlines it. */

static void push_mmap(pusher *P, const pl_record *r) {
  if (r->misc & PL_MISC_MMAP_DATA) put_true(P, K_mmap_data);
  put_int(P, K_pid, PL_SIGNED32(r->u.mmap.pid));
  put_int(P, K_tid, PL_SIGNED32(r->u.mmap.tid));
  put_int(P, K_addr, r->u.mmap.addr);
  put_int(P, K_len, r->u.mmap.len);
  put_int(P, K_pgoff, r->u.mmap.pgoff);
  if (r->type == PL_REC_MMAP2) {
    if (r->u.mmap.build_id) {
      put_true(P, K_mmap_build_id);
      push_hex(P->L, r->u.mmap.build_id, r->u.mmap.build_id_size);
      put(P, K_build_id);
    } else {
      put_int(P, K_maj, r->u.mmap.maj);
      put_int(P, K_min, r->u.mmap.min);
      put_int(P, K_ino, r->u.mmap.ino);
      put_int(P, K_ino_generation, r->u.mmap.ino_generation);
    }
    put_int(P, K_prot, r->u.mmap.prot);
    put_int(P, K_flags, r->u.mmap.flags);
  }
  put_span(P, K_filename, r->u.mmap.filename);
}

static void push_switch(pusher *P, const pl_record *r) {
  if (r->misc & PL_MISC_SWITCH_OUT) put_true(P, K_switch_out);
  if (r->misc & PL_MISC_SWITCH_OUT_PREEMPT) put_true(P, K_switch_out_preempt);
  if (r->type == PL_REC_SWITCH_CPU_WIDE) {
    put_int(P, K_next_prev_pid, PL_SIGNED32(r->u.switch_cpu_wide.next_prev_pid));
    put_int(P, K_next_prev_tid, PL_SIGNED32(r->u.switch_cpu_wide.next_prev_tid));
  }
}

static void push_namespaces(pusher *P, const pl_record *r) {
  lua_State *L = P->L;
  uint64_t nr = r->u.namespaces.nr;
  put_int(P, K_pid, PL_SIGNED32(r->u.namespaces.pid));
  put_int(P, K_tid, PL_SIGNED32(r->u.namespaces.tid));
  lua_createtable(L, (int)(nr < 16 ? nr : 16), 0);
  for (uint64_t i = 0; i < nr; i++) {
    const unsigned char *e = r->u.namespaces.links + 16 * i;
    lua_createtable(L, 0, 3);
    field_int(L, "dev", pl_u64at(e));
    field_int(L, "ino", pl_u64at(e + 8));
    if (i < sizeof ns_names / sizeof *ns_names) {
      lua_pushstring(L, ns_names[i]);
      lua_setfield(L, -2, "name");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  put(P, K_namespaces);
}

static void push_bpf_event(pusher *P, const pl_record *r) {
  /* the body's u16 `type` would shadow the record type: bpf_type */
  put_int(P, K_bpf_type, r->u.bpf_event.type);
  put_int(P, K_flags, r->u.bpf_event.flags);
  put_int(P, K_id, r->u.bpf_event.id);
  push_hex(P->L, r->u.bpf_event.tag, 8);
  put(P, K_tag);
}

static void push_text_poke(pusher *P, const pl_record *r) {
  put_int(P, K_addr, r->u.text_poke.addr);
  put_int(P, K_old_len, r->u.text_poke.old_len);
  put_int(P, K_new_len, r->u.text_poke.new_len);
  lua_pushlstring(P->L, (const char *)r->u.text_poke.bytes,
                  (size_t)r->u.text_poke.old_len + r->u.text_poke.new_len);
  put(P, K_bytes);
}

static void push_other(pusher *P, const pl_record *r) {
  lua_State *L = P->L;
  switch (r->type) {
  case PL_REC_MMAP:
  case PL_REC_MMAP2:
    push_mmap(P, r);
    break;
  case PL_REC_LOST:
    put_int(P, K_id, r->u.lost.id);
    put_int(P, K_lost, r->u.lost.lost);
    break;
  case PL_REC_COMM:
    if (r->misc & PL_MISC_COMM_EXEC) put_true(P, K_comm_exec);
    put_int(P, K_pid, PL_SIGNED32(r->u.comm.pid));
    put_int(P, K_tid, PL_SIGNED32(r->u.comm.tid));
    put_span(P, K_comm, r->u.comm.comm);
    break;
  case PL_REC_EXIT:
  case PL_REC_FORK:
    put_int(P, K_pid, PL_SIGNED32(r->u.task.pid));
    put_int(P, K_ppid, PL_SIGNED32(r->u.task.ppid));
    put_int(P, K_tid, PL_SIGNED32(r->u.task.tid));
    put_int(P, K_ptid, PL_SIGNED32(r->u.task.ptid));
    put_int(P, K_time, r->u.task.time);
    break;
  case PL_REC_THROTTLE:
  case PL_REC_UNTHROTTLE:
    put_int(P, K_time, r->u.throttle.time);
    put_int(P, K_id, r->u.throttle.id);
    put_int(P, K_stream_id, r->u.throttle.stream_id);
    break;
  case PL_REC_READ:
    put_int(P, K_pid, PL_SIGNED32(r->u.read.pid));
    put_int(P, K_tid, PL_SIGNED32(r->u.read.tid));
    pl_readv_push(L, &r->u.read.values);
    put(P, K_read);
    break;
  case PL_REC_AUX:
    put_int(P, K_aux_offset, r->u.aux.aux_offset);
    put_int(P, K_aux_size, r->u.aux.aux_size);
    put_int(P, K_flags, r->u.aux.flags);
    break;
  case PL_REC_ITRACE_START:
    put_int(P, K_pid, PL_SIGNED32(r->u.itrace_start.pid));
    put_int(P, K_tid, PL_SIGNED32(r->u.itrace_start.tid));
    break;
  case PL_REC_LOST_SAMPLES:
    put_int(P, K_lost, r->u.lost_samples.lost);
    break;
  case PL_REC_SWITCH:
  case PL_REC_SWITCH_CPU_WIDE:
    push_switch(P, r);
    break;
  case PL_REC_NAMESPACES:
    push_namespaces(P, r);
    break;
  case PL_REC_KSYMBOL:
    put_int(P, K_addr, r->u.ksymbol.addr);
    put_int(P, K_len, r->u.ksymbol.len);
    put_int(P, K_ksym_type, r->u.ksymbol.ksym_type);
    put_int(P, K_flags, r->u.ksymbol.flags);
    put_span(P, K_name, r->u.ksymbol.name);
    break;
  case PL_REC_BPF_EVENT:
    push_bpf_event(P, r);
    break;
  case PL_REC_CGROUP:
    put_int(P, K_id, r->u.cgroup.id);
    put_span(P, K_path, r->u.cgroup.path);
    break;
  case PL_REC_TEXT_POKE:
    push_text_poke(P, r);
    break;
  case PL_REC_AUX_OUTPUT_HW_ID:
    put_int(P, K_hw_id, r->u.aux_output_hw_id.hw_id);
    break;
  }
}

/* rec.sample_id, and time/cpu/id/stream_id lifted onto the record when its
** body has no field of that name. */
static void push_sid(pusher *P, const pl_record *r) {
  lua_State *L = P->L;
  const pl_sid *s = &r->sid;
  uint64_t f = s->fields;
  if (!f) return;
  lua_createtable(L, 0, 8);
  if (f & PL_S_TID) { field_int(L, "pid", PL_SIGNED32(s->pid)); field_int(L, "tid", PL_SIGNED32(s->tid)); }
  if (f & PL_S_TIME) field_int(L, "time", s->time);
  if (f & PL_S_ID) field_int(L, "id", s->id);
  if (f & PL_S_STREAM_ID) field_int(L, "stream_id", s->stream_id);
  if (f & PL_S_CPU) field_int(L, "cpu", s->cpu);
  if (f & PL_S_IDENTIFIER) field_int(L, "identifier", s->identifier);
  put(P, K_sample_id);
  if ((f & PL_S_TIME) && !has(P, K_time)) put_int(P, K_time, s->time);
  if ((f & PL_S_CPU) && !has(P, K_cpu)) put_int(P, K_cpu, s->cpu);
  if (!has(P, K_id)) {
    if (f & PL_S_ID) put_int(P, K_id, s->id);
    else if (f & PL_S_IDENTIFIER) put_int(P, K_id, s->identifier);
  }
  if ((f & PL_S_STREAM_ID) && !has(P, K_stream_id)) put_int(P, K_stream_id, s->stream_id);
}

static void clear_stale(pusher *P, pl_keyset *prev) {
  for (int w = 0; w < 2; w++) {
    uint64_t stale = prev->bits[w] & ~P->set.bits[w];
    while (stale) {
      int b = __builtin_ctzll(stale);
      stale &= stale - 1;
      lua_rawgeti(P->L, P->s, w * 64 + b + 1);
      lua_pushnil(P->L);
      lua_rawset(P->L, P->t);
    }
  }
  *prev = P->set;
}

void pl_record_push(lua_State *L, const pl_record *r, int status,
                    const char *why, int t, pl_keyset *keys) {
  pusher P;
  P.L = L;
  P.set.bits[0] = P.set.bits[1] = 0;
  if (t == 0) {
    /* room for every key it will have, `event` too: no rehash while
    ** filling (a sample: the header's three, one a sample_type bit, pid) */
    int n = r->type == PL_REC_SAMPLE && r->layout
              ? 5 + __builtin_popcountll(r->layout->sample_type) : 12;
    lua_createtable(L, 0, n);
    P.t = lua_gettop(L);
  } else {
    P.t = lua_absindex(L, t);
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &strings_anchor);
  P.s = lua_gettop(L);
  if (t == 0) {                   /* a table of ours: it prints readably */
    lua_rawgeti(L, P.s, S_RECORD_MT);
    lua_setmetatable(L, P.t);
  }
  const char *name = pl_record_type_name(r->type);
  put_str(&P, K_type, name ? S_TYPE(r->type) : S_UNKNOWN);
  put_int(&P, K_misc, r->misc);
  put_str(&P, K_cpumode, S_CPUMODE(r->misc & PL_MISC_CPUMODE_MASK));
  if (status != PL_DECODE_OK || !r->known) {
    if (!name) put_int(&P, K_type_id, r->type);
    lua_pushlstring(L, r->avail ? (const char *)r->p : "", r->avail);
    put(&P, K_raw);
    if (status != PL_DECODE_OK || why) {
      if (status == PL_DECODE_BODY && why)
        lua_pushfstring(L, "%s record: %s: %s", name ? name : "unknown",
                        pl_decode_strerror(status), why);
      else if (status != PL_DECODE_OK)
        lua_pushfstring(L, "%s record: %s", name ? name : "unknown",
                        pl_decode_strerror(status));
      else
        lua_pushfstring(L, "%s record: %s", name ? name : "unknown", why);
      put(&P, K_error);
    }
  } else if (r->type == PL_REC_SAMPLE) {
    push_sample(&P, r);
  } else {
    push_other(&P, r);
    push_sid(&P, r);
  }
  if (keys) clear_stale(&P, keys);
  lua_settop(L, P.t);     /* drops the strings table; a fresh table stays */
}

/* ---- sample fields as plain values ---- */

/* the fields samples() can yield, and the sample_type bit each needs */
#define FIELDS(X) \
  X(identifier, PL_S_IDENTIFIER) X(ip, PL_S_IP) X(pid, PL_S_TID) \
  X(tid, PL_S_TID) X(time, PL_S_TIME) X(addr, PL_S_ADDR) X(id, PL_S_ID) \
  X(stream_id, PL_S_STREAM_ID) X(cpu, PL_S_CPU) X(period, PL_S_PERIOD) \
  X(weight, PL_S_WEIGHT_TYPE) X(data_src, PL_S_DATA_SRC) \
  X(transaction, PL_S_TRANSACTION) X(phys_addr, PL_S_PHYS_ADDR) \
  X(cgroup, PL_S_CGROUP) X(data_page_size, PL_S_DATA_PAGE_SIZE) \
  X(code_page_size, PL_S_CODE_PAGE_SIZE) X(raw, PL_S_RAW) X(misc, 0) \
  X(cpumode, 0)
#define F_ENUM(f, bit) F_##f,
enum { FIELDS(F_ENUM) F_COUNT };
const int pl_sample_field_count = F_COUNT;
#define F_NAME(f, bit) #f,
const char *const pl_sample_field_names[F_COUNT + 1] = { FIELDS(F_NAME) NULL };
#define F_BIT(f, bit) bit,
static const uint64_t field_bits[F_COUNT] = { FIELDS(F_BIT) };

int pl_sample_field_in(int f, uint64_t sample_type) {
  if ((sample_type & field_bits[f]) == field_bits[f]) return 1;
  return f == F_id && (sample_type & PL_S_IDENTIFIER);
}

void pl_sample_field_push(lua_State *L, int f, const pl_record *r) {
  const pl_sample *s = &r->u.sample;
  uint64_t v = 0;
  switch (f) {
  case F_identifier: v = s->identifier; break;
  case F_ip: v = s->ip; break;
  case F_pid: v = PL_SIGNED32(s->pid); break;
  case F_tid: v = PL_SIGNED32(s->tid); break;
  case F_time: v = s->time; break;
  case F_addr: v = s->addr; break;
  case F_id: v = (r->layout->sample_type & PL_S_ID) ? s->id : s->identifier; break;
  case F_stream_id: v = s->stream_id; break;
  case F_cpu: v = s->cpu; break;
  case F_period: v = s->period; break;
  case F_weight: v = s->weight; break;
  case F_data_src: v = s->data_src; break;
  case F_transaction: v = s->transaction; break;
  case F_phys_addr: v = s->phys_addr; break;
  case F_cgroup: v = s->cgroup; break;
  case F_data_page_size: v = s->data_page_size; break;
  case F_code_page_size: v = s->code_page_size; break;
  case F_misc: v = r->misc; break;
  case F_raw:
    lua_pushlstring(L, s->raw.n ? (const char *)s->raw.p : "", s->raw.n);
    return;
  case F_cpumode:
    lua_pushstring(L, cpumode_names[r->misc & PL_MISC_CPUMODE_MASK]);
    return;
  }
  lua_pushinteger(L, (lua_Integer)v);
}
