/*
** profile_counters.c: perf.profile { counters = { ... } }: counter deltas
** charged with each sample.
**
**   core.profile_counters({ ev, ... } [, in_ring]) -> c
**   c:start()  c:stop()  c:close() (also __gc, __close)
**   c:result() -> { [stack key] = { d1, d2, ... } }, { total1, total2, ... }
**
** Each time the profiler's hook charges a stack (pl_profile_set_on_charge,
** profile.h), what the counters counted since the sample before is added
** to that stack's entry. Where the values come from:
**
** - in_ring: the events are members of a group the sampling event leads,
**   which samples PERF_SAMPLE_READ with PERF_FORMAT_GROUP|ID: each sample
**   record carries the group's values, taken by the kernel at the
**   overflow (pl_profile_sample_read), matched to the members by id. A
**   sample whose record was lost charges nothing: the next one carries its
**   counts. The members stay enabled and the leader gates the group
**   (group.c says why); start takes the members' values, read while the
**   leader is still disabled, as the base.
** - otherwise (the timer, alloc, off-cpu and wall modes, whose samples
**   come from no group leader): the events form a group of their own,
**   enabled once when opened, and are read with read(2) when the sample
**   is charged; start takes the values as the new base.
*/
#include <string.h>

#include "profile.h"

#define PL_PROFCOUNTERS_MT "perf.profcounters"
#define MAXCOUNTERS 16

typedef struct profcounters {
  int open;
  int active;
  int n;
  int in_ring;                   /* values from the sample records */
  pl_event *ev[MAXCOUNTERS];     /* kept alive by uv1 */
  uint64_t last[MAXCOUNTERS];
  lua_Integer total[MAXCOUNTERS];
} profcounters;

static profcounters *owner;      /* the running one */
static const char key_registry = 0;  /* registry key: owner's table by stack */

static void read_all(profcounters *c, uint64_t *v) {
  for (int i = 0; i < c->n; i++) {
    uint64_t value = 0, en, run, lost;
    if (c->ev[i]->fd < 0 || pl_event_read(c->ev[i], &value, &en, &run, &lost) != 0)
      value = c->last[i];        /* unreadable: counts nothing */
    v[i] = value;
  }
}

/* The members' values in the sample being charged; 0 if it has none. */
static int sample_values(profcounters *c, uint64_t *v) {
  const uint64_t *values, *ids;
  int nr = pl_profile_sample_read(&values, &ids);
  if (nr == 0) return 0;
  for (int i = 0; i < c->n; i++) {
    v[i] = c->last[i];             /* a member missing from it counts nothing */
    for (int j = 0; j < nr; j++)
      if (ids[j] == c->ev[i]->id && ids[j] != 0) { v[i] = values[j]; break; }
  }
  return 1;
}

static void on_charge(lua_State *L, int key) {
  profcounters *c = owner;
  if (!c || !lua_checkstack(L, 4)) return;
  uint64_t v[MAXCOUNTERS];
  if (c->in_ring) {
    if (!sample_values(c, v)) return;
  } else {
    read_all(c, v);
  }
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &key_registry) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_pushvalue(L, key);
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, c->n, 0);
    for (int i = 1; i <= c->n; i++) {
      lua_pushinteger(L, 0);
      lua_rawseti(L, -2, i);
    }
    lua_pushvalue(L, key);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  for (int i = 0; i < c->n; i++) {
    lua_Integer d = (lua_Integer)(v[i] - c->last[i]);   /* modulo 2^64 */
    c->last[i] = v[i];
    c->total[i] += d;
    lua_rawgeti(L, -1, i + 1);
    lua_Integer have = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, have + d);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pop(L, 2);
}

static profcounters *check_counters(lua_State *L) {
  return (profcounters *)luaL_checkudata(L, 1, PL_PROFCOUNTERS_MT);
}

static void stop(lua_State *L, profcounters *c) {
  if (!c->active) return;
  pl_profile_set_on_charge(NULL);
  owner = NULL;
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &key_registry);
  c->active = 0;
}

/* core.profile_counters({ ev, ... } [, in_ring]) */
static int counters_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)luaL_len(L, 1);
  luaL_argcheck(L, n >= 1 && n <= MAXCOUNTERS, 1, "1 to 16 counters");
  profcounters *c = (profcounters *)lua_newuserdatauv(L, sizeof *c, 2);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, PL_PROFCOUNTERS_MT);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    c->ev[i - 1] = pl_check_event(L, -1);
    lua_rawseti(L, -2, i);
  }
  lua_setiuservalue(L, -2, 1);          /* uv1: the events */
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);          /* uv2: deltas by stack */
  c->n = n;
  c->in_ring = lua_toboolean(L, 2);
  c->open = 1;
  return 1;
}

static int counters_start(lua_State *L) {
  profcounters *c = check_counters(L);
  if (!c->open) return luaL_error(L, "attempt to use a closed profiler counter set");
  if (c->active) return luaL_error(L, "the profiler counters are already running");
  if (owner) return luaL_error(L, "other profiler counters are running");
  for (int i = 0; i < c->n; i++)
    if (c->ev[i]->fd < 0) return luaL_error(L, "attempt to use a closed perf event");
  read_all(c, c->last);
  lua_getiuservalue(L, 1, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &key_registry);
  owner = c;
  pl_profile_set_on_charge(on_charge);
  c->active = 1;
  lua_pushboolean(L, 1);
  return 1;
}

static int counters_stop(lua_State *L) {
  stop(L, check_counters(L));
  lua_pushboolean(L, 1);
  return 1;
}

static int counters_result(lua_State *L) {
  profcounters *c = check_counters(L);
  lua_getiuservalue(L, 1, 2);
  lua_createtable(L, c->n, 0);
  for (int i = 0; i < c->n; i++) {
    lua_pushinteger(L, c->total[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 2;
}

static int counters_close(lua_State *L) {
  profcounters *c = check_counters(L);
  stop(L, c);
  c->open = 0;
  return 0;
}

static int counters_tostring(lua_State *L) {
  profcounters *c = check_counters(L);
  lua_pushfstring(L, "perf.profcounters (%d counters, %s)", c->n,
                  c->active ? "running" : c->open ? "stopped" : "closed");
  return 1;
}

static const luaL_Reg methods[] = {
  { "start", counters_start },
  { "stop", counters_stop },
  { "result", counters_result },
  { "close", counters_close },
  { NULL, NULL }
};

static const luaL_Reg meta[] = {
  { "__gc", counters_close },
  { "__close", counters_close },
  { "__tostring", counters_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "profile_counters", counters_new },
  { NULL, NULL }
};

void pl_open_profile_counters(lua_State *L) {
  pl_new_metatable(L, PL_PROFCOUNTERS_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
