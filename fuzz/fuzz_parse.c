/*
** fuzz_parse.c: libFuzzer target for the event syntax (perf.parse).
**
** The input is an event string, as a user types it after `perf stat -e`
** (seeds: fuzz/parse_seeds.txt, split into one file each by the Makefile).
** A Lua state loads the pure-Lua front (`require "perf"`, with the module's
** C sources linked in and preloaded as perf.core) and parses the string.
**
** perf.parse answers in two ways only: an attr table (a list of them for a
** group), or, for a malformed string, the error it documents, raised at
** its caller with the string quoted ("bad event \"...\": ..."; "\"...\": "
** when the machine cannot say what a name means). Any other error (a
** runtime error inside the parser, a stray argument error, a stack
** overflow), an attr without integer type and config, or one that cannot
** print aborts the run; so do a crash and, with -timeout, a hang.
**
** Parsing only reads sysfs, tracefs and procfs (and opens disabled
** events to probe the P modifier). The one write it could make, mounting
** tracefs where none is mounted, is taken away: this perf.core has no mount.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#ifndef PERF_LUA_DIR
#define PERF_LUA_DIR "lua"
#endif

int luaopen_perf_core(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
** The parser is Lua, which the sanitizer coverage does not see: a line
** hook counts each (previous line, line) step of the Lua code into extra
** counters that libFuzzer reads as coverage (the section it looks for).
*/
#define NCOUNTERS (1u << 16)
__attribute__((used, section("__libfuzzer_extra_counters")))
static uint8_t lua_steps[NCOUNTERS];
static uintptr_t prev_line;

static void count_line(lua_State *L, lua_Debug *ar) {
  if (!lua_getinfo(L, "S", ar)) return;
  /* the source string of a loaded chunk does not move while it lives */
  uintptr_t here = (uintptr_t)ar->source * 31u + (uintptr_t)ar->currentline * 2654435761u;
  lua_steps[(here ^ prev_line) % NCOUNTERS]++;
  prev_line = here >> 1;
}

/* returns the function that checks one string */
static const char setup[] =
  "local dir, open_core = ...\n"
  "package.path = dir .. '/?.lua;' .. dir .. '/?/init.lua'\n"
  "package.cpath = ''\n"
  "package.preload['perf.core'] = function(...)\n"
  "  local core = open_core(...)\n"
  "  core.mount = nil\n"
  "  return core\n"
  "end\n"
  "local parse = require('perf').parse\n"
  "local function call(s) local r, msg = parse(s) return r, msg end\n"
  "local at = ('fuzz:%d: '):format(debug.getinfo(call, 'S').linedefined)\n"
  "local function attr(a)\n"
  "  if math.type(a.type) ~= 'integer' or math.type(a.config) ~= 'integer' then\n"
  "    error('an attr without integer type and config', 0)\n"
  "  end\n"
  "end\n"
  "return function(s)\n"
  "  local ok, r, msg = pcall(call, s)\n"
  "  if ok then\n"
  "    if r == nil then\n"
  "      if type(msg) ~= 'string' then error('nil without a message', 0) end\n"
  "      return\n"
  "    end\n"
  "    if type(r) ~= 'table' then error('a ' .. type(r) .. ', not an attr', 0) end\n"
  "    if r.group then for i = 1, #r do attr(r[i]) end else attr(r) end\n"
  "    if type(tostring(r)) ~= 'string' then error('does not print', 0) end\n"
  "    return\n"
  "  end\n"
  "  local q = ('%q'):format(s)\n"
  "  if type(r) == 'string' and (r:sub(1, #at + 12 + #q) == at .. 'bad event ' .. q .. ': '\n"
  "      or r:sub(1, #at + 2 + #q) == at .. q .. ': ') then\n"
  "    return\n"
  "  end\n"
  "  error('perf.parse(' .. q .. ') raised from inside: ' .. tostring(r), 0)\n"
  "end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int runs;
  if (!L) {
    L = luaL_newstate();
    if (!L) abort();
    luaL_openlibs(L);
    if (luaL_loadbufferx(L, setup, sizeof setup - 1, "=fuzz", "t") != LUA_OK) abort();
    lua_pushstring(L, PERF_LUA_DIR);
    lua_pushcfunction(L, luaopen_perf_core);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
      fprintf(stderr, "%s\n", lua_tostring(L, -1));
      abort();
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "fuzz.check");
  }
  lua_settop(L, 0);
  prev_line = 0;
  lua_sethook(L, count_line, LUA_MASKLINE, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, "fuzz.check");
  lua_pushlstring(L, (const char *)data, size);
  int status = lua_pcall(L, 1, 0, 0);
  lua_sethook(L, NULL, 0, 0);
  if (status != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    abort();
  }
  if (++runs % 256 == 0) lua_gc(L, LUA_GCCOLLECT);
  return 0;
}
