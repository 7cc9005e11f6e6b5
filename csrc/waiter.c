/*
** waiter.c: waiting for a recorded command, its rings and ^C at once (the
** perf.waiter handle, used by perf.record).
**
**   local w <close> = core.waiter(pid)   -- a child of this process, unreaped
**   w:wait(rings, ms) -> "data" | "exited" | "timeout" | "signal", signo
**   w:kill(signo)                        -- the command, until it is reaped
**   w:close()                            -- the signals are delivered again
**   core.reraise(signo)                  -- end this process by that signal
**
** One poll(2) covers the rings (POLLIN at their watermark), a pidfd of the
** command (readable once it has exited, Linux 5.3) and a signalfd of
** SIGINT and SIGTERM, which are blocked while the waiter is open: a ^C
** becomes a value to act on (stop, keep what was recorded) rather than an
** error thrown out of the loop, as perf record's handler only sets `done`.
** The pid stays the command's until the caller reaps it, so signalling it
** by pid or pidfd cannot reach another process.
*/
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring.h"

#define PL_WAITER_MT "perf.waiter"
#define WAIT_MAX 1024

typedef struct pl_waiter {
  pid_t pid;
  int pidfd;              /* -1 when closed (or without pidfd_open) */
  int sigfd;              /* -1 when closed */
  int blocked;            /* the mask below is to be restored */
  sigset_t old_mask;
} pl_waiter;

static pl_waiter *to_waiter(lua_State *L, int idx) {
  return (pl_waiter *)luaL_checkudata(L, idx, PL_WAITER_MT);
}

static pl_waiter *check_waiter(lua_State *L, int idx) {
  pl_waiter *w = to_waiter(L, idx);
  if (w->sigfd < 0) luaL_error(L, "attempt to use a closed perf.waiter");
  return w;
}

/* Closes the fds and unblocks the signals; safe twice, never raises. A
** signal that came and was not taken is delivered as the mask lifts. */
static void waiter_release(pl_waiter *w) {
  if (w->pidfd >= 0) { int fd = w->pidfd; w->pidfd = -1; close(fd); }
  if (w->sigfd >= 0) { int fd = w->sigfd; w->sigfd = -1; close(fd); }
  if (w->blocked) {
    w->blocked = 0;
    sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
  }
}

/* core.waiter(pid) -> waiter | nil, msg, errno */
static int l_waiter(lua_State *L) {
  lua_Integer pid = luaL_checkinteger(L, 1);
  sigset_t set;
  luaL_argcheck(L, pid > 0 && pid <= 0x7fffffff, 1, "a process id expected");
  pl_waiter *w = (pl_waiter *)lua_newuserdatauv(L, sizeof *w, 0);
  w->pid = (pid_t)pid;
  w->pidfd = w->sigfd = -1;
  w->blocked = 0;
  luaL_setmetatable(L, PL_WAITER_MT);
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &set, &w->old_mask) != 0)
    return pl_fail(L, errno, "sigprocmask", NULL);
  w->blocked = 1;
  w->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (w->sigfd < 0) {
    int err = errno;
    waiter_release(w);
    return pl_fail(L, err, "signalfd", NULL);
  }
#ifdef SYS_pidfd_open
  w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
#endif
  if (w->pidfd < 0) {
    int err = errno;
    waiter_release(w);
    return pl_fail(L, err, "pidfd_open", err == ENOSYS ? "this kernel is older than 5.3" :
                   err == ESRCH ? "no such process" : NULL);
  }
  return 1;
}

/* The first signal waiting in the signalfd (consumed), or 0. */
static int take_signal(pl_waiter *w) {
  struct signalfd_siginfo si;
  ssize_t n;
  do n = read(w->sigfd, &si, sizeof si); while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof si ? (int)si.ssi_signo : 0;
}

/* w:wait(rings, timeout_ms) -> "signal", signo | "exited" | "data" |
** "timeout" | nil, msg, errno. Rings whose event hung up are left out. */
static int w_wait(lua_State *L) {
  pl_waiter *w = check_waiter(L, 1);
  struct pollfd pfd[WAIT_MAX + 2];
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer timeout = luaL_checkinteger(L, 3);
  size_t n = (size_t)lua_rawlen(L, 2);
  luaL_argcheck(L, n <= WAIT_MAX, 2, "at most 1024 rings");
  luaL_argcheck(L, timeout >= -1 && timeout <= 0x7fffffff, 3, "-1 (forever) or 0 .. 2^31-1 ms");
  pl_ring *rings[WAIT_MAX];
  nfds_t k = 0;
  pfd[k].fd = w->sigfd; pfd[k].events = POLLIN; pfd[k].revents = 0; k++;
  pfd[k].fd = w->pidfd; pfd[k].events = POLLIN; pfd[k].revents = 0; k++;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    pl_ring *r = pl_check_ring(L, -1);
    lua_pop(L, 1);
    int fd = pl_ring_fd(r);
    if (fd < 0 || r->hup) continue;
    rings[m++] = r;
    pfd[k].fd = fd; pfd[k].events = POLLIN; pfd[k].revents = 0; k++;
  }
  int rc;
  do rc = poll(pfd, k, (int)timeout); while (rc < 0 && errno == EINTR);
  if (rc < 0) return pl_fail(L, errno, "poll", NULL);
  int data = 0;
  for (size_t j = 0; j < m; j++) {
    short ev = pfd[j + 2].revents;
    if (ev & POLLHUP) rings[j]->hup = 1;
    if (ev & POLLIN) data = 1;
    if (ev & (POLLERR | POLLNVAL))
      return pl_fail(L, EBADF, "poll", "the event's file is no longer valid");
  }
  if (pfd[0].revents & POLLIN) {
    int sig = take_signal(w);
    if (sig) {
      lua_pushliteral(L, "signal");
      lua_pushinteger(L, sig);
      return 2;
    }
  }
  if (pfd[1].revents & (POLLIN | POLLHUP)) lua_pushliteral(L, "exited");
  else if (data) lua_pushliteral(L, "data");
  else lua_pushliteral(L, "timeout");
  return 1;
}

/* w:kill(signo) -> true | nil, msg, errno (ESRCH once it has exited) */
static int w_kill(lua_State *L) {
  pl_waiter *w = check_waiter(L, 1);
  lua_Integer sig = luaL_checkinteger(L, 2);
  luaL_argcheck(L, sig > 0 && sig < 65, 2, "a signal number expected");
  if (kill(w->pid, (int)sig) != 0) return pl_fail(L, errno, "kill", NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* w:close(), and __gc, __close */
static int w_close(lua_State *L) {
  waiter_release(to_waiter(L, 1));
  lua_pushboolean(L, 1);
  return 1;
}

static int w_tostring(lua_State *L) {
  pl_waiter *w = to_waiter(L, 1);
  if (w->sigfd < 0) lua_pushliteral(L, "perf.waiter (closed)");
  else lua_pushfstring(L, "perf.waiter (pid %d)", (int)w->pid);
  return 1;
}

/* core.reraise(signo): ends this process by the signal, its default
** action restored and unblocked, as perf does with the signal that ended
** its command; returns if that action does not end a process. */
static int l_reraise(lua_State *L) {
  lua_Integer sig = luaL_checkinteger(L, 1);
  sigset_t set;
  luaL_argcheck(L, sig > 0 && sig < 65, 1, "a signal number expected");
  signal((int)sig, SIG_DFL);
  sigemptyset(&set);
  sigaddset(&set, (int)sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise((int)sig);
  return 0;
}

static const luaL_Reg methods[] = {
  { "wait", w_wait }, { "kill", w_kill }, { "close", w_close }, { NULL, NULL }
};

static const luaL_Reg meta[] = {
  { "__gc", w_close }, { "__close", w_close }, { "__tostring", w_tostring },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "waiter", l_waiter }, { "reraise", l_reraise }, { NULL, NULL }
};

void pl_open_waiter(lua_State *L) {
  pl_new_metatable(L, PL_WAITER_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
