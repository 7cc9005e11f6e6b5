/*
** lua_layout.h: where Lua 5.4.x keeps what the profilers read in its
** internal structs (lstate.h, lobject.h), which no installed header
** gives. The one home of these facts, for reading the running process
** (profile.c's locator, lua_locate.c) and another process (attach).
**
** The offsets are for x86-64 and aarch64 builds with the default
** luaconf.h (LUA_EXTRASPACE = sizeof(void *), 64-bit lua_Integer and
** lua_Number, l_signalT = sig_atomic_t), as Debian and the Lua tarballs
** build. They were taken with offsetof from each release's own headers
** (github.com/lua/lua, tags v5.4.0 to v5.4.8); the releases share them
** except where a table row says otherwise:
**
**   5.4.0        lua_State.oldpc is a pointer before stack_last;
**                nCcalls counts down (CSTACKTHREAD - nested calls);
**                global_State.gcrunning (1: running) at 105
**   5.4.1        nCcalls counts down; lua_State has stacksize
**   5.4.2        lua_State has no tbclist
**   5.4.3        gcrunning at 106; from 5.4.3 gcstopem at 103 is set
**                while lgc.c's singlestep runs
**   5.4.4-5.4.8  gcstp (0: running) at 106; from 5.4.6 the stack
**                pointers are StkIdRel unions (the pointer, or an offset
**                while the stack is reallocated)
**
** Since a wrong table reads garbage, pl_lua_layout_check tests one
** against a live state before anything relies on it: l_G->mainthread is
** a thread of the same l_G, the thread's tt is a thread's, its ci is the
** running C function's CallInfo, whose func slot lies in its stack and
** holds that function.
**
** Reading: a pl_lua_mem says how to read memory (a callback, for
** process_vm_readv, /proc/PID/mem or plain loads) so that one set of
** helpers serves the running process and a remote one.
*/
#ifndef PL_LUA_LAYOUT_H
#define PL_LUA_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* ---- what every 5.4.x shares (lobject.h, lstate.h, lgc.h) ---- */

#define PL_LUA_TVALUE_SIZE   16       /* TValue and StackValue */
#define PL_LUA_TVALUE_TT      8       /* offset of tt_ */
#define PL_LUA_GC_TT          8       /* offset of tt in CommonHeader */
#define PL_LUA_TAG_THREAD     8       /* LUA_VTHREAD */
#define PL_LUA_TAG_THREAD_TV  (PL_LUA_TAG_THREAD | 0x40) /* ctb(): as a TValue's tt_ */
#define PL_LUA_TAG_LCF       22       /* LUA_VLCF, a light C function */
#define PL_LUA_TAG_CCL_TV   (38 | 0x40) /* ctb(LUA_VCCL), a C closure */
#define PL_LUA_TAG_LCL_TV    (6 | 0x40) /* ctb(LUA_VLCL), a Lua closure */
#define PL_LUA_CCL_F         24       /* CClosure.f */
#define PL_LUA_CCL_UPVALUE   32       /* CClosure.upvalue[0] */
#define PL_LUA_LCL_P         24       /* LClosure.p */
#define PL_LUA_CIST_C         2       /* CallInfo.callstatus: a C function */
#define PL_LUA_OK             0       /* lua_State.status of a running or normal thread */
/* global_State.gcstate (lgc.h) */
#define PL_LUA_GCS_PROPAGATE  0
#define PL_LUA_GCS_ATOMIC     2
#define PL_LUA_GCS_CALLFIN    7
#define PL_LUA_GCS_PAUSE      8
#define PL_LUA_KGC_GEN        1       /* global_State.gckind: generational */

/* Proto, TString (lobject.h): the same in every 5.4.x; what attach's
** frame reader (attach_proto.c) needs to name a function and its line */
#define PL_LUA_P_SIZECODE        24
#define PL_LUA_P_SIZELINEINFO    28
#define PL_LUA_P_SIZEABSLINEINFO 40
#define PL_LUA_P_LINEDEFINED     44
#define PL_LUA_P_CODE            64
#define PL_LUA_P_LINEINFO        88
#define PL_LUA_P_ABSLINEINFO     96
#define PL_LUA_P_SOURCE         112
#define PL_LUA_P_SIZE           128
#define PL_LUA_TS_SHRLEN         11       /* TString.shrlen (short strings) */
#define PL_LUA_TS_LNGLEN         16       /* TString.u.lnglen (long ones) */
#define PL_LUA_TS_CONTENTS       24
#define PL_LUA_TAG_SHRSTR      0x04       /* LUA_VSHRSTR, a TString's own tt */
#define PL_LUA_TAG_LNGSTR      0x14       /* LUA_VLNGSTR */
#define PL_LUA_ABSLINEINFO    (-0x80)     /* ldebug.c: a lineinfo byte meaning "see abslineinfo" */

/* ---- what differs between releases ---- */

typedef struct pl_lua_layout {
  const char *name;             /* "5.4.4-5.4.8" */
  int first, last;              /* LUA_VERSION_RELEASE_NUM range */
  /* lua_State */
  uint16_t th_status, th_l_G, th_ci, th_stack, th_stack_last, th_base_ci,
           th_hook, th_nCcalls, th_basehookcount, th_hookmask, th_size;
  /* CallInfo */
  uint16_t ci_func, ci_top, ci_previous, ci_next, ci_savedpc,
           ci_nresults, ci_callstatus, ci_size;
  /* global_State */
  uint16_t g_totalbytes, g_GCdebt, g_gcstate, g_gckind, g_gcrun,
           g_gcemergency, g_allgc, g_mainthread,
           g_gcstopem;          /* 1 inside lgc.c's singlestep; 0: no such field (5.4.0-5.4.2) */
  uint8_t ccalls_down;          /* nCcalls counts down (5.4.0, 5.4.1) */
  uint8_t gcrun_is_stop;        /* g_gcrun is gcstp (0: running), not gcrunning */
  uint8_t stack_moves_early;    /* the stack may be freed while ci->func still points
                                ** into it (5.4.0-5.4.2 realloc in place) */
} pl_lua_layout;

/* The layout of a release (LUA_VERSION_RELEASE_NUM, e.g. 50404), or NULL. */
const pl_lua_layout *pl_lua_layout_for(int release);
/* The release number in a lua_ident string ("$LuaVersion: Lua 5.4.4 ...")
** or a LUA_RELEASE string ("Lua 5.4.4"), or 0. */
int pl_lua_release_of(const char *ident);
/* The running Lua's release: its lua_ident when the process exports it,
** else the headers' LUA_VERSION_RELEASE_NUM. */
int pl_lua_running_release(void);

/* ---- reading memory ---- */

/* Reads len bytes at addr into buf: 0, or -1 when they cannot be read. */
typedef int (*pl_lua_read_fn)(void *ctx, uintptr_t addr, void *buf, size_t len);

typedef struct pl_lua_mem {
  pl_lua_read_fn read;
  void *ctx;
} pl_lua_mem;

static inline int pl_lua_read(const pl_lua_mem *m, uintptr_t addr, void *buf, size_t len) {
  return m->read(m->ctx, addr, buf, len);
}

/* The process's own memory, read so that a bad address fails instead of
** faulting (process_vm_readv on itself; /proc/self/mem where that is
** refused): async-signal-safe once pl_lua_self_mem_open succeeded.
** Returns 0 or an errno; pl_lua_self_mem_close undoes it. */
int pl_lua_self_mem_open(pl_lua_mem *m);
void pl_lua_self_mem_close(pl_lua_mem *m);
/* Plain loads: for memory known to be valid (a live state's own struct). */
extern const pl_lua_mem pl_lua_direct_mem;

/* ---- a thread, as read ---- */

typedef struct pl_lua_thread {
  uintptr_t addr;               /* the lua_State */
  uintptr_t G, ci;              /* l_G, ci */
  uint32_t nCcalls;
  uint8_t tt, status;
  uintptr_t func;               /* ci->func (a stack slot) */
  uint16_t callstatus;          /* ci->callstatus */
} pl_lua_thread;

/* Reads the thread at addr (its struct, its CallInfo): 0, or -1. */
int pl_lua_read_thread(const pl_lua_layout *lo, const pl_lua_mem *m, uintptr_t addr,
                       pl_lua_thread *t);
/* Whether t is a thread of global state G that is running or resuming
** another (status LUA_OK, ci not its base_ci). */
int pl_lua_thread_active(const pl_lua_layout *lo, const pl_lua_thread *t, uintptr_t G);
/* The C call depth of t, larger for threads resumed from it. */
uint32_t pl_lua_ccalls(const pl_lua_layout *lo, const pl_lua_thread *t);

/* Checks lo against L, a live thread running the light C function f
** (called from f itself): NULL if it matches, else what did not. */
struct lua_State;
const char *pl_lua_layout_check(const pl_lua_layout *lo, struct lua_State *L, uintptr_t f);

#endif
