/*
** attach_lua.c: the Lua stack of a thread of another process, stopped at
** an overflow, read with process_vm_readv through the layout of its Lua
** release (lua_layout.h).
**
** The running lua_State is found as the in-process locator finds it: a
** value in the thread's registers or on its C stack (from the stack
** pointer up) that is a thread object (tag LUA_VTHREAD) whose l_G points to
** a global_State whose mainthread's l_G points back (self-consistent). Of
** those, the ones that run (status LUA_OK with a call under way, ci not
** &base_ci) are the resume chain of this OS thread; the innermost is the
** one with the most nested calls (lua_resume starts a coroutine's count
** from its resumer's, ldo.c), and the chain is charged from it outwards
** to the main thread, as the in-process profiler charges a coroutine with
** the frames of whoever resumed it.
**
** Frames are read from L->ci back along ci->previous. A Lua frame's line is
** luaG_getfuncline's: the last abslineinfo entry at or before the pc, then
** the lineinfo deltas up to it (ldebug.c). The pc is ci->u.l.savedpc, which
** luaV_execute stores before each call and each operation that can raise;
** in the innermost frame, when the thread was stopped inside luaV_execute
** between two such stores, the VM's own pc is in a register: a register
** holding the one address inside that function's code (4-byte aligned) is
** taken as the pc, else savedpc.
**
** Protos are kept by address, with their line information and source
** name, and checked against the Proto's header at each use (a freed one's
** address may be reused by another). Addresses that were no lua_State are
** remembered for a while, so a stack scan reads only what it has not seen.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"

#define MAXFRAMES 256           /* frames of one stack (profile.c's) */
#define MAXCHAIN 16             /* lua_States of one resume chain */
#define MAXGLOBALS 16           /* global_States known */
#define SCAN_BYTES 32768        /* C stack read from the stack pointer up */
#define MAXCHECKS 128            /* new addresses checked per sample */
#define NOTL_SLOTS 4096         /* addresses known not to be a lua_State */
#define NOTL_AGE 4096           /* samples before those are forgotten */
#define PROTO_SLOTS 4096
#define LHDR 192                /* bytes of a lua_State read: up to nCcalls */
#define LUA_IDSIZE 60           /* luaconf.h: the size of a short source */

typedef struct proto_info {
  uint64_t addr;                /* 0: empty slot */
  unsigned char hdr[128];       /* the Proto as read: to check it is the same */
  uint64_t code;
  int sizecode, linedefined, sizelineinfo, sizeabslineinfo;
  signed char *lineinfo;        /* copies, or NULL */
  int *abslineinfo;             /* pairs pc, line */
  char source[LUA_IDSIZE];      /* luaO_chunkid's short source */
} proto_info;

typedef struct candidate {
  uint64_t L, G, ci;
  uint32_t ccalls;
} candidate;

struct pl_luawalk {
  pl_remote *mem;
  const pl_lua_layout *lay;
  uint64_t globals[MAXGLOBALS], mains[MAXGLOBALS];
  int nglobals;
  uint64_t notl[NOTL_SLOTS];
  unsigned samples;
  proto_info protos[PROTO_SLOTS];
  uint64_t stack[SCAN_BYTES / 8];
};

pl_luawalk *pl_luawalk_new(pl_remote *mem, const pl_lua_layout *layout) {
  pl_luawalk *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->mem = mem;
  w->lay = layout;
  return w;
}

static void proto_clear(proto_info *p) {
  free(p->lineinfo);
  free(p->abslineinfo);
  memset(p, 0, sizeof *p);
}

void pl_luawalk_free(pl_luawalk *w) {
  if (!w) return;
  for (int i = 0; i < PROTO_SLOTS; i++) proto_clear(&w->protos[i]);
  free(w);
}

static uint64_t u64_at(const unsigned char *b, size_t off) {
  uint64_t v;
  memcpy(&v, b + off, sizeof v);
  return v;
}

static uint32_t u32_at(const unsigned char *b, size_t off) {
  uint32_t v;
  memcpy(&v, b + off, sizeof v);
  return v;
}

static int read_u64(pl_luawalk *w, uint64_t addr, uint64_t *v) {
  return pl_remote_read(w->mem, addr, v, sizeof *v);
}

/* ---- the lua_State ---- */

static int known_global(const pl_luawalk *w, uint64_t G) {
  for (int i = 0; i < w->nglobals; i++) if (w->globals[i] == G) return 1;
  return 0;
}

/* The main thread of a known global_State (it never changes), or 0. */
static uint64_t main_of(const pl_luawalk *w, uint64_t G) {
  for (int i = 0; i < w->nglobals; i++) if (w->globals[i] == G) return w->mains[i];
  return 0;
}

/* Whether G is a global_State: its mainthread is a thread whose l_G is G. */
static int check_global(pl_luawalk *w, uint64_t G) {
  const pl_lua_layout *y = w->lay;
  unsigned char m[32];
  uint64_t main;
  if (known_global(w, G)) return 1;
  if ((G & 7) || read_u64(w, G + y->G_mainthread, &main) != 0 || (main & 7)) return 0;
  if (pl_remote_read(w->mem, main, m, sizeof m) != 0) return 0;
  if (m[y->L_tt] != y->tag_thread || u64_at(m, y->L_l_G) != G) return 0;
  if (w->nglobals < MAXGLOBALS) {
    w->mains[w->nglobals] = main;
    w->globals[w->nglobals++] = G;
  }
  return 1;
}

static size_t notl_slot(uint64_t v) {
  return (size_t)((v >> 3) * 0x9E3779B97F4A7C15ULL >> 52) & (NOTL_SLOTS - 1);
}

/* Whether v is a running lua_State (filling c); remembers the ones that are
** no lua_State at all. */
static int check_state(pl_luawalk *w, uint64_t v, candidate *c) {
  const pl_lua_layout *y = w->lay;
  unsigned char h[LHDR];
  if (v < 0x10000 || (v & 7) || v >= (1ULL << 56)) return 0;
  size_t slot = notl_slot(v);
  if (w->notl[slot] == v) return 0;
  if (pl_remote_read(w->mem, v, h, (size_t)y->L_nCcalls + 4) != 0 ||
      h[y->L_tt] != y->tag_thread || !check_global(w, u64_at(h, y->L_l_G))) {
    w->notl[slot] = v;
    return 0;
  }
  c->L = v;
  c->G = u64_at(h, y->L_l_G);
  c->ci = u64_at(h, y->L_ci);
  c->ccalls = u32_at(h, y->L_nCcalls) & 0xffff;
  /* LUA_OK with a call under way: running, or normal (it resumed another) */
  return h[y->L_status] == 0 && c->ci != 0 && c->ci != v + y->L_base_ci;
}

/* Whether c's current call is a Lua function (its func slot's tag). */
static int runs_lua(pl_luawalk *w, const candidate *c) {
  const pl_lua_layout *y = w->lay;
  uint64_t func;
  unsigned char fv[16];
  return read_u64(w, c->ci + y->CI_func, &func) == 0 &&
         pl_remote_read(w->mem, func, fv, sizeof fv) == 0 && fv[y->TV_tt] == y->tag_lcl;
}

/* Adds c to the chain unless it is there; returns the chain's size. */
static int add_candidate(candidate *chain, int n, const candidate *c) {
  for (int i = 0; i < n; i++) if (chain[i].L == c->L) return n;
  if (n < MAXCHAIN) chain[n++] = *c;
  return n;
}

/* Whether a runs inside b (more nested calls than b). */
static int inner(const pl_luawalk *w, const candidate *a, const candidate *b) {
  return w->lay->ccalls_down ? a->ccalls < b->ccalls : a->ccalls > b->ccalls;
}

/* The resume chain of the stopped thread, innermost first; its size. */
static int find_chain(pl_luawalk *w, const uint64_t *regs, int nregs, uint64_t sp,
                      candidate *chain) {
  int n = 0, checks = 0, lua = -1;
  candidate c;
  if (++w->samples % NOTL_AGE == 0) memset(w->notl, 0, sizeof w->notl);
  for (int i = 0; i < nregs; i++)
    if (check_state(w, regs[i], &c)) n = add_candidate(chain, n, &c);
  /* a state whose current call is a Lua function runs innermost: a
  ** coroutine is resumed from a C call (coroutine.resume, lua_resume) */
  for (int i = 0; i < n && lua < 0; i++) if (runs_lua(w, &chain[i])) lua = i;
  size_t got = lua >= 0 ? 0 : pl_remote_read_upto(w->mem, sp, w->stack, sizeof w->stack) / 8;
  for (size_t i = 0; i < got && checks < MAXCHECKS; i++) {
    uint64_t v = w->stack[i];
    if (v < 0x10000 || (v & 7) || w->notl[notl_slot(v)] == v) continue;
    checks++;
    if (check_state(w, v, &c)) n = add_candidate(chain, n, &c);
  }
  if (n == 0) return 0;
  /* one OS thread runs one resume chain of one global_State: the
  ** innermost's; its main thread closes it when it runs too */
  int best = lua >= 0 ? lua : 0;
  for (int i = 1; i < n && lua < 0; i++) if (inner(w, &chain[i], &chain[best])) best = i;
  candidate t = chain[0]; chain[0] = chain[best]; chain[best] = t;
  uint64_t main = main_of(w, chain[0].G);
  if (main && main != chain[0].L && check_state(w, main, &c)) n = add_candidate(chain, n, &c);
  int m = 1;
  for (int i = 1; i < n; i++) if (chain[i].G == chain[0].G) chain[m++] = chain[i];
  n = m;
  for (int i = 1; i < n; i++)                     /* innermost first */
    for (int j = i; j > 1 && inner(w, &chain[j], &chain[j - 1]); j--) {
      t = chain[j]; chain[j] = chain[j - 1]; chain[j - 1] = t;
    }
  return n;
}

/* ---- Protos: line information and source names ---- */

/* luaO_chunkid's rule for a short source: "=name" is name, "@file" is the
** file (its last characters, after "...", when it is long), any other
** source is [string "its first line..."]. */
static void chunkid(char *out, const char *src, size_t len) {
  const size_t room = LUA_IDSIZE - 1;
  if (len > 0 && (src[0] == '=' || src[0] == '@')) {
    const char *s = src + 1;
    size_t n = len - 1;
    if (n <= room) { memcpy(out, s, n); out[n] = '\0'; }
    else if (src[0] == '=') { memcpy(out, s, room); out[room] = '\0'; }
    else { memcpy(out, "...", 3); memcpy(out + 3, s + n - (room - 3), room - 3); out[room] = '\0'; }
    return;
  }
  const char *nl = memchr(src, '\n', len);
  size_t keep = LUA_IDSIZE - sizeof("[string \"" "..." "\"]");
  size_t n = nl ? (size_t)(nl - src) : len;
  int dots = nl != NULL || n >= keep;
  if (n > keep) n = keep;
  size_t o = 0;
  memcpy(out, "[string \"", 9); o = 9;
  memcpy(out + o, src, n); o += n;
  if (dots) { memcpy(out + o, "...", 3); o += 3; }
  memcpy(out + o, "\"]", 3);
}

/* Reads TString ts as a short source into out. */
static void read_source(pl_luawalk *w, uint64_t ts, char *out) {
  const pl_lua_layout *y = w->lay;
  unsigned char h[32];
  char buf[1024];
  strcpy(out, "?");
  if (!ts || pl_remote_read(w->mem, ts, h, y->TS_contents) != 0) return;
  size_t len;
  if (h[y->TV_tt] == y->tag_shrstr) len = h[y->TS_shrlen];
  else if (h[y->TV_tt] == y->tag_lngstr) len = (size_t)u64_at(h, y->TS_lnglen);
  else return;
  uint64_t at = ts + y->TS_contents;
  size_t n = len < sizeof buf ? len : sizeof buf;
  /* a long file name keeps its end; other sources their start */
  char first;
  if (pl_remote_read(w->mem, at, &first, 1) != 0) return;
  if (len > sizeof buf && first == '@') {
    buf[0] = '@';
    if (pl_remote_read(w->mem, at + len - (n - 1), buf + 1, n - 1) != 0) return;
  } else if (pl_remote_read(w->mem, at, buf, n) != 0) {
    return;
  }
  chunkid(out, buf, n);
}

static size_t proto_slot(uint64_t p) {
  return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ULL >> 52) & (PROTO_SLOTS - 1);
}

/* The Proto at p, read once and checked against its header after that. */
static proto_info *get_proto(pl_luawalk *w, uint64_t p) {
  const pl_lua_layout *y = w->lay;
  unsigned char h[128];
  if (y->P_size > sizeof h || pl_remote_read(w->mem, p, h, y->P_size) != 0) return NULL;
  proto_info *pi = &w->protos[proto_slot(p)];
  if (pi->addr == p && memcmp(pi->hdr, h, y->P_size) == 0) return pi;
  proto_clear(pi);
  memcpy(pi->hdr, h, y->P_size);
  pi->code = u64_at(h, y->P_code);
  pi->sizecode = (int)u32_at(h, y->P_sizecode);
  pi->linedefined = (int)u32_at(h, y->P_linedefined);
  int nl = (int)u32_at(h, y->P_sizelineinfo), na = (int)u32_at(h, y->P_sizeabslineinfo);
  uint64_t li = u64_at(h, y->P_lineinfo), ai = u64_at(h, y->P_abslineinfo);
  if (li && nl > 0 && nl <= (1 << 24)) {
    pi->lineinfo = malloc((size_t)nl);
    if (pi->lineinfo && pl_remote_read(w->mem, li, pi->lineinfo, (size_t)nl) == 0) {
      pi->sizelineinfo = nl;
    } else { free(pi->lineinfo); pi->lineinfo = NULL; }
  }
  if (ai && na > 0 && na <= (1 << 22)) {
    pi->abslineinfo = malloc((size_t)na * 8);
    if (pi->abslineinfo && pl_remote_read(w->mem, ai, pi->abslineinfo, (size_t)na * 8) == 0) {
      pi->sizeabslineinfo = na;
    } else { free(pi->abslineinfo); pi->abslineinfo = NULL; }
  }
  read_source(w, u64_at(h, y->P_source), pi->source);
  pi->addr = p;
  return pi;
}

/* luaG_getfuncline: the line of instruction pc, -1 without line info. */
static int funcline(const proto_info *pi, int pc) {
  if (!pi->lineinfo || pc < 0 || pc >= pi->sizelineinfo) return -1;
  int basepc = -1, line = pi->linedefined;
  int lo = 0, hi = pi->sizeabslineinfo - 1;     /* last entry with .pc <= pc */
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (pi->abslineinfo[2 * mid] <= pc) { basepc = pi->abslineinfo[2 * mid];
      line = pi->abslineinfo[2 * mid + 1]; lo = mid + 1; }
    else hi = mid - 1;
  }
  while (basepc++ < pc) line += pi->lineinfo[basepc];
  return line;
}

/* The pc of the innermost Lua frame from the registers: the one value that
** points just past an instruction of its code; -1 if none or several. */
static int pc_from_regs(const proto_info *pi, const uint64_t *regs, int nregs) {
  uint64_t found = 0;
  for (int i = 0; i < nregs; i++) {
    uint64_t v = regs[i];
    if (v > pi->code && v <= pi->code + 4 * (uint64_t)pi->sizecode && (v - pi->code) % 4 == 0) {
      if (found && found != v) return -1;
      found = v;
    }
  }
  return found ? (int)((found - pi->code) / 4) - 1 : -1;
}

/* ---- frames ---- */

typedef struct keybuf { char *s; size_t n; int full; } keybuf;

static void put(keybuf *b, const char *s, size_t n) {
  if (b->full || b->n + n + 1 > PL_KEY_MAX) { b->full = 1; return; }
  memcpy(b->s + b->n, s, n);
  b->n += n;
}

static void putf_frame(keybuf *b, const char *fmt_name, const char *src, int defined, int line) {
  char num[48];
  put(b, "L", 1);
  put(b, fmt_name, strlen(fmt_name));
  put(b, "\t", 1);
  put(b, src, strlen(src));
  int k = snprintf(num, sizeof num, "\t%d\t%d\n", defined, line);
  put(b, num, (size_t)k);
}

/* Adds the frames of lua_State c (leaf first); leaf C frames are left out
** when trim is set (as profile.c does). Returns the frames added. */
static int add_frames(pl_luawalk *w, const candidate *c, int innermost, const uint64_t *regs,
                      int nregs, int trim, int budget, keybuf *b) {
  const pl_lua_layout *y = w->lay;
  unsigned char ci[64], fv[16], cl[32];
  uint64_t at = c->ci, base = c->L + y->L_base_ci;
  int added = 0, depth = 0;
  for (; at && at != base && added < budget && depth < 4 * MAXFRAMES; depth++) {
    if (y->CI_size > sizeof ci || pl_remote_read(w->mem, at, ci, y->CI_size) != 0) break;
    uint64_t func = u64_at(ci, y->CI_func);
    if (pl_remote_read(w->mem, func, fv, sizeof fv) != 0) break;
    uint8_t tag = fv[y->TV_tt];
    uint64_t val = u64_at(fv, 0);
    if (tag == y->tag_lcl) {
      uint64_t p;
      proto_info *pi;
      if (pl_remote_read(w->mem, val, cl, sizeof cl) != 0 || !(p = u64_at(cl, y->LCL_p)) ||
          !(pi = get_proto(w, p))) break;
      int pc = -1;
      if (innermost && at == c->ci) pc = pc_from_regs(pi, regs, nregs);
      if (pc < 0) pc = (int)((int64_t)(u64_at(ci, y->CI_savedpc) - pi->code) / 4) - 1;
      putf_frame(b, pi->linedefined == 0 ? "main chunk" : "", pi->source, pi->linedefined,
                 funcline(pi, pc));
      added++;
      trim = 0;
    } else if (tag == y->tag_ccl || tag == y->tag_lcf) {
      uint64_t f = val;
      if (tag == y->tag_ccl && (pl_remote_read(w->mem, val, cl, sizeof cl) != 0 ||
                                !(f = u64_at(cl, y->CCL_f)))) break;
      if (!trim) {
        char s[40];
        int k = snprintf(s, sizeof s, "C@%llx\n", (unsigned long long)f);
        put(b, s, (size_t)k);
        added++;
      }
    }
    at = u64_at(ci, y->CI_previous);
  }
  return added;
}

size_t pl_luawalk_key(pl_luawalk *w, const uint64_t *regs, int nregs, uint64_t sp, char *key) {
  candidate chain[MAXCHAIN];
  int n = find_chain(w, regs, nregs, sp, chain);
  if (n == 0) return 0;
  keybuf b = { key, 0, 0 };
  int budget = MAXFRAMES;
  for (int i = 0; i < n && budget > 0; i++)
    budget -= add_frames(w, &chain[i], i == 0, regs, nregs, 1, budget, &b);
  if (b.n == 0) {               /* no Lua frame of its own yet */
    put(&b, "C@0\n", 4);
  }
  return b.n;
}
