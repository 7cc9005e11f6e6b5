/*
** profile_alloc.c: allocation samples for perf.profile { mode = "alloc" }.
**
**   core.profile_alloc(period) -> a   (period: bytes per sample)
**   a:start()  a:stop()  a:close() (also __gc, __close)  a.bytes
**   core.profile_allocator() -> f, ud   (light userdata: the state's allocator)
**
** a:start() wraps the Lua state's allocator (lua_getallocf/lua_setallocf):
** the wrapper calls the original, and counts the bytes each allocation or
** growth adds. Every `period` bytes it has the profiler take a sample
** (pl_profile_add, profile.h): the hook runs at the allocating thread's
** next VM step and charges the bytes counted since the last sample
** (weigh) to the Lua line that allocated, as pprof's heap profiles sample.
** What the hook itself allocates is not counted.
**
** a:stop() puts the original allocator back (if nothing replaced ours
** since); blocks allocated through the wrapper came from the original, so
** freeing them later through it is right. If something wrapped ours, the
** wrapper stays, forwarding only. One allocation profile runs at a time.
*/
#include <string.h>

#include "profile.h"

#define PL_PROFALLOC_MT "perf.profalloc"

typedef struct profalloc {
  int open;
  int active;
  lua_Integer period;
  lua_Integer bytes;             /* counted while active */
} profalloc;

static struct {
  lua_Alloc f;                   /* the wrapped allocator */
  void *ud;
  profalloc *owner;              /* counting for it, NULL: forwarding only */
  const int *charging;           /* the profiler's hook is charging */
  size_t since_sample;           /* bytes since the last sample was taken */
  lua_Integer unweighed;         /* bytes not yet charged */
} A;

static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  void *p = A.f(A.ud, ptr, osize, nsize);
  profalloc *owner = A.owner;
  if (!p || !owner || *A.charging) return p;
  /* lua.h: with ptr NULL, osize is a type tag, not a size */
  size_t grown = ptr == NULL ? nsize : nsize > osize ? nsize - osize : 0;
  if (grown == 0) return p;
  owner->bytes += (lua_Integer)grown;
  A.unweighed += (lua_Integer)grown;
  A.since_sample += grown;
  size_t period = (size_t)owner->period;
  if (A.since_sample >= period) {
    unsigned long n = (unsigned long)(A.since_sample / period);
    A.since_sample %= period;
    pl_profile_add(n);
  }
  return p;
}

/* the bytes counted since the last charge go with the samples charged */
static lua_Integer weigh(unsigned long n) {
  (void)n;
  lua_Integer w = A.unweighed;
  A.unweighed = 0;
  return w;
}

static profalloc *check_alloc(lua_State *L) {
  return (profalloc *)luaL_checkudata(L, 1, PL_PROFALLOC_MT);
}

/* Stops counting and unwraps the allocator when ours is on top; never raises. */
static void stop(lua_State *L, profalloc *a) {
  if (!a->active) return;
  void *ud;
  if (lua_getallocf(L, &ud) == alloc) lua_setallocf(L, A.f, A.ud);
  A.owner = NULL;
  pl_profile_set_weigh(NULL);
  a->active = 0;
}

/* core.profile_alloc(period) */
static int alloc_new(lua_State *L) {
  lua_Integer period = luaL_checkinteger(L, 1);
  luaL_argcheck(L, period >= 1, 1, "out of range");
  profalloc *a = (profalloc *)lua_newuserdatauv(L, sizeof *a, 0);
  memset(a, 0, sizeof *a);
  luaL_setmetatable(L, PL_PROFALLOC_MT);
  a->period = period;
  a->open = 1;
  return 1;
}

static int alloc_start(lua_State *L) {
  profalloc *a = check_alloc(L);
  if (!a->open) return luaL_error(L, "attempt to use a closed allocation profile");
  if (a->active) return luaL_error(L, "the allocation profile is already running");
  if (A.owner) return luaL_error(L, "another allocation profile is running");
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f != alloc) {              /* else: still ours from a run it could not unwrap */
    A.f = f;
    A.ud = ud;
  }
  A.since_sample = 0;
  A.unweighed = 0;
  A.charging = pl_profile_charging_flag();
  A.owner = a;
  a->active = 1;
  pl_profile_set_weigh(weigh);
  if (f != alloc) lua_setallocf(L, alloc, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

static int alloc_stop(lua_State *L) {
  stop(L, check_alloc(L));
  lua_pushboolean(L, 1);
  return 1;
}

static int alloc_close(lua_State *L) {
  profalloc *a = check_alloc(L);
  stop(L, a);
  a->open = 0;
  return 0;
}

static int alloc_index(lua_State *L) {
  profalloc *a = check_alloc(L);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "bytes") == 0) {
    lua_pushinteger(L, a->bytes);
    return 1;
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_getfield(L, -1, k);
  return 1;
}

static int alloc_tostring(lua_State *L) {
  profalloc *a = check_alloc(L);
  lua_pushfstring(L, "perf.profalloc (%s, every %I bytes, %I bytes)",
                  a->active ? "running" : a->open ? "stopped" : "closed",
                  a->period, a->bytes);
  return 1;
}

static const luaL_Reg methods[] = {
  { "start", alloc_start },
  { "stop", alloc_stop },
  { "close", alloc_close },
  { NULL, NULL }
};

/* core.profile_allocator() -> the state's allocator and its ud, as light
** userdata: to check that it is given back */
static int allocator(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  lua_pushlightuserdata(L, *(void **)&f);
  lua_pushlightuserdata(L, ud);
  return 2;
}

void pl_open_profile_alloc(lua_State *L) {
  if (luaL_newmetatable(L, PL_PROFALLOC_MT)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pushcfunction(L, alloc_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, alloc_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, alloc_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, alloc_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, alloc_new);
  lua_setfield(L, -2, "profile_alloc");
  lua_pushcfunction(L, allocator);
  lua_setfield(L, -2, "profile_allocator");
}
