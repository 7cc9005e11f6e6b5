/*
** profile_arm.h: the threads that carry the profiler's hook (profile_arm.c).
*/
#ifndef PL_PROFILE_ARM_H
#define PL_PROFILE_ARM_H

#include "lua.h"
#include "lua_locate.h"

/* Starts taking overflows for the state of L (the thread that starts;
** `running` is the light C function it is in): NULL, or why the running
** coroutine cannot be found here (then L takes every overflow). */
const char *pl_arm_start(lua_State *L, lua_Hook hook, lua_CFunction running);
/* n overflows at w: counted for the thread found running, which gets the
** hook. Async-signal-safe; nothing once stopped. */
void pl_arm_take(unsigned long n, const pl_lua_where *w);
/* In the hook on L: removes it (giving back the program's own hook) and
** returns the overflows L has pending, *gc of them taken while the
** collector was taking a step. */
unsigned long pl_arm_hooked(lua_State *L, unsigned long *gc);
/* After charging them: gives L's slot back unless more came. */
void pl_arm_done(lua_State *L);
/* The threads that resumed L, innermost first (at most max). */
int pl_arm_resumers(lua_State *L, lua_State **out, int max);
/* Stops taking overflows and disarms every thread still armed; returns
** the overflows that were not charged. */
unsigned long pl_arm_stop(void);
int pl_arm_running(void);
/* Whether the running coroutine and the collector are found (the layout matched). */
int pl_arm_located(void);

#endif
