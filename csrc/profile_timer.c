/*
** profile_timer.c: perf.profile { event = "timer" }: no perf event at all.
**
**   core.profile_timer(freq) -> t | nil, msg, errno   (samples per s of CPU time)
**   t:start()  t:stop()  t:close() (also __gc, __close)
**
** A POSIX timer on the calling thread's CPU-time clock
** (timer_create(CLOCK_THREAD_CPUTIME_ID) with SIGEV_THREAD_ID, as
** timer_create(2) describes) sends PL_TIMER_SIGNAL to this thread every
** 1/freq s of CPU time it uses; the handler only has the profiler take a
** sample per expiration (pl_profile_add, profile.h), as an overflow signal
** would.
** It is what a cpu-clock profile falls back to where perf_event_open is
** refused (a paranoid level, a container's seccomp profile).
*/
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "profile.h"

#define PL_PROFTIMER_MT "perf.proftimer"
#define PL_TIMER_SIGNAL (SIGRTMIN + 3)

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

typedef struct proftimer {
  int open;
  int active;
  lua_Integer freq;
  timer_t timer;
} proftimer;

static void on_timer(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  int saved = errno;
  /* CPU-time timers fire on the scheduler tick: one signal may stand for
  ** several expirations, the others counted in si_overrun */
  if (si->si_code == SI_TIMER)
    pl_profile_add_uc(1 + (unsigned long)(si->si_overrun > 0 ? si->si_overrun : 0), uc);
  errno = saved;
}

static int installed;

static int install(void) {
  if (installed) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_timer;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(PL_TIMER_SIGNAL, &sa, NULL) < 0) return errno;
  installed = 1;
  return 0;
}

static proftimer *check_timer(lua_State *L) {
  return (proftimer *)luaL_checkudata(L, 1, PL_PROFTIMER_MT);
}

/* Arms (ns > 0) or disarms (0) the timer; returns 0 or an errno. */
static int set(proftimer *t, long ns) {
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_interval.tv_sec = ns / 1000000000;
  its.it_interval.tv_nsec = ns % 1000000000;
  its.it_value = its.it_interval;
  return timer_settime(t->timer, 0, &its, NULL) < 0 ? errno : 0;
}

/* core.profile_timer(freq) -> t | nil, msg, errno */
static int timer_new(lua_State *L) {
  lua_Integer freq = luaL_checkinteger(L, 1);
  luaL_argcheck(L, freq >= 1 && freq <= 1000000, 1, "out of range");
  proftimer *t = (proftimer *)lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, PL_PROFTIMER_MT);
  t->freq = freq;
  int err = install();
  if (err) return pl_fail(L, err, "profiler timer: sigaction", NULL);
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = PL_TIMER_SIGNAL;
  sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) < 0)
    return pl_fail(L, errno, "profiler timer: timer_create", NULL);
  t->open = 1;
  return 1;
}

static int timer_start(lua_State *L) {
  proftimer *t = check_timer(L);
  if (!t->open) return luaL_error(L, "attempt to use a closed profiler timer");
  if (t->active) return luaL_error(L, "the profiler timer is already running");
  int err = set(t, (long)(1000000000 / t->freq));
  if (err) return pl_fail(L, err, "profiler timer: timer_settime", NULL);
  t->active = 1;
  lua_pushboolean(L, 1);
  return 1;
}

static int timer_stop(lua_State *L) {
  proftimer *t = check_timer(L);
  if (t->active) set(t, 0);       /* signals already queued are still counted */
  t->active = 0;
  lua_pushboolean(L, 1);
  return 1;
}

static int timer_close(lua_State *L) {
  proftimer *t = check_timer(L);
  if (t->open) timer_delete(t->timer);
  t->open = t->active = 0;
  return 0;
}

static int timer_tostring(lua_State *L) {
  proftimer *t = check_timer(L);
  lua_pushfstring(L, "perf.proftimer (%s, %I Hz of CPU time)",
                  t->active ? "running" : t->open ? "stopped" : "closed", t->freq);
  return 1;
}

static const luaL_Reg methods[] = {
  { "start", timer_start },
  { "stop", timer_stop },
  { "close", timer_close },
  { NULL, NULL }
};

static const luaL_Reg meta[] = {
  { "__gc", timer_close },
  { "__close", timer_close },
  { "__tostring", timer_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "profile_timer", timer_new },
  { NULL, NULL }
};

void pl_open_profile_timer(lua_State *L) {
  pl_new_metatable(L, PL_PROFTIMER_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
