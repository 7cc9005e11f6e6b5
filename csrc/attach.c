/*
** attach.c: profiling another process (the perf.attach handle).
**
**   core.attach_start{ pid =, tid =, attr =, release = } -> a | nil, what, errno
**   a:finished() -> whether the tracer is done (the target is gone)
**   a:stop() -> { samples, outside, signals, threads, stop_ns, stop_max_ns,
**                 execed, stacks = { [key] = count } }
**   a:close()  (also __gc, __close): stops the tracer, drops its result
**
** The tracer (attach_trace.c) runs in a child process forked here: the
** profiler's Lua state is not touched there, and it keeps none of the
** profiler's files but its own two pipes. The pipes join them: the
** control pipe, whose closing tells the tracer to detach (and which closes
** by itself when the profiler dies, so the tracer then detaches too), and
** the result pipe, which brings "R" once every thread is seized and its
** event open (or "E errno what" when that fails), and at the end the
** counts and the samples by stack key.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf_core.h"
#include "attach_parts.h"

#define PL_ATTACH_MT "perf.attach"

typedef struct pl_attach {
  pid_t child;                  /* the tracer, 0 once reaped */
  int ctl, out;                 /* -1 when closed */
  pid_t target;
} pl_attach;

static pl_attach *to_attach(lua_State *L, int idx) {
  return (pl_attach *)luaL_checkudata(L, idx, PL_ATTACH_MT);
}

static void close_fd(int *fd) {
  if (*fd >= 0) { int f = *fd; *fd = -1; close(f); }
}

static void reap(pl_attach *a) {
  if (a->child > 0) {
    int st;
    while (waitpid(a->child, &st, 0) < 0 && errno == EINTR) {}
    a->child = 0;
  }
}

/* Reads what the tracer writes until EOF into b (NULL: dropped). */
static void drain(pl_attach *a, luaL_Buffer *b) {
  char buf[8192];
  while (a->out >= 0) {
    ssize_t n = read(a->out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (b) luaL_addlstring(b, buf, (size_t)n);
  }
  close_fd(&a->out);
}

/* Tells the tracer to detach, drops its result and reaps it; never raises. */
static void release(pl_attach *a) {
  close_fd(&a->ctl);
  drain(a, NULL);
  reap(a);
}

/* The tracer's first line: "R", or "E errno what". */
static int first_line(int fd, char *line, size_t len) {
  size_t n = 0;
  while (n + 1 < len) {
    ssize_t r = read(fd, line + n, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (line[n] == '\n') break;
    n++;
  }
  line[n] = '\0';
  return (int)n;
}

/* In the tracer: closes what it inherited but the two pipes, so that it
** holds none of the profiler's files (a pipe end, a socket) open longer. */
static void close_inherited(int keep1, int keep2) {
  int fds[4096], n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < (int)(sizeof fds / sizeof fds[0])) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd > 2 && fd != keep1 && fd != keep2 && fd != self) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
}

static int fork_tracer(lua_State *L, pl_attach *a, pl_tracer_cfg *cfg) {
  int ctl[2], out[2];
  if (pipe2(ctl, O_CLOEXEC) != 0) return pl_fail(L, errno, "pipe", NULL);
  if (pipe2(out, O_CLOEXEC) != 0) {
    int err = errno;
    close(ctl[0]); close(ctl[1]);
    return pl_fail(L, err, "pipe", NULL);
  }
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(ctl[0]); close(ctl[1]); close(out[0]); close(out[1]);
    return pl_fail(L, err, "fork", NULL);
  }
  if (pid == 0) {
    close_inherited(ctl[0], out[1]);
    cfg->ctl_fd = ctl[0];
    cfg->out_fd = out[1];
    _exit(pl_tracer_run(cfg));
  }
  close(ctl[0]);
  close(out[1]);
  a->child = pid;
  a->ctl = ctl[1];
  a->out = out[0];
  return 0;
}

/* core.attach_start(t) -> a | nil, what, errno */
/* The layout of Lua release `rel` as lua_ident spells it ("5.4.4"), or NULL. */
static const pl_lua_layout *layout_named(const char *rel) {
  char ident[32];
  snprintf(ident, sizeof ident, "Lua %s", rel);
  return pl_lua_layout_for(pl_lua_release_of(ident));
}

static int l_attach_start(lua_State *L) {
  static const char *const keys[] = { "pid", "tid", "attr", "release" };
  pl_tracer_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  luaL_checktype(L, 1, LUA_TTABLE);
  pl_check_keys(L, 1, keys, sizeof keys / sizeof keys[0], "core.attach_start: unknown key");
  lua_getfield(L, 1, "pid");
  cfg.pid = (pid_t)luaL_checkinteger(L, -1);
  lua_getfield(L, 1, "tid");
  cfg.tid = (pid_t)luaL_optinteger(L, -1, 0);
  lua_getfield(L, 1, "release");
  const char *rel = luaL_checkstring(L, -1);
  cfg.layout = layout_named(rel);
  if (!cfg.layout) return luaL_error(L, "core.attach_start: no layout for Lua %s", rel);
  lua_getfield(L, 1, "attr");
  luaL_checktype(L, -1, LUA_TTABLE);
  pl_attr_from_table(L, lua_gettop(L), &cfg.attr);
  lua_settop(L, 1);
  pl_attach *a = (pl_attach *)lua_newuserdatauv(L, sizeof *a, 0);
  a->child = 0;
  a->ctl = a->out = -1;
  a->target = cfg.pid;
  luaL_setmetatable(L, PL_ATTACH_MT);
  int rc = fork_tracer(L, a, &cfg);
  if (rc) return rc;
  char line[256];
  first_line(a->out, line, sizeof line);
  if (line[0] == 'R') return 1;
  int err = EIO;
  const char *what = "the tracer ended before it started";
  if (line[0] == 'E') {
    char *end;
    err = (int)strtol(line + 2, &end, 10);
    what = *end == ' ' ? end + 1 : "tracer";
  }
  lua_pushnil(L);
  lua_pushstring(L, what);
  lua_pushinteger(L, err);
  release(a);
  return 3;
}

/* a:finished() -> whether the tracer has written its result (the target
** is gone, or exec'd) */
static int a_finished(lua_State *L) {
  pl_attach *a = to_attach(L, 1);
  if (a->out < 0) { lua_pushboolean(L, 1); return 1; }
  struct pollfd p = { a->out, POLLIN, 0 };
  int rc;
  do rc = poll(&p, 1, 0); while (rc < 0 && errno == EINTR);
  lua_pushboolean(L, rc > 0);
  return 1;
}

static const char *const counts[] = { "samples", "outside", "signals", "threads", "stop_ns",
  "stop_max_ns", "execed", "nomem", "open_failed", "reads" };
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* Parses the tracer's result (s, n bytes) into the table on top. */
static int parse_result(lua_State *L, const char *s, size_t n) {
  const char *p = s, *end = s + n;
  if (n < 2 || p[0] != 'S') return 0;
  p += 1;
  for (size_t i = 0; i < NCOUNTS; i++) {
    char *e;
    unsigned long long v = strtoull(p, &e, 10);
    if (e == p) return 0;
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, counts[i]);
    p = e;
  }
  p = memchr(p, '\n', (size_t)(end - p));
  if (!p) return 0;
  p++;
  lua_newtable(L);
  while (p < end && *p == 'K') {
    char *e;
    unsigned long long count = strtoull(p + 1, &e, 10);
    unsigned long long len = strtoull(e, &e, 10);
    if (e >= end || *e != '\n' || len > (unsigned long long)(end - e - 1)) return 0;
    p = e + 1;
    lua_pushlstring(L, p, (size_t)len);
    lua_pushinteger(L, (lua_Integer)count);
    lua_rawset(L, -3);
    p += len;
  }
  lua_setfield(L, -2, "stacks");
  return p == end;
}

/* a:stop() -> result | nil, msg, errno */
static int a_stop(lua_State *L) {
  pl_attach *a = to_attach(L, 1);
  if (a->out < 0) return luaL_error(L, "attempt to stop a perf.attach that has stopped");
  luaL_Buffer b;
  close_fd(&a->ctl);
  luaL_buffinit(L, &b);
  drain(a, &b);
  luaL_pushresult(&b);
  reap(a);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  lua_newtable(L);
  if (!parse_result(L, s, n))
    return pl_fail(L, EIO, "perf.profile: the tracer's result", "it ended before it wrote it");
  return 1;
}

/* a:close(), and __gc, __close */
static int a_close(lua_State *L) {
  release(to_attach(L, 1));
  lua_pushboolean(L, 1);
  return 1;
}

static int a_tostring(lua_State *L) {
  pl_attach *a = to_attach(L, 1);
  if (a->out < 0) lua_pushfstring(L, "perf.attach (pid %d, stopped)", (int)a->target);
  else lua_pushfstring(L, "perf.attach (pid %d, tracer %d)", (int)a->target, (int)a->child);
  return 1;
}

/* core.attach_layout(release) -> whether Lua `release` ("5.4.4") is known */
static int l_attach_layout(lua_State *L) {
  lua_pushboolean(L, layout_named(luaL_checkstring(L, 1)) != NULL);
  return 1;
}

/* a:tracer() -> the tracer's pid (nil once reaped) */
static int a_tracer(lua_State *L) {
  pl_attach *a = to_attach(L, 1);
  if (a->child <= 0) return 0;
  lua_pushinteger(L, a->child);
  return 1;
}

static const luaL_Reg methods[] = {
  { "tracer", a_tracer },
  { "finished", a_finished }, { "stop", a_stop }, { "close", a_close }, { NULL, NULL }
};

static const luaL_Reg meta[] = {
  { "__gc", a_close }, { "__close", a_close }, { "__tostring", a_tostring }, { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "attach_start", l_attach_start }, { "attach_layout", l_attach_layout }, { NULL, NULL }
};

void pl_open_attach(lua_State *L) {
  pl_new_metatable(L, PL_ATTACH_MT, meta, methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
