/*
** profile_arm.c: which Lua threads carry the profiler's hook, and how
** many overflows each has pending (profile_arm.h).
**
** An overflow (a signal handler, or the allocator) finds the thread that
** was running with the locator (lua_locate.h), whoever resumed it and
** whenever it was made, counts the overflow in that thread's slot and
** sets the hook on it with lua_sethook (ldebug.c documents it as safe in
** a signal handler). The hook, at that thread's next VM step, takes the
** count and gives the slot back. A thread that never runs again keeps its
** slot: stop disarms every thread still holding one, after checking that
** it still exists (the collector's allgc list), so nothing of a profiler
** stays armed however it ends. Where the locator cannot work (a Lua
** release without a layout), overflows go to the thread that started.
**
** Slots are claimed and released with atomics: the handler can interrupt
** the hook or stop at any point on the same OS thread, never the reverse.
*/
#include <stdatomic.h>
#include <string.h>

#include "profile_arm.h"
#include "lua_locate_self.h"

#define MAXARMED 32
#define HOOKMASK (LUA_MASKCOUNT | LUA_MASKCALL | LUA_MASKRET)

enum { FREE, CLAIMING, ARMED, RELEASING };

typedef struct slot {
  atomic_int state;
  _Atomic(lua_State *) L;
  atomic_ulong pending;         /* overflows not charged yet */
  atomic_ulong pending_gc;      /* of which taken while the collector ran */
  lua_Hook saved;               /* the program's own hook on L, or NULL */
  int saved_mask, saved_count;
} slot;

static struct {
  atomic_int running;           /* overflows are taken */
  lua_Hook hook;
  lua_State *base;              /* the thread that started */
  int located;                  /* the locator works */
  pl_lua_locator loc;
  atomic_ulong unarmed;         /* overflows no slot could take */
  _Atomic(lua_State *) last;    /* the thread the last search found (unmoved) */
  slot slots[MAXARMED];
} A;

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "slots must be lock-free");

static slot *slot_of(lua_State *L) {
  for (int i = 0; i < MAXARMED; i++)
    if (atomic_load(&A.slots[i].state) == ARMED && atomic_load(&A.slots[i].L) == L)
      return &A.slots[i];
  return NULL;
}

static slot *claim(lua_State *L) {
  for (int i = 0; i < MAXARMED; i++) {
    int expect = FREE;
    slot *s = &A.slots[i];
    if (atomic_compare_exchange_strong(&s->state, &expect, CLAIMING)) {
      atomic_store(&s->L, L);
      atomic_store(&s->pending, 0);
      atomic_store(&s->pending_gc, 0);
      s->saved = NULL;
      atomic_store(&s->state, ARMED);
      return s;
    }
  }
  return NULL;
}

/* Sets the hook on L, keeping a hook the program had there in s. */
static void arm(lua_State *L, slot *s) {
  lua_Hook h = lua_gethook(L);
  if (h == A.hook) return;
  if (h) {
    s->saved = h;
    s->saved_mask = lua_gethookmask(L);
    s->saved_count = lua_gethookcount(L);
  }
  lua_sethook(L, A.hook, HOOKMASK, 1);
}

/* Removes the hook from L, giving back the program's own (kept in s). */
static void disarm(lua_State *L, slot *s) {
  if (lua_gethook(L) != A.hook) return;
  if (s && s->saved) {
    lua_Hook h = s->saved;
    s->saved = NULL;
    lua_sethook(L, h, s->saved_mask, s->saved_count);
  } else {
    lua_sethook(L, NULL, 0, 0);
  }
}

/* Overflows that come faster than the locator reads memory (a clock event
** at a high rate, a sanitizer build): their realtime signals are queued
** while the handler runs, and left to pile up they fill the user's whole
** queue of pending signals (then every process of that user loses its
** timers and signals). So one search per VM step: while the thread the
** last search found has its overflows pending still (its hook has not run
** a step since), the program has not moved from where that search looked,
** and a new overflow goes to that thread without searching (missed: a C
** function of it that makes the event fire and then resumes another
** coroutine with lua_resume before returning). The check
** makes no system call: a syscall tracepoint would fire on it (raw_syscalls,
** at period 1, for ever). */
static lua_State *unmoved(void) {
  lua_State *R = atomic_load(&A.last);
  slot *s = R ? slot_of(R) : NULL;
  return s && atomic_load(&s->pending) > 0 ? R : NULL;
}

void pl_arm_take(unsigned long n, const pl_lua_where *w) {
  if (n == 0 || !atomic_load(&A.running)) return;
  lua_State *R = NULL;
  int gc = 0;
  if (A.located) {
    R = unmoved();
    if (!R) {
      pl_lua_chain c;
      R = (lua_State *)pl_lua_locate(&A.loc, w, &c);
      atomic_store(&A.last, R ? R : A.base);
    }
    gc = pl_lua_collecting(&A.loc);
  }
  if (!R) R = A.base;
  slot *s = slot_of(R);
  if (!s) s = claim(R);
  if (!s) { atomic_fetch_add(&A.unarmed, n); return; }
  if (gc) atomic_fetch_add(&s->pending_gc, n);   /* before pending: the hook takes both */
  atomic_fetch_add(&s->pending, n);
  arm(R, s);
}

unsigned long pl_arm_hooked(lua_State *L, unsigned long *gc) {
  slot *s = slot_of(L);
  disarm(L, s);
  *gc = 0;
  if (!s) return 0;
  unsigned long n = atomic_exchange(&s->pending, 0);
  unsigned long g = atomic_exchange(&s->pending_gc, 0);
  /* an overflow between the two exchanges counted its gc part only:
  ** keep it for the next hook */
  if (g > n) { atomic_fetch_add(&s->pending_gc, g - n); g = n; }
  *gc = g;
  return n;
}

void pl_arm_done(lua_State *L) {
  slot *s = slot_of(L);
  if (!s) return;
  atomic_store(&s->state, RELEASING);
  /* an overflow while charging armed L again: its hook comes next */
  if (atomic_load(&s->pending)) { atomic_store(&s->state, ARMED); return; }
  atomic_store(&s->L, NULL);
  atomic_store(&s->state, FREE);
  /* an overflow that interrupted the allocator's claim made L a second slot */
  slot *t = slot_of(L);
  if (t && atomic_load(&t->pending)) arm(L, t);
}

int pl_arm_resumers(lua_State *L, lua_State **out, int max) {
  if (!A.located) return 0;
  pl_lua_chain c;
  pl_lua_where w;
  pl_lua_where_here(&w);
  pl_lua_locate(&A.loc, &w, &c);
  int n = 0;
  for (int i = c.n - 1; i >= 0 && n < max; i--)
    if (c.th[i] != (uintptr_t)L) out[n++] = (lua_State *)c.th[i];
  return n;
}

const char *pl_arm_start(lua_State *L, lua_Hook hook, lua_CFunction running) {
  if (atomic_load(&A.running)) pl_arm_stop();
  const char *why = pl_lua_locator_self(L, running, &A.loc);   /* may raise */
  A.located = why == NULL;
  A.hook = hook;
  A.base = L;
  atomic_store(&A.last, NULL);
  atomic_store(&A.unarmed, 0);
  for (int i = 0; i < MAXARMED; i++) {
    atomic_store(&A.slots[i].L, NULL);
    atomic_store(&A.slots[i].state, FREE);
  }
  atomic_store(&A.running, 1);
  return why;
}

/* Whether T may be touched: it still exists. */
static int alive(lua_State *T, const pl_lua_chain *c) {
  if (T == A.base) return 1;
  if (!A.located) return 0;
  for (int i = 0; i < c->n; i++)
    if (c->th[i] == (uintptr_t)T) return 1;
  return pl_lua_is_thread(&A.loc, (uintptr_t)T);
}

unsigned long pl_arm_stop(void) {
  if (!atomic_exchange(&A.running, 0)) return 0;
  unsigned long lost = atomic_exchange(&A.unarmed, 0);
  pl_lua_chain c = { 0, { 0 }, 0 };
  if (A.located) {
    pl_lua_where w;
    pl_lua_where_here(&w);
    pl_lua_locate(&A.loc, &w, &c);
  }
  for (int i = 0; i < MAXARMED; i++) {
    slot *s = &A.slots[i];
    if (atomic_load(&s->state) == FREE) continue;
    lua_State *T = atomic_load(&s->L);
    lost += atomic_exchange(&s->pending, 0);
    atomic_store(&s->pending_gc, 0);
    if (T && alive(T, &c)) disarm(T, s);
    atomic_store(&s->L, NULL);
    atomic_store(&s->state, FREE);
  }
  if (A.base) disarm(A.base, NULL);
  if (A.located) pl_lua_locator_self_close(&A.loc);
  A.located = 0;
  A.base = NULL;
  return lost;
}

int pl_arm_running(void) { return atomic_load(&A.running); }

int pl_arm_located(void) { return A.located; }
