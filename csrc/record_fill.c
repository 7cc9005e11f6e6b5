/*
** record_fill.c: samples made into Lua tables by Lua, for f:records([t]).
**
** A sample that follows one of the same event with the same header misc
** finds every key it needs in the reused table already: only the values
** change. Stores the VM makes with constant keys cost about half of the
** same stores made through the C API (see group_read.c), so such a
** sample's values are returned by the C step and stored by a small Lua
** function made for the file, its keys written in as constants:
**
**   local step, t, N = ...
**   return function()
**     local k, v1, v2, v3 = step()
**     if k == 1 then                -- a sample of the file's first event
**       t.ip = v1 t.time = v2 t.raw = v3 t.event = N[1]
**       return t
**     end
**     return k                      -- t filled in C, or nil at the end
**   end
**
** f:records() without a table makes each such sample with one table
** constructor (its misc first among the values):
**
**       return setmetatable({ type = "sample", misc = m,
**         cpumode = CM[(m & 7) + 1], exact_ip = m & 16384 ~= 0 or nil,
**         ip = v1, time = v2, raw = v3, event = N[1] }, MT)
**
** Only samples whose fields are all plain values take that path (no
** callchain, read values, registers or stacks: tables of their own); the
** keys and their order are push_sample's (record_push.c).
*/
#include <string.h>

#include "lauxlib.h"

#include "record_push.h"

#define FILL_BITS (PL_S_IDENTIFIER | PL_S_IP | PL_S_TID | PL_S_TIME | PL_S_ADDR | \
                   PL_S_ID | PL_S_STREAM_ID | PL_S_CPU | PL_S_PERIOD | PL_S_RAW)

int pl_fill_fits(uint64_t sample_type) {
  return (sample_type & ~(uint64_t)FILL_BITS) == 0;
}

/* The keys a sample of sample_type st has beside type, misc, cpumode and
** event, in the order pl_fill_push pushes their values; the count. */
static int fill_keys(uint64_t st, const char *keys[PL_FILL_MAX]) {
  int n = 0;
  if (st & PL_S_IDENTIFIER) keys[n++] = "identifier";
  if (st & PL_S_IP) keys[n++] = "ip";
  if (st & PL_S_TID) { keys[n++] = "pid"; keys[n++] = "tid"; }
  if (st & PL_S_TIME) keys[n++] = "time";
  if (st & PL_S_ADDR) keys[n++] = "addr";
  if (st & (PL_S_ID | PL_S_IDENTIFIER)) keys[n++] = "id";
  if (st & PL_S_STREAM_ID) keys[n++] = "stream_id";
  if (st & PL_S_CPU) keys[n++] = "cpu";
  if (st & PL_S_PERIOD) keys[n++] = "period";
  if (st & PL_S_RAW) keys[n++] = "raw";
  return n;
}

int pl_fill_push(lua_State *L, const pl_record *r) {
  const pl_sample *s = &r->u.sample;
  uint64_t st = r->layout->sample_type;
  int n = 0;
  luaL_checkstack(L, PL_FILL_MAX, NULL);
#define V(x) (lua_pushinteger(L, (lua_Integer)(x)), n++)
  if (st & PL_S_IDENTIFIER) V(s->identifier);
  if (st & PL_S_IP) V(s->ip);
  if (st & PL_S_TID) { V(PL_SIGNED32(s->pid)); V(PL_SIGNED32(s->tid)); }
  if (st & PL_S_TIME) V(s->time);
  if (st & PL_S_ADDR) V(s->addr);
  if (st & PL_S_ID) V(s->id);
  else if (st & PL_S_IDENTIFIER) V(s->identifier);   /* the same id */
  if (st & PL_S_STREAM_ID) V(s->stream_id);
  if (st & PL_S_CPU) V(s->cpu);
  if (st & PL_S_PERIOD) V(s->period);
#undef V
  if (st & PL_S_RAW) {
    lua_pushlstring(L, s->raw.n ? (const char *)s->raw.p : "", s->raw.n);
    n++;
  }
  return n;
}

/* One event's part of the filler: its stores into t, or its constructor. */
static void add_event(lua_State *L, luaL_Buffer *b, int a, uint64_t st, int named, int fresh) {
  const char *keys[PL_FILL_MAX];
  int nk = fill_keys(st, keys);
  lua_pushfstring(L, "  if k == %d then\n", a + 1);
  luaL_addvalue(b);
  if (fresh)
    luaL_addstring(b, "    return setmetatable({ type = \"sample\", misc = m, "
                      "cpumode = CM[(m & 7) + 1], exact_ip = m & 16384 ~= 0 or nil,\n");
  for (int i = 0; i < nk; i++) {
    lua_pushfstring(L, fresh ? "      %s = v%d,\n" : "    t.%s = v%d\n", keys[i], i + 1);
    luaL_addvalue(b);
  }
  if (named) lua_pushfstring(L, fresh ? "      event = N[%d] }, MT)\n" : "    t.event = N[%d]\n", a + 1);
  else lua_pushstring(L, fresh ? "      event = nil }, MT)\n" : "    t.event = nil\n");
  luaL_addvalue(b);
  luaL_addstring(b, fresh ? "  end\n" : "    return t\n  end\n");
}

/* setmetatable(t, mt) -> t, whatever the program did to the global */
static int set_metatable(lua_State *L) {
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

_Static_assert(PL_MISC_EXACT_IP == 16384 && PL_MISC_CPUMODE_MASK == 7,
               "the fresh filler's misc bits");

int pl_fill_function(lua_State *L, const uint64_t *sample_types, int n, int named, int fresh) {
  int step = lua_gettop(L) - 2;                 /* step, t or MT, names */
  lua_createtable(L, 8, 0);                     /* CM: the cpumode names */
  for (int m = 0; m < 8; m++) {
    lua_pushstring(L, pl_cpumode_name((unsigned)m));
    lua_rawseti(L, -2, m + 1);
  }
  lua_pushcfunction(L, set_metatable);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, fresh ? "local step, MT, N, CM, setmetatable = ...\n"
                           : "local step, t, N = ...\n");
  luaL_addstring(&b, fresh ? "return function()\n  local k, m" : "return function()\n  local k");
  for (int i = 1; i <= PL_FILL_MAX; i++) lua_pushfstring(L, ", v%d", i), luaL_addvalue(&b);
  luaL_addstring(&b, " = step()\n");
  for (int a = 0; a < n; a++)
    if (pl_fill_fits(sample_types[a])) add_event(L, &b, a, sample_types[a], named, fresh);
  luaL_addstring(&b, "  return k\nend\n");
  luaL_pushresult(&b);
  size_t len;
  const char *src = lua_tolstring(L, -1, &len);
  if (luaL_loadbufferx(L, src, len, "=perf.data records", "t") != LUA_OK) {
    lua_settop(L, step + 2);                    /* as it was */
    return 0;
  }
  lua_replace(L, -2);                           /* the source */
  lua_insert(L, step);                          /* chunk, step, t, names, CM, setmetatable */
  lua_call(L, 5, 1);
  return 1;
}
