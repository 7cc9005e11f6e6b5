/*
** decode_lua.c: the decoder for bytes that do not come from a ring.
**
**   perf.core.decode(bytes, layout...) -> record, size
**   perf.core.stream(bytes, layout...) -> perf.ring over a copy of bytes
**
** A layout is a perf.event (its attr and id) or a table with the attr
** fields that shape records: sample_type, read_format, branch_sample_type
** (names or integers, as for perf.open), sample_regs_user,
** sample_regs_intr (integers), sample_id_all (boolean) and id (integer).
** With several layouts, records are told apart by id as in a shared ring.
*/
#include <string.h>

#include "ring.h"

#define MAX_LAYOUTS 64

static const char *const layout_keys[] = {
  "sample_type", "read_format", "branch_sample_type", "sample_regs_user",
  "sample_regs_intr", "sample_id_all", "id",
};
#define NKEYS (sizeof layout_keys / sizeof *layout_keys)

static void check_keys(lua_State *L, int idx) {
  pl_check_keys(L, idx, layout_keys, NKEYS, "unknown layout field");
}

static uint64_t opt_int(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  uint64_t v = 0;
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1))
      luaL_error(L, "layout: %s must be an integer", k);
    v = (uint64_t)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static uint64_t opt_bits(lua_State *L, int idx, const char *k,
                         const pl_name *names) {
  lua_getfield(L, idx, k);
  uint64_t v = lua_isnil(L, -1) ? 0 : pl_checkbits(L, -1, names, k);
  lua_pop(L, 1);
  return v;
}

static void check_layout(lua_State *L, int idx, pl_layout *l) {
  memset(l, 0, sizeof *l);
  pl_event *ev = pl_test_event(L, idx);
  if (ev) {
    pl_layout_from_event(ev, l);
    return;
  }
  luaL_argexpected(L, lua_istable(L, idx), idx, "layout table or perf.event");
  check_keys(L, idx);
  l->sample_type = opt_bits(L, idx, "sample_type", pl_sample_type_names);
  l->read_format = opt_bits(L, idx, "read_format", pl_read_format_names);
  l->branch_sample_type = opt_bits(L, idx, "branch_sample_type", pl_branch_names);
  l->regs_user = opt_int(L, idx, "sample_regs_user");
  l->regs_intr = opt_int(L, idx, "sample_regs_intr");
  l->id = opt_int(L, idx, "id");
  lua_getfield(L, idx, "sample_id_all");
  l->sample_id_all = lua_toboolean(L, -1);
  lua_pop(L, 1);
}

static size_t check_layouts(lua_State *L, int first, pl_layout *v) {
  int top = lua_gettop(L);
  if (top < first) luaL_argerror(L, first, "layout expected");
  if (top - first + 1 > MAX_LAYOUTS) luaL_error(L, "at most %d layouts", MAX_LAYOUTS);
  size_t n = 0;
  for (int i = first; i <= top; i++) check_layout(L, i, &v[n++]);
  return n;
}

/* perf.core.decode(bytes, layout...) -> record table, header.size */
static int l_decode(lua_State *L) {
  size_t len;
  const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &len);
  pl_layout v[MAX_LAYOUTS];
  size_t n = check_layouts(L, 2, v);
  pl_layouts set;
  const char *why;
  if (pl_layouts_init(&set, v, n, &why) != 0) return luaL_error(L, "%s", why);
  const char *lwhy = NULL, *dwhy = NULL;
  const pl_layout *lay = len >= 8 ? pl_layouts_find(&set, p, len, &lwhy) : NULL;
  pl_record rec;
  int status = pl_decode(p, len, lay, &rec, &dwhy);
  pl_record_push(L, &rec, status, dwhy ? dwhy : lwhy, 0, NULL);
  lua_pushinteger(L, rec.size);
  return 2;
}

/* perf.core.stream(bytes, layout...) -> perf.ring */
static int l_stream(lua_State *L) {
  luaL_checkstring(L, 1);
  pl_layout v[MAX_LAYOUTS];
  size_t n = check_layouts(L, 2, v);
  return pl_ring_from_bytes(L, 1, v, n);
}

static const luaL_Reg functions[] = {
  { "decode", l_decode },
  { "stream", l_stream },
  { NULL, NULL }
};

void pl_open_decode(lua_State *L) {
  luaL_setfuncs(L, functions, 0);
}
