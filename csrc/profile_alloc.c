/*
** profile_alloc.c: allocation samples for perf.profile { mode = "alloc" }.
**
**   core.profile_alloc(period) -> a   (period: bytes per sample)
**   a:start()  a:stop()  a:close() (also __gc, __close)  a.bytes
**   core.profile_allocator() -> f, ud   (light userdata: the state's allocator)
**
** a:start() wraps the Lua state's allocator (lua_getallocf/lua_setallocf):
** the wrapper calls the original, and counts down the bytes each allocation
** or growth adds (nothing else on its common path). Every `period` bytes
** it has the profiler take a sample
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
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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
  ptrdiff_t countdown;           /* bytes until the next sample is due */
  ptrdiff_t reset;               /* what countdown was last set to */
  size_t since_sample;           /* bytes since the last sample, counted */
  lua_Integer unweighed;         /* bytes not yet charged */
  int plain;                     /* f is lauxlib's allocator: realloc and free */
} A;

static const int not_charging;

/* Moves the bytes the countdown took since it was last set into the
** counts. */
static void flush(void) {
  ptrdiff_t d = A.reset - A.countdown;
  A.reset = A.countdown;
  if (!A.owner || d <= 0) return;
  A.owner->bytes += (lua_Integer)d;
  A.unweighed += (lua_Integer)d;
  A.since_sample += (size_t)d;
}

/* The countdown ran out: the samples due, and the next countdown. */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static void due(void) {
  flush();
  if (!A.owner) { A.countdown = A.reset = PTRDIFF_MAX; return; }
  size_t period = (size_t)A.owner->period;
  unsigned long n = (unsigned long)(A.since_sample / period);
  A.since_sample %= period;
  A.countdown = A.reset = (ptrdiff_t)(period - A.since_sample);
  if (n) pl_profile_add(n);
}

/* The common path is one countdown of the bytes an allocation or a
** growth asks for (lua.h: with ptr NULL, osize is a type tag, not a
** size), then a tail call of the allocator. Counted before it runs, a
** request that fails is counted too (Lua raises, or collects and asks
** again). */
static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  size_t had = ptr ? osize : 0;
  if (nsize > had && !*A.charging && (A.countdown -= (ptrdiff_t)(nsize - had)) <= 0)
    due();
  if (!A.plain) return A.f(A.ud, ptr, osize, nsize);
  if (nsize == 0) { free(ptr); return NULL; }   /* lauxlib's l_alloc */
  return realloc(ptr, nsize);
}

/* the bytes counted since the last charge go with the samples charged */
static lua_Integer weigh(unsigned long n) {
  (void)n;
  flush();
  lua_Integer w = A.unweighed;
  A.unweighed = 0;
  return w;
}

/* luaL_newstate's allocator (lauxlib.c's l_alloc: free for size 0, else
** realloc), from a state made and closed once to see it. */
static lua_Alloc lauxlib_alloc(void) {
  static lua_Alloc f;
  static int known;
  if (!known) {
    lua_State *T = luaL_newstate();
    if (T) { void *ud; f = lua_getallocf(T, &ud); lua_close(T); }
    known = 1;
  }
  return f;
}

static profalloc *check_alloc(lua_State *L) {
  return (profalloc *)luaL_checkudata(L, 1, PL_PROFALLOC_MT);
}

/* Stops counting and unwraps the allocator when ours is on top; never raises. */
static void stop(lua_State *L, profalloc *a) {
  if (!a->active) return;
  void *ud;
  if (lua_getallocf(L, &ud) == alloc) lua_setallocf(L, A.f, A.ud);
  flush();
  A.owner = NULL;
  A.countdown = A.reset = PTRDIFF_MAX;
  A.charging = &not_charging;
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
    A.plain = f == lauxlib_alloc();
  }
  A.since_sample = 0;
  A.unweighed = 0;
  A.charging = pl_profile_charging_flag();
  A.countdown = A.reset = (ptrdiff_t)a->period;
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
    if (a == A.owner) flush();
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

static const luaL_Reg meta[] = {
  { "__index", alloc_index },     /* profile.bytes, and the methods */
  { "__gc", alloc_close },
  { "__close", alloc_close },
  { "__tostring", alloc_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "profile_alloc", alloc_new },
  { "profile_allocator", allocator },
  { NULL, NULL }
};

void pl_open_profile_alloc(lua_State *L) {
  pl_new_metatable(L, PL_PROFALLOC_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
