/*
** lua_locate_self.h: the locator for the running process (lua_locate_self.c).
*/
#ifndef PL_LUA_LOCATE_SELF_H
#define PL_LUA_LOCATE_SELF_H

#include "lua.h"
#include "lua_locate.h"

#define PL_LUA_MAXREGS 32

/* Sets loc up for L's state, searching the calling OS thread's stack;
** `running` is the light C function L is in (the layout check). NULL, or
** why the locator cannot work here. */
const char *pl_lua_locator_self(lua_State *L, lua_CFunction running, pl_lua_locator *loc);
void pl_lua_locator_self_close(pl_lua_locator *loc);

/* Where to search: the interrupted registers and stack pointer of a
** signal's ucontext (NULL: nowhere), kept in regs. */
void pl_lua_where_uc(const void *uc, uintptr_t regs[PL_LUA_MAXREGS], pl_lua_where *w);

/* Where to search from the calling function: its stack. */
#define pl_lua_where_here(w) \
  ((w)->regs = NULL, (w)->nregs = 0, (w)->sp = (uintptr_t)__builtin_frame_address(0))

#endif
