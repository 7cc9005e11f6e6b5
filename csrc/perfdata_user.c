/*
** perfdata_user.c: the records perf adds to a perf.data file itself (types
** from 64, enum perf_user_event_type of tools/lib/perf/include/perf/event.h,
** laid out as tools/lib/perf/include/perf/event.h's structs), as Lua tables.
** Numbers follow the reader's rule: pid, tid and cpu are signed (-1 for
** "any"), other u64 fields are Lua integers of the same 64 bits.
*/
#include <string.h>

#include "perfdata_file.h"

#define ATTR_SIZE_VER0 64                     /* PERF_ATTR_SIZE_VER0 */

static const char *const user_names[U_END - U_HEADER_ATTR] = {
  "header_attr", "header_event_type", "header_tracing_data",
  "header_build_id", "finished_round", "id_index", "auxtrace_info",
  "auxtrace", "auxtrace_error", "thread_map", "cpu_map", "stat_config",
  "stat", "stat_round", "event_update", "time_conv", "header_feature",
  "compressed", "finished_init", "compressed2",
};

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const unsigned char *p, size_t max) {
  size_t n = strnlen((const char *)p, max);
  lua_pushlstring(L, (const char *)p, n);
  lua_setfield(L, -2, k);
}

static void set_hex(lua_State *L, const char *k, const unsigned char *p, size_t n) {
  luaL_Buffer b;
  static const char digits[] = "0123456789abcdef";
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < n; i++) {
    luaL_addchar(&b, digits[p[i] >> 4]);
    luaL_addchar(&b, digits[p[i] & 15]);
  }
  luaL_pushresult(&b);
  lua_setfield(L, -2, k);
}

/* The fields of each layout, set in the table on top from the n bytes at b
** after the header: 1, or 0 when the record is too short for them (the
** caller then sets `raw`). */

static int user_attr(lua_State *L, const unsigned char *b, size_t n) {
  uint32_t asize = n >= 8 ? pl_u32at(b + 4) : 0;
  if (asize == 0) asize = ATTR_SIZE_VER0;
  if (n < ATTR_SIZE_VER0 || asize > n) return 0;
  struct pl_attr a;
  memset(&a, 0, sizeof a);
  memcpy(&a, b, asize < sizeof a ? asize : sizeof a);
  pl_attr_push(L, &a);
  lua_setfield(L, -2, "attr");
  lua_createtable(L, (int)((n - asize) / 8), 0);
  for (size_t i = 0; i < (n - asize) / 8; i++) {
    lua_pushinteger(L, (lua_Integer)pl_u64at(b + asize + 8 * i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "ids");
  return 1;
}

static int user_build_id(lua_State *L, const unsigned char *b, size_t n, uint16_t misc) {
  /* pid, build_id[24] (data[20], size, 3 reserved), filename */
  if (n < 28) return 0;
  set_int(L, "pid", PL_SIGNED32(pl_u32at(b)));
  set_hex(L, "build_id", b + 4, (misc & (1u << 15)) && b[24] <= 20 ? b[24] : 20);
  set_str(L, "filename", b + 28, n - 28);
  return 1;
}

static int user_id_index(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 8) return 0;
  uint64_t nr = pl_u64at(b);
  if (nr > (n - 8) / 32) return 0;
  lua_createtable(L, (int)nr, 0);
  for (uint64_t i = 0; i < nr; i++) {
    const unsigned char *e = b + 8 + 32 * i;
    lua_createtable(L, 0, 4);
    set_int(L, "id", pl_u64at(e));
    set_int(L, "idx", pl_u64at(e + 8));
    set_int(L, "cpu", pl_u64at(e + 16));
    set_int(L, "tid", pl_u64at(e + 24));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "entries");
  return 1;
}

static int user_auxtrace(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 40) return 0;
  set_int(L, "size", pl_u64at(b));
  set_int(L, "aux_offset", pl_u64at(b + 8));
  set_int(L, "reference", pl_u64at(b + 16));
  set_int(L, "idx", pl_u32at(b + 24));
  set_int(L, "tid", PL_SIGNED32(pl_u32at(b + 28)));
  set_int(L, "cpu", PL_SIGNED32(pl_u32at(b + 32)));
  return 1;
}

static int user_auxtrace_error(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 32) return 0;
  set_int(L, "error_type", pl_u32at(b));
  set_int(L, "code", pl_u32at(b + 4));
  set_int(L, "cpu", PL_SIGNED32(pl_u32at(b + 8)));
  set_int(L, "pid", PL_SIGNED32(pl_u32at(b + 12)));
  set_int(L, "tid", PL_SIGNED32(pl_u32at(b + 16)));
  set_int(L, "ip", pl_u64at(b + 24));
  if (n > 32) set_str(L, "msg", b + 32, n - 32 < 64 ? n - 32 : 64);
  return 1;
}

static int user_thread_map(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 8) return 0;
  uint64_t nr = pl_u64at(b);
  if (nr > (n - 8) / 24) return 0;
  lua_createtable(L, (int)nr, 0);
  for (uint64_t i = 0; i < nr; i++) {
    const unsigned char *e = b + 8 + 24 * i;
    lua_createtable(L, 0, 2);
    set_int(L, "pid", pl_u64at(e));
    set_str(L, "comm", e + 8, 16);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "threads");
  return 1;
}

static int user_cpu_map(lua_State *L, const unsigned char *b, size_t n) {
  /* perf_record_cpu_map_data: u16 type; then CPUS: u16 nr, u16 cpu[nr];
  ** RANGE_CPUS: u8 any_cpu, u8 pad, u16 start, u16 end */
  if (n < 2) return 0;
  uint16_t kind = pl_u16at(b);
  if (kind == 0 && n >= 4 && pl_u16at(b + 2) <= (n - 4) / 2) {
    uint16_t nr = pl_u16at(b + 2);
    lua_createtable(L, nr, 0);
    for (uint16_t i = 0; i < nr; i++) {
      lua_pushinteger(L, pl_u16at(b + 4 + 2 * i));
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "cpus");
    return 1;
  }
  if (kind == 2 && n >= 8 && pl_u16at(b + 6) >= pl_u16at(b + 4)) {
    uint16_t lo = pl_u16at(b + 4), hi = pl_u16at(b + 6);
    lua_createtable(L, hi - lo + 1 + (b[2] != 0), 0);
    int k = 0;
    if (b[2]) { lua_pushinteger(L, -1); lua_rawseti(L, -2, ++k); }
    for (int c = lo; c <= hi; c++) {
      lua_pushinteger(L, c);
      lua_rawseti(L, -2, ++k);
    }
    lua_setfield(L, -2, "cpus");
    return 1;
  }
  return 0;
}

static int user_time_conv(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 24) return 0;
  set_int(L, "time_shift", pl_u64at(b));
  set_int(L, "time_mult", pl_u64at(b + 8));
  set_int(L, "time_zero", pl_u64at(b + 16));
  if (n >= 48) {
    set_int(L, "time_cycles", pl_u64at(b + 24));
    set_int(L, "time_mask", pl_u64at(b + 32));
    lua_pushboolean(L, b[40]);
    lua_setfield(L, -2, "cap_user_time_zero");
    lua_pushboolean(L, b[41]);
    lua_setfield(L, -2, "cap_user_time_short");
  }
  return 1;
}

/* `k` (a u32 or a u64 at b), then `rest` = the bytes after the first 8 */
static int user_blob(lua_State *L, const unsigned char *b, size_t n, const char *k,
                     int u32, const char *rest) {
  if (n < 8) return 0;
  set_int(L, k, u32 ? pl_u32at(b) : pl_u64at(b));
  lua_pushlstring(L, (const char *)b + 8, n - 8);
  lua_setfield(L, -2, rest);
  return 1;
}

static int user_event_update(lua_State *L, const unsigned char *b, size_t n) {
  if (n < 16) return 0;
  set_int(L, "update_type", pl_u64at(b));
  set_int(L, "id", pl_u64at(b + 8));
  if (pl_u64at(b) == 2) set_str(L, "name", b + 16, n - 16);   /* NAME */
  else {
    lua_pushlstring(L, (const char *)b + 16, n - 16);
    lua_setfield(L, -2, "data");
  }
  return 1;
}

/* Pushes a user record as a fresh table: its fixed fields where the
** layout is plain, else `raw` (the bytes after the header). Every read is
** inside [p, p + size). */
void pl_data_push_user(lua_State *L, const unsigned char *p, size_t size, size_t off) {
  uint32_t type = pl_u32at(p);
  uint16_t misc = pl_u16at(p + 4);
  lua_createtable(L, 0, 6);
  if (type < U_END) lua_pushstring(L, user_names[type - U_HEADER_ATTR]);
  else lua_pushliteral(L, "unknown");
  lua_setfield(L, -2, "type");
  if (type >= U_END) set_int(L, "type_id", type);
  set_int(L, "misc", misc);
  set_int(L, "offset", off);
  const unsigned char *b = p + 8;
  size_t n = size - 8;
  int done = 0;
  switch (type) {
  case U_FINISHED_ROUND: case U_FINISHED_INIT: done = 1; break;
  case U_HEADER_ATTR: done = user_attr(L, b, n); break;
  case U_HEADER_TRACING_DATA:
    if ((done = n >= 4)) set_int(L, "size", pl_u32at(b));
    break;
  case U_HEADER_BUILD_ID: done = user_build_id(L, b, n, misc); break;
  case U_ID_INDEX: done = user_id_index(L, b, n); break;
  case U_AUXTRACE_INFO: done = user_blob(L, b, n, "auxtrace_type", 1, "priv"); break;
  case U_AUXTRACE: done = user_auxtrace(L, b, n); break;
  case U_AUXTRACE_ERROR: done = user_auxtrace_error(L, b, n); break;
  case U_THREAD_MAP: done = user_thread_map(L, b, n); break;
  case U_CPU_MAP: done = user_cpu_map(L, b, n); break;
  case U_TIME_CONV: done = user_time_conv(L, b, n); break;
  case U_HEADER_FEATURE: done = user_blob(L, b, n, "feature", 0, "data"); break;
  case U_EVENT_UPDATE: done = user_event_update(L, b, n); break;
  default: break;
  }
  if (done) return;
  lua_pushlstring(L, (const char *)b, n);
  lua_setfield(L, -2, "raw");
}
