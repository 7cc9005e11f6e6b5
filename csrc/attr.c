/*
** attr.c: struct perf_event_attr <-> Lua table, by the kernel's field names.
**
** Every field of the 6.18 attr is described once in `fields` below; setting
** from a table, reading back and "did you mean" all walk that one table.
** Unions appear under each of their names (sample_freq shares sample_period's
** slot and also sets `freq`, as perf does). Misuse raises.
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"
#include "perf_core.h"

const pl_name pl_sample_type_names[] = {
  {"ip", PERF_SAMPLE_IP}, {"tid", PERF_SAMPLE_TID},
  {"time", PERF_SAMPLE_TIME}, {"addr", PERF_SAMPLE_ADDR},
  {"read", PERF_SAMPLE_READ}, {"callchain", PERF_SAMPLE_CALLCHAIN},
  {"id", PERF_SAMPLE_ID}, {"cpu", PERF_SAMPLE_CPU},
  {"period", PERF_SAMPLE_PERIOD}, {"stream_id", PERF_SAMPLE_STREAM_ID},
  {"raw", PERF_SAMPLE_RAW}, {"branch_stack", PERF_SAMPLE_BRANCH_STACK},
  {"regs_user", PERF_SAMPLE_REGS_USER},
  {"stack_user", PERF_SAMPLE_STACK_USER}, {"weight", PERF_SAMPLE_WEIGHT},
  {"data_src", PERF_SAMPLE_DATA_SRC}, {"identifier", PERF_SAMPLE_IDENTIFIER},
  {"transaction", PERF_SAMPLE_TRANSACTION},
  {"regs_intr", PERF_SAMPLE_REGS_INTR}, {"phys_addr", PERF_SAMPLE_PHYS_ADDR},
  {"aux", PERF_SAMPLE_AUX}, {"cgroup", PERF_SAMPLE_CGROUP},
  {"data_page_size", PL_SAMPLE_DATA_PAGE_SIZE},
  {"code_page_size", PL_SAMPLE_CODE_PAGE_SIZE},
  {"weight_struct", PL_SAMPLE_WEIGHT_STRUCT},
  {NULL, 0}
};

const pl_name pl_read_format_names[] = {
  {"total_time_enabled", PERF_FORMAT_TOTAL_TIME_ENABLED},
  {"total_time_running", PERF_FORMAT_TOTAL_TIME_RUNNING},
  {"id", PERF_FORMAT_ID}, {"group", PERF_FORMAT_GROUP},
  {"lost", PERF_FORMAT_LOST},
  {NULL, 0}
};

const pl_name pl_branch_names[] = {
  {"user", 1u << 0}, {"kernel", 1u << 1}, {"hv", 1u << 2}, {"any", 1u << 3},
  {"any_call", 1u << 4}, {"any_return", 1u << 5}, {"ind_call", 1u << 6},
  {"abort_tx", 1u << 7}, {"in_tx", 1u << 8}, {"no_tx", 1u << 9},
  {"cond", 1u << 10}, {"call_stack", 1u << 11}, {"ind_jump", 1u << 12},
  {"call", 1u << 13}, {"no_flags", 1u << 14}, {"no_cycles", 1u << 15},
  {"type_save", 1u << 16}, {"hw_index", 1u << 17},
  {"priv_save", PL_SAMPLE_BRANCH_PRIV_SAVE},
  {"counters", PL_SAMPLE_BRANCH_COUNTERS},
  {NULL, 0}
};

const pl_name pl_type_names[] = {
  {"hardware", PERF_TYPE_HARDWARE}, {"software", PERF_TYPE_SOFTWARE},
  {"tracepoint", PERF_TYPE_TRACEPOINT}, {"hw_cache", PERF_TYPE_HW_CACHE},
  {"raw", PERF_TYPE_RAW}, {"breakpoint", PERF_TYPE_BREAKPOINT},
  {NULL, 0}
};

/* clockid: the POSIX clocks by their CLOCK_* names, lower-cased */
const pl_name pl_clockid_names[] = {
  {"realtime", 0}, {"monotonic", 1}, {"process_cputime_id", 2},
  {"thread_cputime_id", 3}, {"monotonic_raw", 4}, {"realtime_coarse", 5},
  {"monotonic_coarse", 6}, {"boottime", 7}, {"realtime_alarm", 8},
  {"boottime_alarm", 9}, {"tai", 11},
  {NULL, 0}
};

/* bp_type: HW_BREAKPOINT_R/W/RW/X from linux/hw_breakpoint.h */
const pl_name pl_bp_type_names[] = {
  {"r", 1}, {"w", 2}, {"rw", 3}, {"wr", 3}, {"x", 4}, {"empty", 0},
  {NULL, 0}
};

enum kind {
  K_U64, K_U32, K_S32, K_U16,   /* plain integers at `off` */
  K_FLAG,                       /* `width` bits at `bit` of the flags word */
  K_AUX                         /* 1 bit at `bit` of aux_action */
};

/* What else a field does when set: */
enum extra {
  X_NONE,
  X_FREQ,       /* sample_freq: also sets freq unless given */
  X_WATERMARK,  /* wakeup_watermark: also sets watermark unless given */
  X_CLOCKID,    /* clockid: also sets use_clockid unless given */
  X_STRPTR,     /* kprobe_func, uprobe_path: a string's address is allowed */
  X_REGS        /* sample_regs_user/intr: register names (pl_reg_name) */
};

typedef struct field {
  const char *name;
  unsigned char kind, off, bit, width, extra;
  const pl_name *names;         /* enum or bit-set names, or NULL */
  int bitset;                   /* names are bits (lists allowed) */
} field;

#define OFF(f) offsetof(struct pl_attr, f)
#define INT(n, k, f) {n, k, OFF(f), 0, 0, X_NONE, NULL, 0}
#define FLAG(n, b) {n, K_FLAG, 0, b, 1, X_NONE, NULL, 0}

static const field fields[] = {
  {"type", K_U32, OFF(type), 0, 0, X_NONE, pl_type_names, 0},
  INT("size", K_U32, size),
  INT("config", K_U64, config),
  INT("sample_period", K_U64, sample_period),
  {"sample_freq", K_U64, OFF(sample_period), 0, 0, X_FREQ, NULL, 0},
  {"sample_type", K_U64, OFF(sample_type), 0, 0, X_NONE, pl_sample_type_names, 1},
  {"read_format", K_U64, OFF(read_format), 0, 0, X_NONE, pl_read_format_names, 1},
  FLAG("disabled", PL_FLAG_DISABLED), FLAG("inherit", PL_FLAG_INHERIT),
  FLAG("pinned", PL_FLAG_PINNED), FLAG("exclusive", PL_FLAG_EXCLUSIVE),
  FLAG("exclude_user", PL_FLAG_EXCLUDE_USER),
  FLAG("exclude_kernel", PL_FLAG_EXCLUDE_KERNEL),
  FLAG("exclude_hv", PL_FLAG_EXCLUDE_HV),
  FLAG("exclude_idle", PL_FLAG_EXCLUDE_IDLE), FLAG("mmap", PL_FLAG_MMAP),
  FLAG("comm", PL_FLAG_COMM), FLAG("freq", PL_FLAG_FREQ),
  FLAG("inherit_stat", PL_FLAG_INHERIT_STAT),
  FLAG("enable_on_exec", PL_FLAG_ENABLE_ON_EXEC), FLAG("task", PL_FLAG_TASK),
  FLAG("watermark", PL_FLAG_WATERMARK),
  {"precise_ip", K_FLAG, 0, PL_FLAG_PRECISE_IP, 2, X_NONE, NULL, 0},
  FLAG("mmap_data", PL_FLAG_MMAP_DATA),
  FLAG("sample_id_all", PL_FLAG_SAMPLE_ID_ALL),
  FLAG("exclude_host", PL_FLAG_EXCLUDE_HOST),
  FLAG("exclude_guest", PL_FLAG_EXCLUDE_GUEST),
  FLAG("exclude_callchain_kernel", PL_FLAG_EXCLUDE_CALLCHAIN_KERNEL),
  FLAG("exclude_callchain_user", PL_FLAG_EXCLUDE_CALLCHAIN_USER),
  FLAG("mmap2", PL_FLAG_MMAP2), FLAG("comm_exec", PL_FLAG_COMM_EXEC),
  FLAG("use_clockid", PL_FLAG_USE_CLOCKID),
  FLAG("context_switch", PL_FLAG_CONTEXT_SWITCH),
  FLAG("write_backward", PL_FLAG_WRITE_BACKWARD),
  FLAG("namespaces", PL_FLAG_NAMESPACES), FLAG("ksymbol", PL_FLAG_KSYMBOL),
  FLAG("bpf_event", PL_FLAG_BPF_EVENT), FLAG("aux_output", PL_FLAG_AUX_OUTPUT),
  FLAG("cgroup", PL_FLAG_CGROUP), FLAG("text_poke", PL_FLAG_TEXT_POKE),
  FLAG("build_id", PL_FLAG_BUILD_ID),
  FLAG("inherit_thread", PL_FLAG_INHERIT_THREAD),
  FLAG("remove_on_exec", PL_FLAG_REMOVE_ON_EXEC),
  FLAG("sigtrap", PL_FLAG_SIGTRAP),
  INT("wakeup_events", K_U32, wakeup_events),
  {"wakeup_watermark", K_U32, OFF(wakeup_events), 0, 0, X_WATERMARK, NULL, 0},
  {"bp_type", K_U32, OFF(bp_type), 0, 0, X_NONE, pl_bp_type_names, 0},
  INT("config1", K_U64, config1),
  INT("bp_addr", K_U64, config1),
  {"kprobe_func", K_U64, OFF(config1), 0, 0, X_STRPTR, NULL, 0},
  {"uprobe_path", K_U64, OFF(config1), 0, 0, X_STRPTR, NULL, 0},
  INT("config2", K_U64, config2),
  INT("bp_len", K_U64, config2),
  INT("kprobe_addr", K_U64, config2),
  INT("probe_offset", K_U64, config2),
  {"branch_sample_type", K_U64, OFF(branch_sample_type), 0, 0, X_NONE, pl_branch_names, 1},
  {"sample_regs_user", K_U64, OFF(sample_regs_user), 0, 0, X_REGS, NULL, 0},
  INT("sample_stack_user", K_U32, sample_stack_user),
  {"clockid", K_S32, OFF(clockid), 0, 0, X_CLOCKID, pl_clockid_names, 0},
  {"sample_regs_intr", K_U64, OFF(sample_regs_intr), 0, 0, X_REGS, NULL, 0},
  INT("aux_watermark", K_U32, aux_watermark),
  INT("sample_max_stack", K_U16, sample_max_stack),
  INT("aux_sample_size", K_U32, aux_sample_size),
  INT("aux_action", K_U32, aux_action),
  {"aux_start_paused", K_AUX, 0, 0, 1, X_NONE, NULL, 0},
  {"aux_pause", K_AUX, 0, 1, 1, X_NONE, NULL, 0},
  {"aux_resume", K_AUX, 0, 2, 1, X_NONE, NULL, 0},
  INT("sig_data", K_U64, sig_data),
  INT("config3", K_U64, config3),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* ---- names ---- */

/* Raises "<what>: unknown name 'x' (did you mean 'y'?)" for a name table. */
static int unknown_name(lua_State *L, const char *what, const char *s,
                        const pl_name *names) {
  const char *cands[64];
  size_t n = 0;
  while (names[n].name && n < 64) { cands[n] = names[n].name; n++; }
  return luaL_error(L, "%s: unknown name '%s'%s", what, s, pl_did_you_mean(L, s, cands, n));
}

static int lookup(const pl_name *names, const char *s, uint64_t *v) {
  for (; names->name; names++)
    if (strcmp(names->name, s) == 0) { *v = names->value; return 1; }
  return 0;
}

static uint64_t checkint(lua_State *L, int idx, const char *what) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, idx, &isnum);
  if (!isnum) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      luaL_error(L, "%s: number has no integer representation", what);
    luaL_error(L, "%s: integer expected, got %s", what, luaL_typename(L, idx));
  }
  return (uint64_t)v;
}

/* The sample_regs mask of one register name: "ax", "r15", "xmm3" (both
** halves, as perf's --intr-regs sets them), "xmm3_hi". Raises on others. */
static uint64_t reg_mask(lua_State *L, const char *s, const char *what) {
  const char *cands[64];
  size_t n = 0;
  for (unsigned bit = 0; bit < 64; bit++) {
    const char *name = pl_reg_name(bit);
    if (!name) continue;
    if (strcmp(name, s) == 0)
      return (bit >= 32 && !(bit & 1)) ? 3ull << bit : 1ull << bit;
    cands[n++] = name;
  }
  if (n == 0)
    luaL_error(L, "%s: register names are known on x86 only: give a mask", what);
  luaL_error(L, "%s: unknown register '%s'%s", what, s, pl_did_you_mean(L, s, cands, n));
  return 0;
}

/* A register mask: an integer, one name, or a list of names and integers. */
static uint64_t check_regs(lua_State *L, int idx, const char *what) {
  uint64_t bits = 0;
  if (lua_type(L, idx) == LUA_TSTRING) return reg_mask(L, lua_tostring(L, idx), what);
  if (lua_type(L, idx) != LUA_TTABLE) return checkint(L, idx, what);
  for (lua_Integer i = 1, n = (lua_Integer)lua_rawlen(L, idx); i <= n; i++) {
    lua_rawgeti(L, idx, i);
    bits |= lua_type(L, -1) == LUA_TSTRING ? reg_mask(L, lua_tostring(L, -1), what)
                                           : checkint(L, -1, what);
    lua_pop(L, 1);
  }
  return bits;
}

uint64_t pl_checkenum(lua_State *L, int idx, const pl_name *names,
                      const char *what) {
  uint64_t v = 0;
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    if (!lookup(names, s, &v)) unknown_name(L, what, s, names);
    return v;
  }
  return checkint(L, idx, what);
}

uint64_t pl_checkbits(lua_State *L, int idx, const pl_name *names,
                      const char *what) {
  uint64_t bits = 0, v = 0;
  lua_Integer i, n;
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
    return pl_checkenum(L, idx, names, what);
  case LUA_TTABLE:
    n = (lua_Integer)lua_rawlen(L, idx);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      if (lua_type(L, -1) == LUA_TSTRING) {
        const char *s = lua_tostring(L, -1);
        if (!lookup(names, s, &v)) unknown_name(L, what, s, names);
      } else {
        v = checkint(L, -1, what);
      }
      bits |= v;
      lua_pop(L, 1);
    }
    return bits;
  default:
    return checkint(L, idx, what);
  }
}

/* ---- fields ---- */

static const field *find_field(const char *name) {
  size_t i;
  for (i = 0; i < NFIELDS; i++)
    if (strcmp(fields[i].name, name) == 0) return &fields[i];
  return NULL;
}

static int unknown_field(lua_State *L, const char *key) {
  const char *cands[NFIELDS];
  size_t i;
  for (i = 0; i < NFIELDS; i++) cands[i] = fields[i].name;
  return pl_unknown_key(L, "unknown attr field", key, cands, NFIELDS);
}

static void store(void *p, unsigned size, uint64_t v) {
  switch (size) {
  case 8: memcpy(p, &v, 8); break;
  case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
  case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
  }
}

/* The value at the top of the stack, for field f, as an integer; raises on
** wrong types and out-of-range values. */
static uint64_t field_value(lua_State *L, const field *f) {
  char what[64];
  uint64_t v;
  int64_t sv;
  snprintf(what, sizeof what, "attr field '%s'", f->name);
  if (f->kind == K_FLAG || f->kind == K_AUX) {
    if (lua_isboolean(L, -1)) return (uint64_t)lua_toboolean(L, -1);
    v = checkint(L, -1, what);
    if (v >= (1ull << f->width))
      luaL_error(L, "%s: %d-bit value out of range (0..%d)", what, f->width,
                 (1 << f->width) - 1);
    return v;
  }
  if (f->extra == X_REGS) return check_regs(L, lua_gettop(L), what);
  if (f->extra == X_STRPTR && lua_type(L, -1) == LUA_TSTRING)
    return (uint64_t)(uintptr_t)lua_tostring(L, -1);
  if (f->kind == K_U32 && f->names == pl_type_names &&
      lua_type(L, -1) == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    if (lookup(pl_type_names, s, &v)) return v;
    lua_pushfstring(L, "/sys/bus/event_source/devices/%s/type", s);
    {
      FILE *fp = strchr(s, '/') ? NULL : fopen(lua_tostring(L, -1), "re");
      unsigned long t;
      int ok = fp && fscanf(fp, "%lu", &t) == 1;
      if (fp) fclose(fp);
      lua_pop(L, 1);
      if (ok) return t;
    }
    return (uint64_t)unknown_name(L, "attr field 'type' (not a PMU in "
                                  "/sys/bus/event_source/devices either)", s,
                                  pl_type_names);
  }
  if (f->names && f->bitset) v = pl_checkbits(L, -1, f->names, what);
  else if (f->names) v = pl_checkenum(L, -1, f->names, what);
  else if (lua_type(L, -1) == LUA_TSTRING && strcmp(f->name, "config") == 0)
    return (uint64_t)luaL_error(L, "attr field 'config': names are resolved "
                                "by perf.open; perf.core takes an integer");
  else v = checkint(L, -1, what);
  switch (f->kind) {
  case K_U32:
    if (v > 0xffffffffull)
      luaL_error(L, "%s: out of range (0..4294967295)", what);
    break;
  case K_U16:
    if (v > 0xffffull) luaL_error(L, "%s: out of range (0..65535)", what);
    break;
  case K_S32:
    sv = (int64_t)v;
    if (sv < INT32_MIN || sv > INT32_MAX)
      luaL_error(L, "%s: out of range for a 32-bit signed field", what);
    break;
  default:
    break;
  }
  return v;
}

static void set_field(struct pl_attr *a, const field *f, uint64_t v) {
  unsigned char *base = (unsigned char *)a;
  uint64_t mask;
  switch (f->kind) {
  case K_U64: store(base + f->off, 8, v); break;
  case K_U32: case K_S32: store(base + f->off, 4, v); break;
  case K_U16: store(base + f->off, 2, v); break;
  case K_FLAG:
    mask = ((1ull << f->width) - 1) << f->bit;
    a->flags = (a->flags & ~mask) | ((v << f->bit) & mask);
    break;
  case K_AUX:
    a->aux_action = (a->aux_action & ~(1u << f->bit)) |
                    ((uint32_t)(v & 1) << f->bit);
    break;
  }
}

/* Applies every key of the table at idx to *a. Fields named by the table
** are noted in `given` (by index in `fields`) so the implied flags of
** sample_freq, wakeup_watermark and clockid yield to an explicit setting. */
static void apply_table(lua_State *L, int idx, struct pl_attr *a) {
  unsigned char given[NFIELDS];
  int implied[3] = {0, 0, 0};      /* freq, watermark, use_clockid */
  int period = 0, frequency = 0;
  size_t i;
  memset(given, 0, sizeof given);
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const field *f;
    if (lua_type(L, -2) != LUA_TSTRING) {
      if (lua_type(L, -2) == LUA_TNUMBER)
        luaL_error(L, "attr table: positional entries (event strings) are "
                   "handled by perf.open, not perf.core");
      luaL_error(L, "attr table: keys must be field names, got %s",
                 luaL_typename(L, -2));
    }
    f = find_field(lua_tostring(L, -2));
    if (!f) unknown_field(L, lua_tostring(L, -2));
    set_field(a, f, field_value(L, f));
    given[f - fields] = 1;
    if (f->extra == X_FREQ) { implied[0] = 1; frequency = 1; }
    if (f->extra == X_WATERMARK) implied[1] = 1;
    if (f->extra == X_CLOCKID) implied[2] = 1;
    if (strcmp(f->name, "sample_period") == 0) period = 1;
    lua_pop(L, 1);
  }
  if (period && frequency)
    luaL_error(L, "attr: sample_period and sample_freq share one field; give one");
  for (i = 0; i < NFIELDS; i++) {
    const field *f = &fields[i];
    if (f->kind != K_FLAG || given[i]) continue;
    if ((f->bit == PL_FLAG_FREQ && implied[0]) ||
        (f->bit == PL_FLAG_WATERMARK && implied[1]) ||
        (f->bit == PL_FLAG_USE_CLOCKID && implied[2]))
      set_field(a, f, 1);
  }
}

void pl_attr_from_table(lua_State *L, int idx, struct pl_attr *a) {
  memset(a, 0, sizeof *a);
  apply_table(L, idx, a);
}

void pl_attr_update(lua_State *L, int idx, struct pl_attr *a) {
  apply_table(L, idx, a);
}

/* ---- reading back ---- */

static uint64_t get_field(const struct pl_attr *a, const field *f) {
  const unsigned char *base = (const unsigned char *)a;
  uint64_t v8; uint32_t v4; uint16_t v2;
  switch (f->kind) {
  case K_U64: memcpy(&v8, base + f->off, 8); return v8;
  case K_U32: memcpy(&v4, base + f->off, 4); return v4;
  case K_S32: memcpy(&v4, base + f->off, 4); return (uint64_t)(int64_t)(int32_t)v4;
  case K_U16: memcpy(&v2, base + f->off, 2); return v2;
  case K_FLAG: return (a->flags >> f->bit) & ((1ull << f->width) - 1);
  case K_AUX: return (a->aux_action >> f->bit) & 1u;
  }
  return 0;
}

/* Which name of a union to show: the one the attr's flags and type say is
** in use, so the table reads like what was asked for. */
static int shown(const struct pl_attr *a, const field *f) {
  int bp = a->type == PERF_TYPE_BREAKPOINT;
  const char *n = f->name;
  if (!strcmp(n, "sample_period")) return !PL_HAS(a, PL_FLAG_FREQ);
  if (!strcmp(n, "sample_freq")) return PL_HAS(a, PL_FLAG_FREQ);
  if (!strcmp(n, "wakeup_events")) return !PL_HAS(a, PL_FLAG_WATERMARK);
  if (!strcmp(n, "wakeup_watermark")) return PL_HAS(a, PL_FLAG_WATERMARK);
  if (!strcmp(n, "config1") || !strcmp(n, "config2")) return !bp;
  if (!strcmp(n, "bp_addr") || !strcmp(n, "bp_len")) return bp;
  if (!strcmp(n, "kprobe_func") || !strcmp(n, "uprobe_path") ||
      !strcmp(n, "kprobe_addr") || !strcmp(n, "probe_offset") ||
      !strcmp(n, "aux_action"))
    return 0;
  return 1;
}

void pl_attr_push(lua_State *L, const struct pl_attr *a) {
  size_t i;
  lua_createtable(L, 0, 16);
  for (i = 0; i < NFIELDS; i++) {
    const field *f = &fields[i];
    uint64_t v = get_field(a, f);
    int always = !strcmp(f->name, "type") || !strcmp(f->name, "config") ||
                 !strcmp(f->name, "size") || !strcmp(f->name, "disabled");
    if (!shown(a, f) || (v == 0 && !always)) continue;
    if ((f->kind == K_FLAG || f->kind == K_AUX) && f->width == 1)
      lua_pushboolean(L, (int)v);
    else
      lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, f->name);
  }
  pl_show(L, -1, "perf.attr");
}

/* perf.core.attr_fields(): every field name, in the kernel's order. */
static int l_attr_fields(lua_State *L) {
  size_t i;
  lua_createtable(L, (int)NFIELDS, 0);
  for (i = 0; i < NFIELDS; i++) {
    lua_pushstring(L, fields[i].name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The field named by argument 1, or raises as an attr table's unknown key. */
static const field *check_field(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const field *f = find_field(name);
  if (!f) unknown_field(L, name);
  return f;
}

/* perf.core.attr_names(field) -> the names field takes, in the kernel's
** order, each also a key to its value: { "ip", "tid", ..., ip = 1, ... } */
static int l_attr_names(lua_State *L) {
  const field *f = check_field(L);
  const pl_name *t;
  lua_Integer i = 0;
  if (!f->names) return luaL_error(L, "attr field '%s' takes no names", f->name);
  lua_newtable(L);
  for (t = f->names; t->name; t++) {
    lua_pushstring(L, t->name);
    lua_rawseti(L, -2, ++i);
    lua_pushinteger(L, (lua_Integer)t->value);
    lua_setfield(L, -2, t->name);
  }
  return 1;
}

/* perf.core.attr_value(field, v) -> the integer field holds for v (a name,
** a list of names, an integer), raising as open does on a bad value. */
static int l_attr_value(lua_State *L) {
  const field *f = check_field(L);
  luaL_checkany(L, 2);
  lua_settop(L, 2);
  lua_pushinteger(L, (lua_Integer)field_value(L, f));
  return 1;
}

/* perf.core.attr(t) -> t as perf.core.open would set it, read back */
static int l_attr(lua_State *L) {
  struct pl_attr a;
  pl_attr_from_table(L, 1, &a);
  if (a.size == 0) a.size = sizeof a;
  pl_attr_push(L, &a);
  return 1;
}

/* perf.core.attr_bytes(t) -> the struct perf_event_attr bytes for t */
static int l_attr_bytes(lua_State *L) {
  struct pl_attr a;
  pl_attr_from_table(L, 1, &a);
  if (a.size == 0) a.size = sizeof a;
  lua_pushlstring(L, (const char *)&a, sizeof a);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"attr", l_attr}, {"attr_bytes", l_attr_bytes}, {"attr_fields", l_attr_fields},
  {"attr_names", l_attr_names}, {"attr_value", l_attr_value},
  {NULL, NULL}
};

void pl_open_attr(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
}
