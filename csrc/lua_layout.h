/*
** lua_layout.h: where the fields of Lua 5.4's internal structs lie, for
** each released 5.4.x, on LP64 (x86-64, aarch64). They are read from a
** lua_State that is not ours: another process's (attach*.c).
**
** The offsets were taken with offsetof from each release's own headers
** (lstate.h, lobject.h) built for x86-64; the tags are lobject.h's
** variant tags with BIT_ISCOLLECTABLE (ctb) where the value is collected.
** 5.4.0 and 5.4.1 count nCcalls down from the limit; 5.4.2 and later up.
*/
#ifndef PERF_LUA_LAYOUT_H
#define PERF_LUA_LAYOUT_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef struct pl_lua_layout {
  const char *release;          /* "5.4.4" */
  /* lua_State */
  uint16_t L_tt, L_status, L_l_G, L_ci, L_base_ci, L_nCcalls;
  uint8_t ccalls_down;          /* nCcalls counts down (5.4.0, 5.4.1) */
  /* global_State */
  uint16_t G_mainthread;
  /* CallInfo */
  uint16_t CI_func, CI_previous, CI_savedpc, CI_size;
  /* closures: LClosure.p, CClosure.f (a light C function is the value) */
  uint16_t LCL_p, CCL_f;
  /* Proto */
  uint16_t P_linedefined, P_sizecode, P_sizelineinfo, P_sizeabslineinfo,
           P_code, P_lineinfo, P_abslineinfo, P_source, P_size;
  /* TString: shrlen (short strings), u.lnglen (long ones), contents */
  uint16_t TS_shrlen, TS_lnglen, TS_contents;
  /* TValue: value at 0, tag byte at TV_tt; a stack slot is TV_size bytes */
  uint16_t TV_tt, TV_size;
  uint8_t tag_thread, tag_lcl, tag_ccl, tag_lcf, tag_shrstr, tag_lngstr;
  /* ldebug.c's line information: a lineinfo byte of ABSLINEINFO means
  ** "see abslineinfo", whose entries are { int pc; int line; } */
  int8_t abslineinfo_mark;
} pl_lua_layout;

/* The layout of release "5.4.N" (as lua_ident spells it), or NULL. */
const pl_lua_layout *pl_lua_layout_find(const char *release);

#pragma GCC visibility pop

#endif
