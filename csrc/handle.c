/*
** handle.c: the metatables of the handle types, made in one way, as
** liolib's createmeta makes the file handle's: luaL_newmetatable (which
** gives __name, used by the type checks, the error messages and the
** default tostring), the metamethods from one luaL_Reg table and the
** methods from another, in their own table behind __index.
*/
#include "perf_core.h"

void pl_new_metatable(lua_State *L, const char *name, const luaL_Reg *meta,
                      const luaL_Reg *methods) {
  int n = 0;
  if (!luaL_newmetatable(L, name)) return;  /* made already (show.c asks again) */
  luaL_setfuncs(L, meta, 0);
  if (!methods) return;
  while (methods[n].name) n++;
  lua_createtable(L, 0, n);
  luaL_setfuncs(L, methods, 0);
  /* an __index function of its own (fields computed on read) finds the
  ** methods in the field `methods` */
  int own = lua_getfield(L, -2, "__index") == LUA_TFUNCTION;
  lua_pop(L, 1);
  lua_setfield(L, -2, own ? "methods" : "__index");
}

void pl_add_methods(lua_State *L, const char *metatable, const luaL_Reg *m) {
  luaL_getmetatable(L, metatable);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, m, 0);
  lua_pop(L, 2);
}
