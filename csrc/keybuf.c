/*
** keybuf.c: the profiler's C-memory text buffer (keybuf.h).
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keybuf.h"

void pl_keybuf_reset(pl_keybuf *k) {
  k->n = 0;
  k->failed = 0;
}

/* Room for len more bytes and a NUL; 0 when it cannot be had. */
static int reserve(pl_keybuf *k, size_t len) {
  if (k->failed) return 0;
  if (k->cap - k->n > len) return 1;
  size_t cap = k->cap ? k->cap : 1024;
  while (cap - k->n <= len) cap *= 2;
  char *p = realloc(k->p, cap);
  if (!p) { k->failed = 1; return 0; }
  k->p = p;
  k->cap = cap;
  return 1;
}

void pl_keybuf_add(pl_keybuf *k, const char *s, size_t len) {
  if (!reserve(k, len)) return;
  memcpy(k->p + k->n, s, len);
  k->n += len;
}

void pl_keybuf_printf(pl_keybuf *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int len = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (len < 0) { k->failed = 1; return; }
  if ((size_t)len < sizeof small) { pl_keybuf_add(k, small, (size_t)len); return; }
  if (!reserve(k, (size_t)len)) return;
  va_start(ap, fmt);
  vsnprintf(k->p + k->n, k->cap - k->n, fmt, ap);
  va_end(ap);
  k->n += (size_t)len;
}

void pl_keybuf_free(pl_keybuf *k) {
  free(k->p);
  k->p = NULL;
  k->n = k->cap = 0;
  k->failed = 0;
}
