/*
** attach_lua.c: the Lua stack of a thread of another process, stopped at
** an overflow, as a stack key (profile.c's format), read through the
** layout of its Lua release (lua_layout.h).
**
** The running lua_State is found as the in-process locator finds it: a
** value in the thread's registers or on its C stack (from the stack
** pointer up) that is a thread object (header tag LUA_VTHREAD) whose l_G
** points to a global_State whose mainthread's l_G points back
** (self-consistent). Of those, the ones that run (status LUA_OK with a
** call under way: ci is not &base_ci) are the resume chain of this OS
** thread. One whose current call is a Lua function is the innermost (a
** coroutine is resumed from a C call: coroutine.resume, lua_resume);
** otherwise the innermost is the one with the most nested calls (lua_resume
** starts a coroutine's count from its resumer's, ldo.c; 5.4.0 and 5.4.1
** count down). The chain is charged from it outwards to the main thread,
** as the in-process profiler charges a coroutine with the frames of
** whoever resumed it. Addresses that were no lua_State are remembered for
** a while, so a stack scan reads only what it has not seen.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach_walk.h"

#define MAXCHAIN 16             /* lua_States of one resume chain */
#define MAXCHECKS 128           /* new addresses checked per sample */

pl_luawalk *pl_luawalk_new(pl_remote *mem, const pl_lua_layout *layout) {
  pl_luawalk *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->mem = mem;
  w->lay = layout;
  return w;
}

void pl_luawalk_free(pl_luawalk *w) {
  if (!w) return;
  pl_protos_free(w);
  free(w);
}

/* ---- the lua_State ---- */

static int global_index(const pl_luawalk *w, uint64_t G) {
  for (int i = 0; i < w->nglobals; i++) if (w->globals[i] == G) return i;
  return -1;
}

/* Whether G is a global_State: its mainthread is a thread whose l_G is G. */
static int check_global(pl_luawalk *w, uint64_t G) {
  const pl_lua_layout *y = w->lay;
  unsigned char m[32];
  uint64_t main;
  if (global_index(w, G) >= 0) return 1;
  if ((G & 7) || pl_remote_read(w->mem, G + y->g_mainthread, &main, 8) != 0 || (main & 7)) return 0;
  if (pl_remote_read(w->mem, main, m, sizeof m) != 0) return 0;
  if (m[PL_LUA_GC_TT] != PL_LUA_TAG_THREAD || pl_u64(m, y->th_l_G) != G) return 0;
  if (w->nglobals < MAXGLOBALS) {
    w->mains[w->nglobals] = main;
    w->globals[w->nglobals++] = G;
  }
  return 1;
}

static int plausible(const pl_luawalk *w, uint64_t v) {
  return v >= 0x10000 && !(v & 7) && v < (1ULL << 56) && w->notl[pl_addr_slot(v, 12)] != v;
}

/* Whether v is a running lua_State (filling c); remembers the ones that are
** no lua_State at all. */
static int check_state(pl_luawalk *w, uint64_t v, pl_lcand *c) {
  const pl_lua_layout *y = w->lay;
  unsigned char h[256];
  if (!plausible(w, v) || (size_t)y->th_nCcalls + 4 > sizeof h) return 0;
  if (pl_remote_read(w->mem, v, h, (size_t)y->th_nCcalls + 4) != 0 ||
      h[PL_LUA_GC_TT] != PL_LUA_TAG_THREAD || !check_global(w, pl_u64(h, y->th_l_G))) {
    w->notl[pl_addr_slot(v, 12)] = v;
    return 0;
  }
  uint32_t cc;
  memcpy(&cc, h + y->th_nCcalls, sizeof cc);
  c->L = v;
  c->G = pl_u64(h, y->th_l_G);
  c->ci = pl_u64(h, y->th_ci);
  c->ccalls = cc & 0xffff;
  return h[y->th_status] == 0 && c->ci != 0 && c->ci != v + y->th_base_ci;
}

/* Adds c to the chain unless it is there; returns the chain's size. */
static int add_candidate(pl_lcand *chain, int n, const pl_lcand *c) {
  for (int i = 0; i < n; i++) if (chain[i].L == c->L) return n;
  if (n < MAXCHAIN) chain[n++] = *c;
  return n;
}

/* Whether a runs inside b (more nested calls than b). */
static int inner(const pl_luawalk *w, const pl_lcand *a, const pl_lcand *b) {
  return w->lay->ccalls_down ? a->ccalls < b->ccalls : a->ccalls > b->ccalls;
}

/* Candidates from the C stack, after the n found already; the new size.
** With `until`, the scan ends at the first word that is that state: what
** runs inside it (a coroutine it resumed) has its frames nearer the stack
** pointer than its own. */
static int scan_stack(pl_luawalk *w, uint64_t sp, pl_lcand *chain, int n, uint64_t until) {
  pl_lcand c;
  int checks = 0;
  size_t want = until ? 4096 : sizeof w->stack;
  size_t got = pl_remote_read_upto(w->mem, sp, w->stack, want) / 8;
  if (until && got == want / 8) {                 /* read on when it is not there yet */
    int seen = 0;
    for (size_t i = 0; i < got && !seen; i++) seen = w->stack[i] == until;
    if (!seen) got = pl_remote_read_upto(w->mem, sp, w->stack, sizeof w->stack) / 8;
  }
  for (size_t i = 0; i < got && checks < MAXCHECKS; i++) {
    uint64_t v = w->stack[i];
    if (until && v == until) break;
    if (!plausible(w, v)) continue;
    int known = 0;
    for (int j = 0; j < n && !known; j++) known = chain[j].L == v;
    if (known) continue;
    checks++;
    if (check_state(w, v, &c)) n = add_candidate(chain, n, &c);
  }
  return n;
}

/* ---- the key ---- */

typedef struct keybuf { char *s; size_t n; int full; } keybuf;

static void put(keybuf *b, const char *s, size_t n) {
  if (b->full || b->n + n + 1 > PL_KEY_MAX) { b->full = 1; return; }
  memcpy(b->s + b->n, s, n);
  b->n += n;
}

/* Adds frames (innermost first), leading C frames left out as profile.c
** leaves them out; returns the frames added. */
static int add_frames(keybuf *b, const pl_frame *f, int n, int budget) {
  int added = 0, lead = 1;
  for (int i = 0; i < n && added < budget; i++) {
    char s[96];
    int k;
    if (!f[i].lua) {
      if (lead) continue;
      k = snprintf(s, sizeof s, "C@%llx\n", (unsigned long long)f[i].f);
      put(b, s, (size_t)k);
    } else {
      lead = 0;
      const pl_proto *p = f[i].p;
      put(b, p->linedefined == 0 ? "Lmain chunk\t" : "L\t", p->linedefined == 0 ? 12 : 2);
      put(b, p->source, strlen(p->source));
      k = snprintf(s, sizeof s, "\t%d\t%d\n", p->linedefined, f[i].line);
      put(b, s, (size_t)k);
    }
    added++;
  }
  return added;
}

/* The innermost state of the chain (its frames read into w->frames, nf). */
static int innermost(pl_luawalk *w, const uint64_t *regs, int nregs, uint64_t sp,
                     pl_lcand *chain, int *n, int *nf) {
  pl_lcand c;
  uint64_t until = 0;
  /* a register holding a state found innermost lately is tried first: if
  ** it runs Lua it is the innermost; if it runs C, only the stack below its
  ** first mention can hold a coroutine it resumed */
  for (int i = 0; i < nregs && !until; i++) {
    int recent = 0;
    for (int j = 0; j < 4; j++) recent |= regs[i] && regs[i] == w->recent[j];
    if (recent && check_state(w, regs[i], &c)) {
      *n = add_candidate(chain, *n, &c);
      *nf = pl_frames_read(w, &chain[*n - 1], regs, nregs, w->frames, MAXFRAMES);
      if (*nf > 0 && w->frames[0].lua) return *n - 1;
      until = c.L;
    }
  }
  if (!until) {
    for (int i = 0; i < nregs; i++)
      if (check_state(w, regs[i], &c)) *n = add_candidate(chain, *n, &c);
    for (int i = 0; i < *n; i++) {
      *nf = pl_frames_read(w, &chain[i], regs, nregs, w->frames, MAXFRAMES);
      if (*nf > 0 && w->frames[0].lua) return i;
    }
  }
  int had = *n;
  *n = scan_stack(w, sp, chain, *n, until);
  if (*n == 0) return -1;
  if (until && *n == had) return had - 1;        /* nothing runs inside it: frames read */
  int best = 0;
  for (int i = 1; i < *n; i++) if (inner(w, &chain[i], &chain[best])) best = i;
  *nf = pl_frames_read(w, &chain[best], regs, nregs, w->frames, MAXFRAMES);
  return best;
}

size_t pl_luawalk_key(pl_luawalk *w, const uint64_t *regs, int nregs, uint64_t sp, char *key) {
  pl_lcand chain[MAXCHAIN], c;
  int n = 0, nf = 0;
  if (++w->samples % CACHE_AGE == 0) {
    memset(w->notl, 0, sizeof w->notl);
    memset(w->closures, 0, sizeof w->closures);
  }
  int best = innermost(w, regs, nregs, sp, chain, &n, &nf);
  if (best < 0) return 0;
  if (w->recent[0] != chain[best].L) {
    memmove(w->recent + 1, w->recent, 3 * sizeof w->recent[0]);
    w->recent[0] = chain[best].L;
  }
  pl_lcand t = chain[0]; chain[0] = chain[best]; chain[best] = t;
  /* the rest of its chain: the states of its global_State that run, the
  ** main thread (found from the global_State) last */
  int gi = global_index(w, chain[0].G);
  uint64_t main = gi >= 0 ? w->mains[gi] : 0;
  if (main && main != chain[0].L && check_state(w, main, &c)) n = add_candidate(chain, n, &c);
  int m = 1;
  for (int i = 1; i < n; i++) if (chain[i].G == chain[0].G) chain[m++] = chain[i];
  n = m;
  for (int i = 2; i < n; i++)                     /* innermost first */
    for (int j = i; j > 1 && inner(w, &chain[j], &chain[j - 1]); j--) {
      t = chain[j]; chain[j] = chain[j - 1]; chain[j - 1] = t;
    }
  keybuf b = { key, 0, 0 };
  int budget = MAXFRAMES - add_frames(&b, w->frames, nf, MAXFRAMES);
  for (int i = 1; i < n && budget > 0; i++) {
    nf = pl_frames_read(w, &chain[i], NULL, 0, w->frames, MAXFRAMES);
    budget -= add_frames(&b, w->frames, nf, budget);
  }
  if (b.n == 0) put(&b, "C@0\n", 4);             /* no Lua frame of its own yet */
  return b.n;
}
