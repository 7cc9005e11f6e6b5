/*
** attach_proto.c: the Protos of a remote Lua state, read once each: their
** line information (to compute a pc's line as ldebug.c's luaG_getfuncline
** does) and their source's short name (luaO_chunkid's). A Proto is kept
** by address and checked against its header when it is looked up again
** (a freed one's address may be reused by another).
*/
#include <stdlib.h>
#include <string.h>

#include "attach_walk.h"

static uint32_t u32_at(const unsigned char *b, size_t off) {
  uint32_t v;
  memcpy(&v, b + off, sizeof v);
  return v;
}

static void proto_clear(pl_proto *p) {
  free(p->lineinfo);
  free(p->abslineinfo);
  memset(p, 0, sizeof *p);
}

void pl_protos_free(pl_luawalk *w) {
  for (int i = 0; i < PROTO_SLOTS; i++) proto_clear(&w->protos[i]);
}

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
  unsigned char h[32];
  char buf[1024];
  strcpy(out, "?");
  if (!ts || pl_remote_read(w->mem, ts, h, PL_LUA_TS_CONTENTS) != 0) return;
  size_t len;
  if (h[PL_LUA_GC_TT] == PL_LUA_TAG_SHRSTR) len = h[PL_LUA_TS_SHRLEN];
  else if (h[PL_LUA_GC_TT] == PL_LUA_TAG_LNGSTR) len = (size_t)pl_u64(h, PL_LUA_TS_LNGLEN);
  else return;
  uint64_t at = ts + PL_LUA_TS_CONTENTS;
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

/* The Proto at p, read once and checked against its header after that. */
const pl_proto *pl_proto_cached(const pl_luawalk *w, uint64_t p) {
  const pl_proto *pi = &w->protos[pl_addr_slot(p, 12)];
  return pi->addr == p ? pi : NULL;
}

const pl_proto *pl_proto_get(pl_luawalk *w, uint64_t p) {
  unsigned char h[128];
  if (PL_LUA_P_SIZE > sizeof h || pl_remote_read(w->mem, p, h, PL_LUA_P_SIZE) != 0) return NULL;
  pl_proto *pi = &w->protos[pl_addr_slot(p, 12)];
  if (pi->addr == p && memcmp(pi->hdr, h, PL_LUA_P_SIZE) == 0) return pi;
  proto_clear(pi);
  memcpy(pi->hdr, h, PL_LUA_P_SIZE);
  pi->code = pl_u64(h, PL_LUA_P_CODE);
  pi->sizecode = (int)u32_at(h, PL_LUA_P_SIZECODE);
  pi->linedefined = (int)u32_at(h, PL_LUA_P_LINEDEFINED);
  int nl = (int)u32_at(h, PL_LUA_P_SIZELINEINFO), na = (int)u32_at(h, PL_LUA_P_SIZEABSLINEINFO);
  uint64_t li = pl_u64(h, PL_LUA_P_LINEINFO), ai = pl_u64(h, PL_LUA_P_ABSLINEINFO);
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
  read_source(w, pl_u64(h, PL_LUA_P_SOURCE), pi->source);
  pi->addr = p;
  return pi;
}

/* luaG_getfuncline: the line of instruction pc, -1 without line info. */
int pl_proto_line(const pl_proto *pi, int pc) {
  if (!pi->lineinfo || pc >= pi->sizelineinfo) return -1;
  if (pc < 0) return pi->linedefined;           /* not started: ldebug.c gives its first line */
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
