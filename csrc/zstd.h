/*
** zstd.h: zstd decompression streams, from libzstd loaded at first need
** (zstd.c), for the records `perf record -z` writes.
*/
#ifndef PERF_ZSTD_H
#define PERF_ZSTD_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

typedef struct pl_zstd pl_zstd;   /* one decompression stream */

/* The library's name, or the one PERF_LUA_LIBZSTD gives. */
const char *pl_zstd_library(void);

/* A new stream, or NULL with *why saying what failed (the library
** cannot be loaded, a symbol is missing, out of memory) and *err an
** errno (ENOENT, ENOMEM). Loads the library once per process. */
pl_zstd *pl_zstd_new(const char **why, int *err);
void pl_zstd_free(pl_zstd *z);

/* Decompresses src[0, n) into *buf from *len on, growing *buf (capacity
** *cap, realloc'd) as needed; what one call adds never exceeds `limit`
** bytes. The stream keeps its state between calls: a frame may span
** them. Returns 0, or -1 with *why (zstd's error name, "more than limit",
** "out of memory"). */
int pl_zstd_inflate(pl_zstd *z, const void *src, size_t n, unsigned char **buf,
                    size_t *len, size_t *cap, size_t limit, const char **why);

/* The loaded library's version ("1.5.4"), or NULL with *why and *err. */
const char *pl_zstd_version(const char **why, int *err);

#pragma GCC visibility pop

#endif
