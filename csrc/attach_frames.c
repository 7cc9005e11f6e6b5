/*
** attach_frames.c: the calls of a remote lua_State, from L->ci back along
** ci->previous to its base_ci, with as few reads of the target as can be:
** each read of another process costs microseconds while the thread waits.
**
** - CallInfos are allocated one by one (luaE_extendCI) and kept: where a
**   state's lay is remembered, and that span is read in one go; one found
**   outside it is read alone and widens it for the next sample.
** - The func slots of all calls lie in the state's Lua stack: the span
**   they cover is read in one go.
** - A closure's Proto (or C function) is remembered by the closure's
**   address; a Lua frame's saved pc inside that Proto's code confirms it
**   (else the closure is read again).
** A frame's pc is ci->u.l.savedpc, which luaV_execute stores before each
** call and each operation that can raise; in the innermost frame, when
** the thread was stopped inside luaV_execute between two such stores, the
** VM's own pc is in a register: a register holding the one address inside
** that function's code (4-byte aligned) is taken as the pc, else savedpc.
*/
#include <string.h>

#include "attach_walk.h"

#define CI_MAX 64               /* bytes of a CallInfo kept */

/* The pc of the innermost Lua frame from the registers: the one value that
** points just past an instruction of its code; -1 if none or several. */
static int pc_from_regs(const pl_proto *p, const uint64_t *regs, int nregs) {
  uint64_t found = 0;
  for (int i = 0; i < nregs; i++) {
    uint64_t v = regs[i];
    if (v > p->code && v <= p->code + 4 * (uint64_t)p->sizecode && (v - p->code) % 4 == 0) {
      if (found && found != v) return -1;
      found = v;
    }
  }
  return found ? (int)((found - p->code) / 4) - 1 : -1;
}

/* Reads the CallInfos of c, innermost first, into cis (CI_MAX bytes each);
** returns their count. */
static int read_cis(pl_luawalk *w, const pl_lcand *c, unsigned char (*cis)[CI_MAX], int max) {
  const pl_lua_layout *y = w->lay;
  size_t slot = pl_addr_slot(c->L, 6);
  uint64_t lo = 0, hi = 0, got = 0;
  if (w->spans[slot].L == c->L) {
    lo = w->spans[slot].lo;
    hi = w->spans[slot].hi;
    got = pl_remote_read_upto(w->mem, lo, w->cis, (size_t)(hi - lo));
  }
  uint64_t at = c->ci, base = c->L + y->th_base_ci, nlo = at, nhi = at + y->ci_size;
  int n = 0;
  while (at && at != base && n < max) {
    if (at >= lo && at + y->ci_size <= lo + got) {
      memcpy(cis[n], w->cis + (at - lo), y->ci_size);
    } else if (pl_remote_read(w->mem, at, cis[n], y->ci_size) != 0) {
      break;
    }
    if (at < nlo) nlo = at;
    if (at + y->ci_size > nhi) nhi = at + y->ci_size;
    at = pl_u64(cis[n], y->ci_previous);
    n++;
  }
  if (nhi - nlo <= CI_SPAN_MAX) {
    w->spans[slot].L = c->L;
    w->spans[slot].lo = nlo;
    w->spans[slot].hi = nhi;
  }
  return n;
}

/* The func slots (16 bytes) of the n calls, into fv. */
static int read_funcs(pl_luawalk *w, unsigned char (*cis)[CI_MAX], int n, unsigned char (*fv)[16]) {
  const pl_lua_layout *y = w->lay;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < n; i++) {
    uint64_t f = pl_u64(cis[i], y->ci_func);
    if (f < lo) lo = f;
    if (f + 16 > hi) hi = f + 16;
  }
  size_t got = 0;
  if (n > 0 && hi - lo <= LSTACK_MAX) got = pl_remote_read_upto(w->mem, lo, w->lstack, (size_t)(hi - lo));
  for (int i = 0; i < n; i++) {
    uint64_t f = pl_u64(cis[i], y->ci_func);
    if (f - lo + 16 <= got) memcpy(fv[i], w->lstack + (f - lo), 16);
    else if (pl_remote_read(w->mem, f, fv[i], 16) != 0) return i;
  }
  return n;
}

/* The Proto of Lua closure cl, confirmed by savedpc lying in its code. */
static const pl_proto *proto_of(pl_luawalk *w, uint64_t cl, uint64_t savedpc) {
  size_t slot = pl_addr_slot(cl, 12);
  if (w->closures[slot].cl == cl) {
    const pl_proto *p = pl_proto_cached(w, w->closures[slot].v);
    if (p && savedpc >= p->code && savedpc <= p->code + 4 * (uint64_t)p->sizecode) return p;
  }
  uint64_t pa;
  if (pl_remote_read(w->mem, cl + PL_LUA_LCL_P, &pa, 8) != 0 || !pa) return NULL;
  w->closures[slot].cl = cl;
  w->closures[slot].v = pa;
  return pl_proto_get(w, pa);
}

/* The function of C closure cl. */
static uint64_t cfunction_of(pl_luawalk *w, uint64_t cl) {
  size_t slot = pl_addr_slot(cl, 12);
  if (w->closures[slot].cl == cl) return w->closures[slot].v;
  uint64_t f;
  if (pl_remote_read(w->mem, cl + PL_LUA_CCL_F, &f, 8) != 0) return 0;
  w->closures[slot].cl = cl;
  w->closures[slot].v = f;
  return f;
}

int pl_frames_read(pl_luawalk *w, const pl_lcand *c, const uint64_t *regs, int nregs,
                   pl_frame *out, int max) {
  const pl_lua_layout *y = w->lay;
  unsigned char (*cis)[CI_MAX] = w->ci_copy, (*fv)[16] = w->func_copy;
  if (max > MAXFRAMES) max = MAXFRAMES;
  if (y->ci_size > CI_MAX) return 0;
  int n = read_cis(w, c, cis, max);
  n = read_funcs(w, cis, n, fv);
  int k = 0;
  for (int i = 0; i < n; i++) {
    uint8_t tag = fv[i][PL_LUA_TVALUE_TT];
    uint64_t val = pl_u64(fv[i], 0);
    pl_frame *f = &out[k];
    if (tag == PL_LUA_TAG_LCL_TV) {
      uint64_t savedpc = pl_u64(cis[i], y->ci_savedpc);
      const pl_proto *p = proto_of(w, val, savedpc);
      if (!p) break;
      int pc = i == 0 && regs ? pc_from_regs(p, regs, nregs) : -1;
      if (pc < 0) pc = (int)((int64_t)(savedpc - p->code) / 4) - 1;
      f->lua = 1;
      f->p = p;
      f->f = 0;
      f->line = pl_proto_line(p, pc);
      k++;
    } else if (tag == PL_LUA_TAG_CCL_TV || tag == PL_LUA_TAG_LCF) {
      f->lua = 0;
      f->p = NULL;
      f->f = tag == PL_LUA_TAG_LCF ? val : cfunction_of(w, val);
      f->line = -1;
      k++;
    }
  }
  return k;
}
