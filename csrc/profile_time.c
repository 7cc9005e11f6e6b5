/*
** profile_time.c: time weights for perf.profile { mode = "off-cpu" } and
** { mode = "wall" }.
**
**   core.profile_clock(kind) -> c   (kind: "off-cpu" or "wall")
**   c:follow(ev)   ev's overflow signals take samples too (ev:notify() first)
**   c:start()  c:stop()  c:close() (also __gc, __close)  c.ns
**   core.profile_now() -> CLOCK_MONOTONIC in ns (the clock wall weights use)
**
** While started, each charge of the profiler's hook weighs the time since
** the previous charge: for "wall", the wall-clock time (CLOCK_MONOTONIC);
** for "off-cpu", the wall-clock time the thread did not run (wall time
** minus CLOCK_THREAD_CPUTIME_ID time). The sampling event of off-CPU
** profiles is a context switch with sigtrap: the kernel queues the signal
** as task work that runs when the thread returns to user space
** (kernel/events/core.c, TWA_RESUME), so it does not wake the thread, and
** the hook runs right after the blocking call, in the line that made it:
** that line is charged the time until the thread ran again. A wall
** profile adds those switches to its cpu-clock samples.
*/
#include <string.h>
#include <time.h>

#include "profile.h"

#define PL_PROFCLOCK_MT "perf.profclock"

typedef struct profclock {
  int open;
  int active;
  int wall;                      /* 1: wall time, 0: off-CPU time */
  lua_Integer ns;                /* weighed while active */
} profclock;

static struct {
  profclock *owner;
  lua_Integer last_wall, last_cpu;
} C;

static lua_Integer now(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static lua_Integer weigh(unsigned long n) {
  (void)n;
  profclock *c = C.owner;
  if (!c) return 0;
  lua_Integer wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_THREAD_CPUTIME_ID);
  lua_Integer w = wall - C.last_wall;
  if (!c->wall) w -= cpu - C.last_cpu;
  if (w < 0) w = 0;
  C.last_wall = wall;
  C.last_cpu = cpu;
  c->ns += w;
  return w;
}

static profclock *check_clock(lua_State *L) {
  return (profclock *)luaL_checkudata(L, 1, PL_PROFCLOCK_MT);
}

static void stop(profclock *c) {
  if (!c->active) return;
  pl_profile_set_weigh(NULL);
  C.owner = NULL;
  c->active = 0;
}

/* core.profile_clock(kind) */
static int clock_new(lua_State *L) {
  static const char *const kinds[] = { "off-cpu", "wall", NULL };
  int kind = luaL_checkoption(L, 1, NULL, kinds);
  profclock *c = (profclock *)lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, PL_PROFCLOCK_MT);
  c->wall = kind == 1;
  c->open = 1;
  return 1;
}

/* c:follow(ev): ev's overflow signals arm the profiler's hook */
static int clock_follow(lua_State *L) {
  profclock *c = check_clock(L);
  if (!c->open) return luaL_error(L, "attempt to use a closed profiler clock");
  pl_check_event(L, 2);
  if (!pl_signal_set_callback(L, 2, pl_profile_overflow))
    return luaL_error(L, "the event has no overflow signal (call ev:notify() first)");
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, 1, 1);     /* uv1: the followed event */
  lua_pushboolean(L, 1);
  return 1;
}

static int clock_start(lua_State *L) {
  profclock *c = check_clock(L);
  if (!c->open) return luaL_error(L, "attempt to use a closed profiler clock");
  if (c->active) return luaL_error(L, "the profiler clock is already running");
  if (C.owner) return luaL_error(L, "another profiler clock is running");
  C.last_wall = now(CLOCK_MONOTONIC);
  C.last_cpu = now(CLOCK_THREAD_CPUTIME_ID);
  C.owner = c;
  c->active = 1;
  pl_profile_set_weigh(weigh);
  lua_pushboolean(L, 1);
  return 1;
}

static int clock_stop(lua_State *L) {
  stop(check_clock(L));
  lua_pushboolean(L, 1);
  return 1;
}

static int clock_close(lua_State *L) {
  profclock *c = check_clock(L);
  stop(c);
  if (c->open && lua_getiuservalue(L, 1, 1) != LUA_TNIL && pl_test_event(L, -1) &&
      pl_test_event(L, -1)->fd >= 0)
    pl_signal_set_callback(L, lua_gettop(L), NULL);
  c->open = 0;
  return 0;
}

static int clock_index(lua_State *L) {
  profclock *c = check_clock(L);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "ns") == 0) {
    lua_pushinteger(L, c->ns);
    return 1;
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_getfield(L, -1, k);
  return 1;
}

static int clock_tostring(lua_State *L) {
  profclock *c = check_clock(L);
  lua_pushfstring(L, "perf.profclock (%s, %s, %I ns)", c->wall ? "wall" : "off-cpu",
                  c->active ? "running" : c->open ? "stopped" : "closed", c->ns);
  return 1;
}

static const luaL_Reg methods[] = {
  { "follow", clock_follow },
  { "start", clock_start },
  { "stop", clock_stop },
  { "close", clock_close },
  { NULL, NULL }
};

static int clock_now(lua_State *L) {
  lua_pushinteger(L, now(CLOCK_MONOTONIC));
  return 1;
}

static const luaL_Reg meta[] = {
  { "__index", clock_index },     /* clock.ns, and the methods */
  { "__gc", clock_close },
  { "__close", clock_close },
  { "__tostring", clock_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "profile_clock", clock_new },
  { "profile_now", clock_now },
  { NULL, NULL }
};

void pl_open_profile_time(lua_State *L) {
  pl_new_metatable(L, PL_PROFCLOCK_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
