/*
** keybuf.h: a growable byte buffer in C memory (malloc), for text the
** profiler's hook builds before pushing it once. Unlike a luaL_Buffer it
** never touches the Lua stack (see profile.c's hook for why that matters).
** A failed growth sets `failed` and drops what did not fit.
*/
#ifndef PL_KEYBUF_H
#define PL_KEYBUF_H

#include <stddef.h>

typedef struct pl_keybuf {
  char *p;
  size_t n, cap;
  int failed;                   /* an allocation failed since the reset */
} pl_keybuf;

void pl_keybuf_reset(pl_keybuf *k);
void pl_keybuf_add(pl_keybuf *k, const char *s, size_t len);
void pl_keybuf_printf(pl_keybuf *k, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
void pl_keybuf_free(pl_keybuf *k);

#endif
