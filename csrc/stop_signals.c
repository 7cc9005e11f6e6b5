/*
** stop_signals.c: ^C and SIGTERM as a readable descriptor, for a server
** loop that waits on sockets (perf.serve): the perf.stop_signals handle.
**
**   local s <close> = core.stop_signals()  -- SIGINT, SIGTERM blocked
**   s:getfd()   -> the signalfd (LuaSocket's socket.select takes the handle)
**   s:take()    -> the signal's number, or nil when none is pending
**   s:close()   -> the fd closed, the old mask back (idempotent)
**
** A server stopped by a signal in the middle of a write leaves a client
** with half a response and descriptors open; blocked and read from a
** signalfd (signalfd(2)), the signal is one more input to the select:
** the loop finishes what it is doing and closes everything, as perf
** record's handler only sets `done`.
*/
#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "perf_core.h"

#define PL_STOP_MT "perf.stop_signals"

typedef struct pl_stop {
  int fd;                 /* -1 when closed */
  int blocked;            /* old_mask is to be restored */
  sigset_t old_mask;
} pl_stop;

static pl_stop *to_stop(lua_State *L, int idx) {
  return (pl_stop *)luaL_checkudata(L, idx, PL_STOP_MT);
}

static pl_stop *check_stop(lua_State *L, int idx) {
  pl_stop *s = to_stop(L, idx);
  if (s->fd < 0) luaL_error(L, "attempt to use a closed perf.stop_signals");
  return s;
}

/* Safe twice, never raises; a signal that came and was not taken is
** delivered as the mask lifts. */
static void stop_release(pl_stop *s) {
  if (s->fd >= 0) { int fd = s->fd; s->fd = -1; close(fd); }
  if (s->blocked) {
    s->blocked = 0;
    sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
  }
}

/* core.stop_signals() -> handle | nil, msg, errno */
static int l_stop_signals(lua_State *L) {
  sigset_t set;
  pl_stop *s = (pl_stop *)lua_newuserdatauv(L, sizeof *s, 0);
  s->fd = -1;
  s->blocked = 0;
  luaL_setmetatable(L, PL_STOP_MT);
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &set, &s->old_mask) != 0)
    return pl_fail(L, errno, "sigprocmask", NULL);
  s->blocked = 1;
  s->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (s->fd < 0) {
    int err = errno;
    stop_release(s);
    return pl_fail(L, err, "signalfd", NULL);
  }
  return 1;
}

static int s_getfd(lua_State *L) {
  lua_pushinteger(L, check_stop(L, 1)->fd);
  return 1;
}

/* LuaSocket's select asks each object whether it holds buffered data. */
static int s_dirty(lua_State *L) {
  check_stop(L, 1);
  lua_pushboolean(L, 0);
  return 1;
}

static int s_take(lua_State *L) {
  pl_stop *s = check_stop(L, 1);
  struct signalfd_siginfo si;
  ssize_t n;
  do n = read(s->fd, &si, sizeof si); while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof si) return 0;
  lua_pushinteger(L, (lua_Integer)si.ssi_signo);
  return 1;
}

/* s:close(), and __gc, __close */
static int s_close(lua_State *L) {
  stop_release(to_stop(L, 1));
  lua_pushboolean(L, 1);
  return 1;
}

static int s_tostring(lua_State *L) {
  pl_stop *s = to_stop(L, 1);
  if (s->fd < 0) lua_pushliteral(L, "perf.stop_signals (closed)");
  else lua_pushfstring(L, "perf.stop_signals (fd %d)", s->fd);
  return 1;
}

static const luaL_Reg methods[] = {
  { "getfd", s_getfd }, { "dirty", s_dirty }, { "take", s_take }, { "close", s_close },
  { NULL, NULL }
};

static const luaL_Reg meta[] = {
  { "__gc", s_close }, { "__close", s_close }, { "__tostring", s_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "stop_signals", l_stop_signals }, { NULL, NULL }
};

void pl_open_stop_signals(lua_State *L) {
  pl_new_metatable(L, PL_STOP_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
