/*
** read_baseline.c: the C side of bench/read.lua, built as a small Lua
** module (bench/read_baseline.so) so that both sides read the very same
** event, in the same process, chunk after chunk.
**
**   base.loop(fd, n)  n read(2) calls on fd into a stack buffer, as a C
**                     program would make them
**   base.now()        CLOCK_MONOTONIC in ns, the clock both sides use
*/
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"

static int loop(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2), i;
  uint64_t buf[512], sum = 0;
  for (i = 0; i < n; i++) {
    if (read(fd, buf, sizeof buf) <= 0)
      return luaL_error(L, "read: %s", strerror(errno));
    sum += buf[0];
  }
  lua_pushinteger(L, (lua_Integer)sum);
  return 1;
}

static int now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

int luaopen_read_baseline(lua_State *L);

int luaopen_read_baseline(lua_State *L) {
  static const luaL_Reg fns[] = {{"loop", loop}, {"now", now}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
