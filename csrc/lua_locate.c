/*
** lua_locate.c: which Lua thread is running, read from the state's own
** structures (lua_layout.h) at any instant, a signal handler included.
**
** Only one thread of a Lua state runs at a time, and the threads that are
** neither suspended nor dead (status LUA_OK, ci not &base_ci) form one
** chain: the main thread (or a thread a C host runs) resumed one, which
** resumed the next, ... down to the running one. Each of the others is
** inside the C function that resumed (lapi.c's lua_resume is only called
** from C). The chain is walked down from the main thread:
**
** - a thread whose CallInfo is a Lua function's runs;
** - one inside lcorolib's resume (coroutine.resume, a cached copy alike)
**   resumes the thread in its first argument slot, one inside the
**   function coroutine.wrap made resumes its first upvalue;
** - one inside another C function of the Lua library or of this module
**   runs (they resume nothing);
** - one inside any other C function may have called lua_resume itself:
**   the interrupted registers and the C stack above the stack pointer are
**   searched for active threads of the same global state (read with
**   loc->safe, which fails instead of faulting on a bad address), and the
**   deepest (largest C call count: lua_resume starts a coroutine's count
**   at its resumer's) continues the walk. The same search starts the walk
**   when the main thread is idle (a host resuming from outside any call).
**
** loc->live reads what is known to be live (in the running process: plain
** loads): the main thread, the threads a live stack slot or upvalue holds,
** their CallInfos, the C stack above the stack pointer. Stack slots are
** read only inside the thread's current stack (while ldo.c's
** luaD_reallocstack moves a stack, ci->func points outside it or, from
** 5.4.5, holds an offset), and with loc->safe where the stack may be freed
** before its pointers are corrected (5.4.0-5.4.2). Candidates from the
** search are read with loc->safe. A remote reader gives both readers the
** same callback (attach).
*/
#include <string.h>

#include "lua_locate.h"

#define MAXCAND 24              /* distinct candidate values validated per search */
#define SCANWORDS 2048          /* stack words searched above the stack pointer */
#define EXTRA_SLOTS 5           /* lstate.h's EXTRA_STACK */

/* A pointer at addr, known to be readable (loc->live): 0 if not. */
static uintptr_t load_ptr(const pl_lua_locator *loc, uintptr_t addr) {
  uintptr_t v;
  return pl_lua_read(&loc->live, addr, &v, sizeof v) == 0 ? v : 0;
}

/* Reads the TValue at slot of thread T into value/tag, if the slot lies in
** T's current stack: 0, or -1. */
static int read_slot(const pl_lua_locator *loc, uintptr_t T, uintptr_t slot,
                     uintptr_t *value, uint8_t *tag) {
  const pl_lua_layout *lo = loc->lo;
  uintptr_t stack = load_ptr(loc, T + lo->th_stack), last = load_ptr(loc, T + lo->th_stack_last);
  if (slot < stack || slot + PL_LUA_TVALUE_SIZE > last + EXTRA_SLOTS * PL_LUA_TVALUE_SIZE ||
      (slot - stack) % PL_LUA_TVALUE_SIZE != 0)
    return -1;
  unsigned char tv[PL_LUA_TVALUE_SIZE];
  if (pl_lua_read(lo->stack_moves_early ? &loc->safe : &loc->live, slot, tv, sizeof tv) != 0)
    return -1;
  memcpy(value, tv, sizeof *value);
  *tag = tv[PL_LUA_TVALUE_TT];
  return 0;
}

/* The C function t is in: its address (0 if unknown); *resumed gets the
** thread it resumes when it is lcorolib's resume or a wrap function. */
static uintptr_t c_function(const pl_lua_locator *loc, const pl_lua_thread *t, uintptr_t *resumed) {
  uintptr_t v, arg;
  uint8_t tag, argtag;
  *resumed = 0;
  if (read_slot(loc, t->addr, t->func, &v, &tag) != 0) return 0;
  if (tag == PL_LUA_TAG_LCF) {
    if (v == loc->coresume &&
        read_slot(loc, t->addr, t->func + PL_LUA_TVALUE_SIZE, &arg, &argtag) == 0 &&
        argtag == PL_LUA_TAG_THREAD_TV)
      *resumed = arg;
    return v;
  }
  if (tag != PL_LUA_TAG_CCL_TV || v == 0) return 0;
  uintptr_t f = load_ptr(loc, v + PL_LUA_CCL_F);      /* a live closure */
  unsigned char up[PL_LUA_TVALUE_SIZE];
  if (f && f == loc->auxwrap &&
      pl_lua_read(&loc->live, v + PL_LUA_CCL_UPVALUE, up, sizeof up) == 0 &&
      up[PL_LUA_TVALUE_TT] == PL_LUA_TAG_THREAD_TV)
    memcpy(resumed, up, sizeof *resumed);
  return f;
}

static int resumes_nothing(const pl_lua_locator *loc, uintptr_t f) {
  for (int i = 0; i < loc->nquiet; i++)
    if (f >= loc->quiet_lo[i] && f < loc->quiet_hi[i]) return 1;
  return 0;
}

static int in_chain(const pl_lua_chain *c, uintptr_t T) {
  for (int i = 0; i < c->n; i++)
    if (c->th[i] == T) return 1;
  return 0;
}

/* Whether x is deeper in the resume chain than y (C call counts). */
static int deeper(const pl_lua_layout *lo, const pl_lua_thread *x, const pl_lua_thread *y) {
  return pl_lua_ccalls(lo, x) > pl_lua_ccalls(lo, y);
}

/* Adds v to the candidates if it may be a thread not seen yet. */
static void consider(const pl_lua_locator *loc, uintptr_t v, uintptr_t *cand, int *n) {
  if (v < 4096 || (v & 7) != 0 || (v >= loc->stack_lo && v < loc->stack_hi)) return;
  if (resumes_nothing(loc, v)) return;                 /* code, not data */
  for (int i = 0; i < *n; i++)
    if (cand[i] == v) return;
  cand[(*n)++] = v;
}

/* Searches the registers and the stack above sp for the deepest active
** thread not in the chain and deeper than `above` (NULL: any). */
static int search(const pl_lua_locator *loc, const pl_lua_where *w, const pl_lua_chain *c,
                  const pl_lua_thread *above, pl_lua_thread *found) {
  uintptr_t cand[MAXCAND];
  int n = 0, have = 0;
  for (int i = 0; i < w->nregs && n < MAXCAND; i++) consider(loc, w->regs[i], cand, &n);
  if (w->sp >= loc->stack_lo && w->sp < loc->stack_hi && (w->sp & 7) == 0) {
    uintptr_t end = loc->stack_hi, words[64];
    if ((end - w->sp) / 8 > SCANWORDS) end = w->sp + 8 * SCANWORDS;
    for (uintptr_t p = w->sp; p < end && n < MAXCAND; p += sizeof words) {
      size_t len = end - p < sizeof words ? end - p : sizeof words;
      if (pl_lua_read(&loc->live, p, words, len) != 0) break;
      for (size_t i = 0; i < len / 8 && n < MAXCAND; i++) consider(loc, words[i], cand, &n);
    }
  }
  for (int i = 0; i < n; i++) {
    pl_lua_thread t;
    if (in_chain(c, cand[i])) continue;
    if (pl_lua_read_thread(loc->lo, &loc->safe, cand[i], &t) != 0) continue;
    if (!pl_lua_thread_active(loc->lo, &t, loc->G)) continue;
    if (above && !deeper(loc->lo, &t, above)) continue;
    if (!have || deeper(loc->lo, &t, found)) { *found = t; have = 1; }
  }
  return have;
}

uintptr_t pl_lua_locate(const pl_lua_locator *loc, const pl_lua_where *w, pl_lua_chain *c) {
  const pl_lua_layout *lo = loc->lo;
  pl_lua_thread t;
  c->n = 0;
  c->searched = 0;
  if (pl_lua_read_thread(lo, &loc->live, loc->main, &t) != 0) return 0;
  if (!pl_lua_thread_active(lo, &t, loc->G)) {        /* the main thread is idle */
    c->searched = 1;
    if (!search(loc, w, c, NULL, &t)) return 0;
  }
  for (;;) {
    c->th[c->n++] = t.addr;
    if (!(t.callstatus & PL_LUA_CIST_C) || c->n == PL_LUA_MAXCHAIN) return t.addr;
    uintptr_t next;
    uintptr_t f = c_function(loc, &t, &next);
    pl_lua_thread n;
    if (next) {
      /* a live slot or upvalue holds it: a live thread, read directly */
      if (in_chain(c, next) || pl_lua_read_thread(lo, &loc->live, next, &n) != 0 ||
          !pl_lua_thread_active(lo, &n, loc->G))
        return t.addr;                /* not started yet, or yielding: t runs */
    } else if (f && resumes_nothing(loc, f)) {
      return t.addr;
    } else {
      c->searched = 1;
      if (!search(loc, w, c, &t, &n)) return t.addr;
    }
    t = n;
  }
}

int pl_lua_is_thread(const pl_lua_locator *loc, uintptr_t T) {
  const pl_lua_layout *lo = loc->lo;
  if (T == loc->main) return 1;
  for (uintptr_t o = load_ptr(loc, loc->G + lo->g_allgc); o; o = load_ptr(loc, o)) {
    uint8_t tt;
    if (o == T) return pl_lua_read(&loc->live, o + PL_LUA_GC_TT, &tt, 1) == 0 && tt == PL_LUA_TAG_THREAD;
  }
  return 0;
}

int pl_lua_collecting(const pl_lua_locator *loc) {
  const pl_lua_layout *lo = loc->lo;
  int64_t debt;
  uint8_t run, emergency, kind, stopem = 0;
  if (pl_lua_read(&loc->live, loc->G + lo->g_GCdebt, &debt, sizeof debt) != 0 ||
      pl_lua_read(&loc->live, loc->G + lo->g_gcrun, &run, 1) != 0 ||
      pl_lua_read(&loc->live, loc->G + lo->g_gcemergency, &emergency, 1) != 0 ||
      pl_lua_read(&loc->live, loc->G + lo->g_gckind, &kind, 1) != 0 ||
      (lo->g_gcstopem && pl_lua_read(&loc->live, loc->G + lo->g_gcstopem, &stopem, 1) != 0))
    return 0;
  if (emergency || stopem) return 1;
  /* the incremental collector's steps all set gcstopem (5.4.3 and later);
  ** otherwise a positive debt while the collector runs means a step */
  if (lo->g_gcstopem && kind != PL_LUA_KGC_GEN) return 0;
  return debt > 0 && (lo->gcrun_is_stop ? run == 0 : run != 0);
}
