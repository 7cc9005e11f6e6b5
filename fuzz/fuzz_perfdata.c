/*
** fuzz_perfdata.c: libFuzzer target for the perf.data reader.
**
** The input is a perf.data file (seeds: fuzz/seeds-perfdata, small files
** perf record wrote, normal and pipe mode, and with -z: compressed.data
** and compressed-pipe.data, whose records are zstd-compressed). It is written to a memfd and
** opened through perf.core.perfdata_open, as a user opens a file; when
** the open succeeds, every record is pushed (fresh tables and a reused
** one), the samples are read as values, and info() decodes the sections.
** A file the reader refuses must give nil and a message; nothing may read
** outside the file's bytes.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

int luaopen_perf_core(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char script[] =
  "local core, path = ...\n"
  "local f, msg = core.perfdata_open(path)\n"
  "if not f then assert(type(msg) == 'string' and msg:find('offset', 1, true), msg) return end\n"
  "local info = f:info()\n"
  "f:set_names({ 'a', 'b' })\n"
  "for r in f:records() do assert(r.type) end\n"
  "local t = {}\n"
  "for r in f:records(t) do assert(r.type) end\n"
  "pcall(function() for ip in f:samples('ip', 'tid', 'raw') do end end)\n"
  "f:close()\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int fd = -1;
  static char path[64];
  if (!L) {
    L = luaL_newstate();
    luaL_openlibs(L);
    luaL_requiref(L, "perf.core", luaopen_perf_core, 0);
    lua_setglobal(L, "core");
    fd = memfd_create("perfdata", 0);
    if (fd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
  lua_settop(L, 0);
  if (luaL_loadbufferx(L, script, sizeof script - 1, "=fuzz", "t") != LUA_OK) abort();
  lua_getglobal(L, "core");
  lua_pushstring(L, path);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    /* only the reader's own assertions may fail, never a crash */
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    abort();
  }
  lua_gc(L, LUA_GCCOLLECT);
  return 0;
}
