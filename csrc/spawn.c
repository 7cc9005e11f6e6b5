/*
** spawn.c: the child process of perf.stat (the perf.child handle).
**
** perf.core.spawn(argv, opts) forks a child that waits on a pipe before it
** executes argv, so the counters can be attached to its pid first (with
** enable_on_exec they start at the exec, as perf stat's do). child:start()
** lets it go and learns whether the exec worked: the child reports a failed
** exec by writing errno to a pipe whose write end is close-on-exec, so a
** successful exec closes it and the read sees end of file. child:wait()
** reaps it with wait4 (exit status or signal, rusage) and times it;
** child:wait(ms) returns false if it is still running after ms.
**
** Between fork and exec the child runs only async-signal-safe calls on
** memory prepared by the parent: no allocation, no Lua. The PATH lookup is
** execvp's (file names with a '/' are taken as they are; EACCES from one
** directory does not stop the search but is what is reported if nothing
** runs; a file the kernel cannot execute (ENOEXEC) is run by /bin/sh).
** A file that exists though execve said ENOENT is reported with the
** failure, so the message can name its missing interpreter (exec_hint.c).
** While children are unreaped, an ignored SIGCHLD is made the default
** (hold_sigchld), so that they can be waited for.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_core.h"

extern char **environ;

#define PL_CHILD_MT "perf.child"

typedef struct pl_child {
  pid_t pid;            /* -1 before fork and once reaped */
  int go;               /* write end of the go pipe, -1 once used */
  int err;              /* read end of the exec-error pipe, -1 once read */
  int started;          /* the go byte was sent */
  int status;           /* wait status, once reaped */
  struct rusage ru;     /* its resource usage, once reaped */
  struct timespec t0;   /* when it was let go */
  int64_t elapsed;      /* ns from the go to the end of the wait */
  int pidfd;            /* for waits with a timeout, -1 until one */
  int ignoring;         /* SIGINT and SIGQUIT ignored, old actions saved */
  struct sigaction old_int, old_quit;
  int holds_chld;       /* counted in chld_holders until reaped */
} pl_child;

/* ---- signal names ---- */

static const struct { int sig; const char *name; } signames[] = {
  {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"},
  {SIGILL, "SIGILL"}, {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
  {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGKILL, "SIGKILL"},
  {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
  {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
#ifdef SIGSTKFLT
  {SIGSTKFLT, "SIGSTKFLT"},
#endif
  {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
  {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
  {SIGURG, "SIGURG"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
  {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
  {SIGIO, "SIGIO"}, {SIGPWR, "SIGPWR"}, {SIGSYS, "SIGSYS"},
};

/* Pushes the name of signal `sig`: "SIGTERM", "SIGRTMIN+3", "SIG99". */
static void push_signame(lua_State *L, int sig) {
  size_t i;
  for (i = 0; i < sizeof signames / sizeof *signames; i++)
    if (signames[i].sig == sig) {
      lua_pushstring(L, signames[i].name);
      return;
    }
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    if (sig == SIGRTMIN) lua_pushliteral(L, "SIGRTMIN");
    else lua_pushfstring(L, "SIGRTMIN+%d", sig - SIGRTMIN);
    return;
  }
  lua_pushfstring(L, "SIG%d", sig);
}

/* perf.core.signal_name(n) -> "SIGTERM" */
static int l_signal_name(lua_State *L) {
  lua_Integer sig = luaL_checkinteger(L, 1);
  luaL_argcheck(L, sig > 0 && sig < 1024, 1, "not a signal number");
  push_signame(L, (int)sig);
  return 1;
}

/* ---- in the child, between fork and exec: async-signal-safe only ---- */

/* After an ENOENT from execve: if `file` exists all the same, the
** interpreter it names (#! line, or an ELF's loader) is what is missing;
** the first such file is kept in `found` (PATH_MAX bytes) for the message.
** errno is kept. */
static void note_existing(const char *file, char *found) {
  int e = errno;
  size_t n = strlen(file);
  if (!found[0] && n < PATH_MAX && access(file, F_OK) == 0) memcpy(found, file, n + 1);
  errno = e;
}

/* Executes `file` as execvp would, trying each PATH directory. `argv` has
** argv[0] = file; `shargv` has two free slots before a copy of argv[1..],
** for running a file the kernel cannot execute with /bin/sh. Returns only
** on failure, with errno set. */
static void exec_search(const char *file, char **argv, char **shargv,
                        const char *path, char *found) {
  char buf[PATH_MAX];
  size_t flen = strlen(file);
  int eacces = 0;
  if (flen == 0) {
    errno = ENOENT;
    return;
  }
  if (strchr(file, '/')) {
    execve(file, argv, environ);
    if (errno == ENOENT) note_existing(file, found);
    if (errno == ENOEXEC) {
      shargv[0] = (char *)"/bin/sh";
      shargv[1] = (char *)file;
      execve("/bin/sh", shargv, environ);
    }
    return;
  }
  while (1) {
    const char *end = strchr(path, ':');
    size_t dlen = end ? (size_t)(end - path) : strlen(path);
    if (dlen + 1 + flen + 1 <= sizeof buf) {
      if (dlen == 0) {                 /* an empty entry is the current directory */
        memcpy(buf, file, flen + 1);
      } else {
        memcpy(buf, path, dlen);
        buf[dlen] = '/';
        memcpy(buf + dlen + 1, file, flen + 1);
      }
      execve(buf, argv, environ);
      switch (errno) {
      case ENOEXEC:
        shargv[0] = (char *)"/bin/sh";
        shargv[1] = buf;
        execve("/bin/sh", shargv, environ);
        return;
      case EACCES:
        eacces = 1;
        break;
      case ENOENT:
        note_existing(buf, found);
        break;
      case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT:
        break;
      default:
        return;
      }
    }
    if (!end) break;
    path = end + 1;
  }
  errno = eacces ? EACCES : ENOENT;
}

/* What a child that could not exec tells its parent: errno, and the file
** that exists though execve said ENOENT ("" if none). */
struct exec_failure {
  int err;
  char found[PATH_MAX];
};

static void child_main(int go, int errw, const int redirect[3],
                       const char *file, char **argv, char **shargv,
                       const char *path) {
  struct exec_failure f;
  char c;
  int k;
  ssize_t n;
  f.found[0] = '\0';
  for (k = 0; k < 3; k++)
    if (redirect[k] >= 0 && dup2(redirect[k], k) < 0) goto fail;
  do n = read(go, &c, 1); while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);             /* the parent gave up before the go */
  exec_search(file, argv, shargv, path, f.found);
fail:
  f.err = errno;
  n = (ssize_t)(offsetof(struct exec_failure, found) + strlen(f.found) + 1);
  while (write(errw, &f, (size_t)n) < 0 && errno == EINTR) {}
  _exit(127);
}

/* ---- the handle ---- */

static pl_child *test_child(lua_State *L, int idx) {
  return (pl_child *)luaL_checkudata(L, idx, PL_CHILD_MT);
}

static void close_fd(int *fd) {
  if (*fd >= 0) {
    int f = *fd;
    *fd = -1;
    close(f);
  }
}

static int64_t ns_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (int64_t)(t1.tv_sec - t0->tv_sec) * 1000000000 + (t1.tv_nsec - t0->tv_nsec);
}

/* While a started child runs, SIGINT and SIGQUIT are ignored in this
** process, as system(3) does: a ^C ends the command, whose counts are
** still reported. From the first wait until it is reaped. */
static void ignore_signals(pl_child *c) {
  struct sigaction ign;
  if (c->ignoring) return;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &c->old_int);
  sigaction(SIGQUIT, &ign, &c->old_quit);
  c->ignoring = 1;
}

static void restore_signals(pl_child *c) {
  if (!c->ignoring) return;
  sigaction(SIGINT, &c->old_int, NULL);
  sigaction(SIGQUIT, &c->old_quit, NULL);
  c->ignoring = 0;
}

/* A child can be waited for only if SIGCHLD is not ignored (nor
** SA_NOCLDWAIT set): otherwise the kernel reaps it itself and wait4 fails
** with ECHILD (wait(2), "POSIX.1-2001 specifies..."). An ignored SIGCHLD is
** inherited through exec, so a parent can leave it so; it is then made
** the default from the fork of the first child until the last is reaped,
** and restored. The command starts with SIGCHLD at its default, as the
** commands perf stat runs do. */
static int chld_holders;              /* children not yet reaped */
static int chld_changed;              /* chld_saved is to be restored */
static struct sigaction chld_saved;

static void hold_sigchld(pl_child *c) {
  if (c->holds_chld) return;
  if (chld_holders++ == 0) {
    struct sigaction cur;
    chld_changed = 0;
    if (sigaction(SIGCHLD, NULL, &cur) == 0 &&
        (cur.sa_handler == SIG_IGN || (cur.sa_flags & SA_NOCLDWAIT))) {
      struct sigaction dfl = cur;
      if (cur.sa_handler == SIG_IGN) dfl.sa_handler = SIG_DFL;
      dfl.sa_flags &= ~SA_NOCLDWAIT;
      chld_saved = cur;
      chld_changed = sigaction(SIGCHLD, &dfl, NULL) == 0;
    }
  }
  c->holds_chld = 1;
}

static void release_sigchld(pl_child *c) {
  if (!c->holds_chld) return;
  c->holds_chld = 0;
  if (--chld_holders == 0 && chld_changed) {
    sigaction(SIGCHLD, &chld_saved, NULL);
    chld_changed = 0;
  }
}

/* Reaps the child (EINTR retried); returns 0 or an errno. */
static int reap(pl_child *c) {
  pid_t r;
  int st;
  do r = wait4(c->pid, &st, 0, &c->ru); while (r < 0 && errno == EINTR);
  if (r < 0) {
    int err = errno;
    close_fd(&c->pidfd);
    restore_signals(c);
    release_sigchld(c);
    return err;
  }
  close_fd(&c->pidfd);
  restore_signals(c);
  release_sigchld(c);
  c->status = st;
  c->pid = -1;
  return 0;
}

/* Waits up to ms milliseconds for the child to end: 1 when it has (not yet
** reaped), 0 when the time ran out, -errno on failure. A pidfd (Linux 5.3)
** becomes readable when the process exits; without one, wait4 with WNOHANG
** every millisecond. */
static int wait_ended(pl_child *c, lua_Integer ms) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
#ifdef SYS_pidfd_open
  if (c->pidfd < 0) c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
  if (c->pidfd >= 0) {
    for (;;) {
      struct pollfd p = { c->pidfd, POLLIN, 0 };
      lua_Integer left = ms - ns_since(&t0) / 1000000;
      int r = poll(&p, 1, left > 0 ? (left > INT_MAX ? INT_MAX : (int)left) : 0);
      if (r > 0) return 1;
      if (r == 0 && left <= 0) return 0;
      if (r < 0 && errno != EINTR) return -errno;
    }
  }
#endif
  for (;;) {
    siginfo_t si;
    struct timespec tick = { 0, 1000000 };
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
      if (errno != EINTR) return -errno;
    } else if (si.si_pid == c->pid) {
      return 1;
    }
    if (ns_since(&t0) / 1000000 >= ms) return 0;
    nanosleep(&tick, NULL);
  }
}

/* Ends a child that will not be waited for: one that never got the go
** exits when its pipe closes; one that runs is killed. Then reaps it. */
static void destroy(pl_child *c) {
  close_fd(&c->go);
  close_fd(&c->err);
  if (c->pid > 0) {
    if (c->started) kill(c->pid, SIGKILL);
    reap(c);
  }
  close_fd(&c->pidfd);
  restore_signals(c);
  release_sigchld(c);
}

/* child:elapsed() -> ns since it was let go (to the end of its wait once
** reaped), or nil before start */
static int c_elapsed(lua_State *L) {
  pl_child *c = test_child(L, 1);
  if (!c->started) return 0;
  lua_pushinteger(L, (lua_Integer)(c->pid > 0 ? ns_since(&c->t0) : c->elapsed));
  return 1;
}

static const char *const redirect_keys[] = {"stdin", "stdout", "stderr"};

/* Raises unless each redirection in opts is nil, a file name or an open
** Lua file handle. */
static void check_redirects(lua_State *L, int opts) {
  int k;
  for (k = 0; k < 3; k++) {
    int t = lua_getfield(L, opts, redirect_keys[k]);
    if (t != LUA_TNIL && t != LUA_TSTRING) {
      luaL_Stream *s = (luaL_Stream *)luaL_testudata(L, -1, LUA_FILEHANDLE);
      if (!s) luaL_error(L, "option '%s': a file name or a file handle expected, got %s",
                         redirect_keys[k], luaL_typename(L, -1));
      if (!s->closef || !s->f) luaL_error(L, "option '%s': attempt to use a closed file",
                                          redirect_keys[k]);
    }
    lua_pop(L, 1);
  }
}

/* The descriptor for redirection k from opts (checked): a file name, opened
** here (*opened set), or a Lua file handle's; -1 to inherit; -2 with errno
** set (and the name on the stack) when the file cannot be opened. */
static int redirect_fd(lua_State *L, int opts, int k, int *opened) {
  int fd, t;
  *opened = 0;
  if (opts == 0) return -1;
  t = lua_getfield(L, opts, redirect_keys[k]);
  if (t == LUA_TNIL) {
    fd = -1;
  } else if (t == LUA_TSTRING) {
    const char *path = lua_tostring(L, -1);
    fd = k == 0 ? open(path, O_RDONLY | O_CLOEXEC)
                : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return -2;
    *opened = 1;
  } else {
    luaL_Stream *s = (luaL_Stream *)lua_touserdata(L, -1);
    fflush(s->f);
    fd = fileno(s->f);
  }
  lua_pop(L, 1);
  return fd;
}

/* Pushes, in one userdata, argv[0..n-1], NULL and after it shargv:
** "/bin/sh", file, argv[1..n-1], NULL, for the command table at 1 (whose
** strings they point into: it keeps them); raises on a bad argument. */
static char **push_argv(lua_State *L, lua_Integer n) {
  char **argv = (char **)lua_newuserdatauv(L, (size_t)(2 * n + 3) * sizeof(char *), 0);
  char **shargv = argv + n + 1;
  for (lua_Integer i = 1; i <= n; i++) {
    size_t len;
    const char *s;
    if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
      luaL_error(L, "argument %d of the command: a string expected, got %s",
                 (int)i, luaL_typename(L, -1));
    s = lua_tolstring(L, -1, &len);
    if (strlen(s) != len)
      luaL_error(L, "argument %d of the command contains a zero byte", (int)i);
    argv[i - 1] = (char *)s;
    if (i > 1) shargv[i] = (char *)s;
    lua_pop(L, 1);
  }
  argv[n] = NULL;
  shargv[n + 1] = NULL;
  return argv;
}

/* Pushes a new child handle, closed, named after the command at 1. */
static pl_child *new_child(lua_State *L) {
  pl_child *c = (pl_child *)lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  c->pid = -1;
  c->go = c->err = c->pidfd = -1;
  luaL_setmetatable(L, PL_CHILD_MT);
  lua_rawgeti(L, 1, 1);
  lua_setiuservalue(L, -2, 1);         /* its name, for messages */
  return c;
}

/* Fills redirect[] from opts (opened[] says which files were opened here):
** 0, or when a file cannot be opened (those opened before it closed)
** nil, msg, errno pushed and their count. */
static int open_redirects(lua_State *L, int opts, int redirect[3], int opened[3]) {
  for (int k = 0; k < 3; k++) {
    redirect[k] = redirect_fd(L, opts, k, &opened[k]);
    if (redirect[k] == -2) {
      int err = errno;
      for (int j = 0; j < k; j++) if (opened[j]) close(redirect[j]);
      return pl_fail(L, err, lua_pushfstring(L, "cannot open \"%s\" for %s",
                     lua_tostring(L, -1), redirect_keys[k]), NULL);
    }
  }
  return 0;
}

/* Forks the child c, held at its go pipe, with argv (shargv after it) and
** the redirections (closed here when opened here): 1 with c on top, or
** nil, msg, errno. */
static int fork_child(lua_State *L, pl_child *c, char **argv, lua_Integer n,
                      const int redirect[3], const int opened[3]) {
  int go[2] = {-1, -1}, errp[2] = {-1, -1}, k, err;
  const char *path = getenv("PATH");
  pid_t pid;
  if (!path || !*path) path = "/bin:/usr/bin";
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
    err = errno;
    goto failed;
  }
  hold_sigchld(c);
  pid = fork();
  if (pid < 0) {
    err = errno;
    release_sigchld(c);
    goto failed;
  }
  if (pid == 0) {
    close(go[1]);
    close(errp[0]);
    child_main(go[0], errp[1], redirect, argv[0], argv, argv + n + 1, path);
  }
  close(go[0]);
  close(errp[1]);
  for (k = 0; k < 3; k++) if (opened[k]) close(redirect[k]);
  c->pid = pid;
  c->go = go[1];
  c->err = errp[0];
  return 1;
failed:
  for (k = 0; k < 2; k++) {
    if (go[k] >= 0) close(go[k]);
    if (errp[k] >= 0) close(errp[k]);
  }
  for (k = 0; k < 3; k++) if (opened[k]) close(redirect[k]);
  return pl_fail(L, err, "spawn", err == EAGAIN ? "the process limit is reached" : NULL);
}

/* perf.core.spawn(argv [, opts]) -> child | nil, msg, errno
** opts: stdin, stdout, stderr (a file name or a Lua file handle). */
static int l_spawn(lua_State *L) {
  int opts = 0, redirect[3] = {-1, -1, -1}, opened[3] = {0, 0, 0}, failed;
  luaL_checktype(L, 1, LUA_TTABLE);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    opts = 2;
    check_redirects(L, opts);
  }
  lua_settop(L, 2);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  luaL_argcheck(L, n >= 1, 1, "the command is empty");
  luaL_argcheck(L, n < 100000, 1, "too many arguments");
  char **argv = push_argv(L, n);                                  /* 3 */
  pl_child *c = new_child(L);                                     /* 4 */
  if ((failed = open_redirects(L, opts, redirect, opened)) != 0) return failed;
  return fork_child(L, c, argv, n, redirect, opened);
}

/* child:pid() -> its pid (nil once reaped) */
static int c_pid(lua_State *L) {
  pl_child *c = test_child(L, 1);
  if (c->pid > 0) lua_pushinteger(L, c->pid);
  else lua_pushnil(L);
  return 1;
}

/* child:start() -> true | nil, msg, errno: lets the child exec, and reports
** an exec that failed (the child is then reaped). */
static int c_start(lua_State *L) {
  pl_child *c = test_child(L, 1);
  struct exec_failure f;
  size_t got = 0;
  ssize_t n;
  if (c->started || c->go < 0 || c->pid <= 0)
    return luaL_error(L, "attempt to start a child twice");
  clock_gettime(CLOCK_MONOTONIC, &c->t0);
  c->started = 1;
  do n = write(c->go, "x", 1); while (n < 0 && errno == EINTR);
  close_fd(&c->go);
  do {                                  /* to the end of file: the exec closed it */
    n = read(c->err, (char *)&f + got, sizeof f - got);
    if (n > 0) got += (size_t)n;
  } while ((n > 0 && got < sizeof f) || (n < 0 && errno == EINTR));
  close_fd(&c->err);
  if (got == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (got < offsetof(struct exec_failure, found)) f.err = EIO;
  if (got <= offsetof(struct exec_failure, found)) f.found[0] = '\0';
  f.found[sizeof f.found - 1] = '\0';
  reap(c);
  c->elapsed = ns_since(&c->t0);
  {
    const char *file;
    lua_getiuservalue(L, 1, 1);
    file = lua_tostring(L, -1);
    if (!file) file = "?";
    return pl_fail(L, f.err, lua_pushfstring(L, "cannot run \"%s\"", file),
                   pl_exec_hint(L, f.err, file, f.found));
  }
}

static int64_t tv_ns(const struct timeval *tv) {
  return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

/* child:wait([timeout_ms]) -> { status =, signal =, core_dumped =,
** elapsed =, user =, sys = } | false (the timeout passed first) | nil, msg,
** errno. From the first wait until the child is reaped, SIGINT and SIGQUIT
** are ignored in this process (see ignore_signals). */
static int c_wait(lua_State *L) {
  pl_child *c = test_child(L, 1);
  int err = 0, st;
  lua_Integer ms = luaL_optinteger(L, 2, -1);
  if (!c->started) return luaL_error(L, "attempt to wait for a child not started");
  luaL_argcheck(L, lua_isnoneornil(L, 2) || ms >= 0, 2, "a timeout in ms, 0 or more");
  if (c->pid > 0) {
    ignore_signals(c);
    if (ms >= 0) {
      int r = wait_ended(c, ms);
      if (r < 0) return pl_fail(L, -r, "wait", NULL);
      if (r == 0) {
        lua_pushboolean(L, 0);
        return 1;
      }
    }
    err = reap(c);
    c->elapsed = ns_since(&c->t0);
    if (err) return pl_fail(L, err, "wait", err == ECHILD ?
                            "another wait in this process reaped the child, or SIGCHLD was "
                            "set to be ignored while it ran" : NULL);
  }
  st = c->status;
  lua_createtable(L, 0, 7);
  if (WIFEXITED(st)) {
    lua_pushinteger(L, WEXITSTATUS(st));
    lua_setfield(L, -2, "status");
  } else if (WIFSIGNALED(st)) {
    push_signame(L, WTERMSIG(st));
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "status");
    lua_setfield(L, -2, "signal");
    lua_pushinteger(L, WTERMSIG(st));
    lua_setfield(L, -2, "signo");
    lua_pushboolean(L, WCOREDUMP(st));
    lua_setfield(L, -2, "core_dumped");
  }
  lua_pushinteger(L, (lua_Integer)c->elapsed);
  lua_setfield(L, -2, "elapsed");
  lua_pushinteger(L, (lua_Integer)tv_ns(&c->ru.ru_utime));
  lua_setfield(L, -2, "user");
  lua_pushinteger(L, (lua_Integer)tv_ns(&c->ru.ru_stime));
  lua_setfield(L, -2, "sys");
  return 1;
}

/* child:close(), and __gc, __close: a child not started exits without
** running; one running is killed; either is reaped. Idempotent. */
static int c_close(lua_State *L) {
  destroy(test_child(L, 1));
  lua_pushboolean(L, 1);
  return 1;
}

static int c_tostring(lua_State *L) {
  pl_child *c = test_child(L, 1);
  if (c->pid > 0)
    lua_pushfstring(L, "perf.child (pid %d, %s)", (int)c->pid,
                    c->started ? "running" : "waiting to start");
  else
    lua_pushliteral(L, "perf.child (done)");
  return 1;
}

static const luaL_Reg methods[] = {
  {"pid", c_pid}, {"start", c_start}, {"wait", c_wait}, {"elapsed", c_elapsed},
  {"close", c_close},
  {NULL, NULL}
};

static const luaL_Reg metamethods[] = {
  {"__gc", c_close}, {"__close", c_close}, {"__tostring", c_tostring},
  {NULL, NULL}
};

static const luaL_Reg functions[] = {
  {"spawn", l_spawn}, {"signal_name", l_signal_name},
  {NULL, NULL}
};

void pl_open_spawn(lua_State *L) {
  pl_new_metatable(L, PL_CHILD_MT, metamethods, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
