/*
** attach_walk.h: the state of the walker of a remote Lua stack, shared by
** attach_lua.c (the running lua_State and the key), attach_frames.c (its
** frames) and attach_proto.c (Protos: lines and sources). Plain C.
*/
#ifndef PERF_ATTACH_WALK_H
#define PERF_ATTACH_WALK_H

#include "attach_parts.h"

#pragma GCC visibility push(hidden)

#define MAXFRAMES 256           /* frames of one stack (profile.c's) */
#define MAXGLOBALS 16           /* global_States known */
#define SCAN_BYTES 32768        /* C stack read from the stack pointer up */
#define NOTL_SLOTS 4096         /* addresses known not to be a lua_State */
#define CACHE_AGE 4096          /* samples before address caches are dropped */
#define PROTO_SLOTS 4096
#define CLOSURE_SLOTS 4096
#define SPAN_SLOTS 64           /* lua_States whose CallInfo span is kept */
#define CI_SPAN_MAX 16384       /* bytes of CallInfos read in one go */
#define LSTACK_MAX 65536        /* bytes of a Lua stack read in one go */
#define LUA_IDSIZE 60           /* luaconf.h: the size of a short source */

typedef struct pl_proto {
  uint64_t addr;                /* 0: empty slot */
  unsigned char hdr[128];       /* the Proto as read: to check it is the same */
  uint64_t code;
  int sizecode, linedefined, sizelineinfo, sizeabslineinfo;
  signed char *lineinfo;        /* copies, or NULL */
  int *abslineinfo;             /* pairs pc, line */
  char source[LUA_IDSIZE];      /* luaO_chunkid's short source */
} pl_proto;

typedef struct pl_lcand {       /* a lua_State that runs */
  uint64_t L, G, ci;
  uint32_t ccalls;
} pl_lcand;

typedef struct pl_frame {       /* one call of a lua_State, innermost first */
  int lua;                      /* a Lua function (else C) */
  uint64_t f;                   /* a C function's address */
  const pl_proto *p;            /* a Lua function's Proto */
  int line;
} pl_frame;

struct pl_luawalk {
  pl_remote *mem;
  const pl_lua_layout *lay;
  uint64_t globals[MAXGLOBALS], mains[MAXGLOBALS];
  int nglobals;
  unsigned samples;
  uint64_t notl[NOTL_SLOTS];
  struct { uint64_t cl, v; } closures[CLOSURE_SLOTS];  /* closure -> Proto or C function */
  struct { uint64_t L, lo, hi; } spans[SPAN_SLOTS];    /* where a state's CallInfos lie */
  pl_proto protos[PROTO_SLOTS];
  uint64_t stack[SCAN_BYTES / 8];
  unsigned char cis[CI_SPAN_MAX];
  unsigned char ci_copy[MAXFRAMES][64], func_copy[MAXFRAMES][16];  /* attach_frames.c */
  pl_frame frames[MAXFRAMES];
  uint64_t recent[4];           /* the innermost states found last */
  unsigned char lstack[LSTACK_MAX];
};

/* A slot of a table of 2^bits slots for address a. */
static inline size_t pl_addr_slot(uint64_t a, int bits) {
  return (size_t)((a >> 3) * 0x9E3779B97F4A7C15ULL >> (64 - bits));
}

static inline uint64_t pl_u64(const unsigned char *b, size_t off) {
  uint64_t v;
  for (size_t i = 0; i < 8; i++) ((unsigned char *)&v)[i] = b[off + i];
  return v;
}

/* attach_proto.c */
/* The Proto at p, read (or checked against its header) now. */
const pl_proto *pl_proto_get(pl_luawalk *w, uint64_t p);
/* The Proto at p as read before (no read), or NULL. */
const pl_proto *pl_proto_cached(const pl_luawalk *w, uint64_t p);
int pl_proto_line(const pl_proto *p, int pc);
void pl_protos_free(pl_luawalk *w);

/* attach_frames.c: the calls of c, innermost first (regs: the stopped
** thread's, for the innermost's pc when c is the innermost); their count. */
int pl_frames_read(pl_luawalk *w, const pl_lcand *c, const uint64_t *regs, int nregs,
                   pl_frame *out, int max);

#pragma GCC visibility pop

#endif
