/*
** lua_locate.h: the running Lua thread and its resumers, found from the
** state's own structures (lua_locate.c says how). Works on the running
** process or, with remote readers, on another one.
*/
#ifndef PL_LUA_LOCATE_H
#define PL_LUA_LOCATE_H

#include "lua_layout.h"

#define PL_LUA_MAXCHAIN 32      /* resumes followed */
#define PL_LUA_MAXQUIET 4       /* text ranges whose C functions resume nothing */

typedef struct pl_lua_locator {
  const pl_lua_layout *lo;
  pl_lua_mem live;              /* reads of memory known to be live */
  pl_lua_mem safe;              /* reads that fail, not fault, on a bad address */
  uintptr_t G, main;            /* the global_State, its main thread */
  uintptr_t coresume, auxwrap;  /* lcorolib's luaB_coresume and auxwrap */
  int nquiet;                   /* code of the Lua library, of this module */
  uintptr_t quiet_lo[PL_LUA_MAXQUIET], quiet_hi[PL_LUA_MAXQUIET];
  uintptr_t stack_lo, stack_hi; /* the C stack searched */
} pl_lua_locator;

/* Where the search looks: interrupted registers and stack pointer. */
typedef struct pl_lua_where {
  const uintptr_t *regs;
  int nregs;
  uintptr_t sp;                 /* 0: no stack */
} pl_lua_where;

typedef struct pl_lua_chain {
  int n;                        /* threads, outermost first, running last */
  uintptr_t th[PL_LUA_MAXCHAIN];
  int searched;                 /* registers and stack were searched */
} pl_lua_chain;

/* The running thread (chain->th[chain->n - 1]), or 0 when none is found.
** Async-signal-safe when the readers are. */
uintptr_t pl_lua_locate(const pl_lua_locator *loc, const pl_lua_where *w, pl_lua_chain *chain);

/* Whether the collector is taking a step: lgc.c's singlestep sets
** gcstopem (5.4.3 and later: every incremental step, full collections
** too), an emergency collection gcemergency; for the generational mode
** and older releases, luaC_step runs while GCdebt is positive and the
** collector is not stopped. Async-signal-safe when loc->live is. */
int pl_lua_collecting(const pl_lua_locator *loc);

/* Whether T is a thread of the state, alive (the main thread, or one in
** the collector's allgc list). O(objects): not for a signal handler. */
int pl_lua_is_thread(const pl_lua_locator *loc, uintptr_t T);

#endif
