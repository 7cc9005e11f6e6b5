/*
** core.c: luaopen_perf_core, the only exported symbol.
*/
#include "perf_core.h"

PL_API int luaopen_perf_core(lua_State *L);

int luaopen_perf_core(lua_State *L) {
  lua_newtable(L);
  pl_open_attr(L);
  pl_open_event(L);
  pl_open_group(L);
  pl_open_spawn(L);
  pl_open_util(L);
  pl_open_mount(L);
  pl_open_consts(L);
  pl_open_ring(L);
  lua_pushliteral(L, "0.1");
  lua_setfield(L, -2, "version");
  return 1;
}
