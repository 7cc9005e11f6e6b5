/*
** stat_baseline.c: the C side of bench/stat.lua, built as a small Lua module
** (bench/stat_baseline.so): what perf.stat does for one command, written
** plainly in C, so the benchmark can set the Lua library's cost per command
** beside it in the same process.
**
**   base.stat(argv, configs) -> counts...
**     forks; the child waits on a pipe, then execs argv (PATH lookup); the
**     parent opens one counter per { type, config } of `configs` on the
**     child (disabled, enable_on_exec, inherit, the times in read_format),
**     lets it exec, waits for it and reads every counter
**   base.now() -> CLOCK_MONOTONIC in ns
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "lua.h"
#include "lauxlib.h"

#define MAX_ARGS 32
#define MAX_EVENTS 16

int luaopen_stat_baseline(lua_State *L);

static int open_counter(uint32_t type, uint64_t config, pid_t pid) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.disabled = 1;
  a.enable_on_exec = 1;
  a.inherit = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int run_stat(lua_State *L) {
  const char *argv[MAX_ARGS + 1];
  uint32_t types[MAX_EVENTS];
  uint64_t configs[MAX_EVENTS];
  int fds[MAX_EVENTS], go[2], n, nev, i, status;
  pid_t pid;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (int)lua_rawlen(L, 1);
  nev = (int)lua_rawlen(L, 2);
  luaL_argcheck(L, n >= 1 && n <= MAX_ARGS, 1, "1 to 32 arguments");
  luaL_argcheck(L, nev >= 1 && nev <= MAX_EVENTS, 2, "1 to 16 events");
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    argv[i] = luaL_checkstring(L, -1);     /* kept alive by the table */
    lua_pop(L, 1);
  }
  argv[n] = NULL;
  for (i = 0; i < nev; i++) {
    lua_rawgeti(L, 2, i + 1);
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    types[i] = (uint32_t)luaL_checkinteger(L, -2);
    configs[i] = (uint64_t)luaL_checkinteger(L, -1);
    lua_pop(L, 3);
  }
  if (pipe2(go, O_CLOEXEC) < 0) return luaL_error(L, "pipe: %s", strerror(errno));
  pid = fork();
  if (pid < 0) return luaL_error(L, "fork: %s", strerror(errno));
  if (pid == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(126);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(go[0]);
  for (i = 0; i < nev; i++) {
    fds[i] = open_counter(types[i], configs[i], pid);
    if (fds[i] < 0) {
      int err = errno;
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      while (i-- > 0) close(fds[i]);
      close(go[1]);
      return luaL_error(L, "perf_event_open: %s", strerror(err));
    }
  }
  if (write(go[1], "g", 1) != 1) return luaL_error(L, "write: %s", strerror(errno));
  close(go[1]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  for (i = 0; i < nev; i++) {
    uint64_t v[3] = {0, 0, 0};
    if (read(fds[i], v, sizeof v) != (ssize_t)sizeof v) v[0] = 0;
    close(fds[i]);
    lua_pushinteger(L, (lua_Integer)v[0]);
  }
  return nev;
}

static int now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

int luaopen_stat_baseline(lua_State *L) {
  static const luaL_Reg fns[] = {{"stat", run_stat}, {"now", now}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
