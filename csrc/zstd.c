/*
** zstd.c: zstd decompression streams for the records `perf record -z`
** writes (PERF_RECORD_COMPRESSED, perf's util/zstd.c), from libzstd
** loaded with dlopen the first time a file needs it.
**
**   perf.core.zstd_version() -> "1.5.4" | nil, msg, errno
**
** Why dlopen rather than linking: a LuaRocks build of this rock then needs
** no zstd headers (libzstd-dev) and no external dependency, so the rock
** installs wherever a C compiler and Lua's headers are; perf.core loads
** even where libzstd is absent, and only reading a compressed file fails,
** with advice. libzstd.so.1 itself is nearly always there (on Debian and
** Ubuntu, dpkg depends on it), and the few functions used here are of
** zstd's stable API, with the same signatures and structs since 1.0
** (lib/zstd.h, "Streaming decompression"); they are declared below.
** PERF_LUA_LIBZSTD names another file to load.
*/
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_core.h"
#include "zstd.h"

#define LIBZSTD "libzstd.so.1"

/* lib/zstd.h, stable since 1.0 */
typedef struct { const void *src; size_t size; size_t pos; } zstd_in;
typedef struct { void *dst; size_t size; size_t pos; } zstd_out;

static struct {
  void *(*create)(void);                          /* ZSTD_createDStream */
  size_t (*destroy)(void *);                      /* ZSTD_freeDStream */
  size_t (*init)(void *);                         /* ZSTD_initDStream */
  size_t (*stream)(void *, zstd_out *, zstd_in *); /* ZSTD_decompressStream */
  unsigned (*is_error)(size_t);                   /* ZSTD_isError */
  const char *(*error_name)(size_t);              /* ZSTD_getErrorName */
  const char *(*version)(void);                   /* ZSTD_versionString (1.3) */
  int loaded;
  char why[512];
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *pl_zstd_library(void) {
  const char *name = getenv("PERF_LUA_LIBZSTD");
  return name && *name ? name : LIBZSTD;
}

/* Looks up `name` in h into *slot (a function pointer's storage). */
static int sym(void *h, const char *name, void *slot) {
  void *p = dlsym(h, name);
  if (!p) {
    snprintf(api.why, sizeof api.why, "%s has no %s", pl_zstd_library(), name);
    return 0;
  }
  memcpy(slot, &p, sizeof p);
  return 1;
}

/* Once per process; the library stays loaded. */
static void load(void) {
  const char *lib = pl_zstd_library();
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(api.why, sizeof api.why, "cannot load %s (%s)", lib, e ? e : "?");
    return;
  }
  if (!sym(h, "ZSTD_createDStream", &api.create) ||
      !sym(h, "ZSTD_freeDStream", &api.destroy) ||
      !sym(h, "ZSTD_initDStream", &api.init) ||
      !sym(h, "ZSTD_decompressStream", &api.stream) ||
      !sym(h, "ZSTD_isError", &api.is_error) ||
      !sym(h, "ZSTD_getErrorName", &api.error_name) ||
      !sym(h, "ZSTD_versionString", &api.version)) {
    dlclose(h);
    return;
  }
  api.loaded = 1;
}

static int ready(const char **why, int *err) {
  pthread_once(&once, load);
  if (api.loaded) return 1;
  *why = api.why;
  *err = ENOENT;
  return 0;
}

struct pl_zstd {
  void *ds;                     /* ZSTD_DStream */
};

pl_zstd *pl_zstd_new(const char **why, int *err) {
  if (!ready(why, err)) return NULL;
  pl_zstd *z = malloc(sizeof *z);
  if (z) z->ds = api.create();
  if (!z || !z->ds || api.is_error(api.init(z->ds))) {
    if (z && z->ds) api.destroy(z->ds);
    free(z);
    *why = "out of memory for a zstd stream";
    *err = ENOMEM;
    return NULL;
  }
  return z;
}

void pl_zstd_free(pl_zstd *z) {
  if (!z) return;
  api.destroy(z->ds);
  free(z);
}

int pl_zstd_inflate(pl_zstd *z, const void *src, size_t n, unsigned char **buf,
                    size_t *len, size_t *cap, size_t limit, const char **why) {
  zstd_in in = { src, n, 0 };
  size_t start = *len;
  /* until the input is used up and a call left output room unused (a
  ** full output may mean the stream holds more); what stays held past
  ** the limit comes out with the next call's input, as the stream goes on */
  int full = 0;
  while (in.pos < in.size || full) {
    size_t made = *len - start;
    if (made >= limit) {
      if (in.pos < in.size) { *why = "more than limit"; return -1; }
      break;
    }
    if (*cap == *len) {
      size_t want = *cap * 2 > *len + 65536 ? *cap * 2 : *len + 65536;
      if (want - start > limit) want = start + limit;
      unsigned char *p = realloc(*buf, want);
      if (!p) { *why = "out of memory"; return -1; }
      *buf = p;
      *cap = want;
    }
    size_t room = *cap - *len;
    if (room > limit - made) room = limit - made;
    zstd_out out = { *buf + *len, room, 0 };
    size_t inpos = in.pos;
    size_t r = api.stream(z->ds, &out, &in);
    if (api.is_error(r)) { *why = api.error_name(r); return -1; }
    *len += out.pos;
    full = out.pos == out.size;
    if (!full && in.pos == inpos && in.pos < in.size) {
      *why = "no progress";      /* not with a sane library */
      return -1;
    }
  }
  return 0;
}

const char *pl_zstd_version(const char **why, int *err) {
  if (!ready(why, err)) return NULL;
  return api.version();
}

/* perf.core.zstd_version() -> version | nil, msg, errno */
static int l_version(lua_State *L) {
  const char *why = NULL;
  int err = 0;
  const char *v = pl_zstd_version(&why, &err);
  if (v) {
    lua_pushstring(L, v);
    return 1;
  }
  lua_pushfstring(L, "zstd: %s", why);
  return pl_fail(L, err, lua_tostring(L, -1),
                 "install zstd's library (Debian and Ubuntu: libzstd1; "
                 "Fedora: libzstd), or name its file in PERF_LUA_LIBZSTD");
}

static const luaL_Reg functions[] = {
  { "zstd_version", l_version },
  { NULL, NULL }
};

void pl_open_zstd(lua_State *L) {
  luaL_setfuncs(L, functions, 0);
}
