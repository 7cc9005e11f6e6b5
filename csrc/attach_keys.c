/*
** attach_keys.c: samples counted by stack key, in an open-addressing hash
** table (FNV-1a, linear probing, grown at 1/2 full). The tracer keeps it
** while it samples and writes it out once at the end: it never waits on
** the profiler to take its samples, so the target is never held up by it.
*/
#include <stdlib.h>
#include <string.h>

#include "attach_parts.h"

struct pl_key_slot {
  char *key;                    /* NULL: empty */
  size_t len;
  uint64_t hash, count;
};

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
  return h;
}

static int grow(pl_keys *k) {
  size_t cap = k->cap ? k->cap * 2 : 256;
  struct pl_key_slot *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < k->cap; i++) {
    struct pl_key_slot *s = &k->slots[i];
    if (!s->key) continue;
    size_t j = s->hash & (cap - 1);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = *s;
  }
  free(k->slots);
  k->slots = slots;
  k->cap = cap;
  return 0;
}

int pl_keys_add(pl_keys *k, const char *key, size_t len, uint64_t n) {
  if (k->used * 2 >= k->cap && grow(k) != 0) return -1;
  uint64_t h = fnv1a(key, len);
  size_t j = h & (k->cap - 1);
  for (;;) {
    struct pl_key_slot *s = &k->slots[j];
    if (!s->key) break;
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
      s->count += n;
      return 0;
    }
    j = (j + 1) & (k->cap - 1);
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  memcpy(copy, key, len);
  k->slots[j] = (struct pl_key_slot){ copy, len, h, n };
  k->used++;
  return 0;
}

int pl_keys_each(const pl_keys *k, int (*fn)(void *ud, const char *key, size_t len,
                 uint64_t count), void *ud) {
  for (size_t i = 0; i < k->cap; i++) {
    const struct pl_key_slot *s = &k->slots[i];
    if (s->key) {
      int rc = fn(ud, s->key, s->len, s->count);
      if (rc) return rc;
    }
  }
  return 0;
}

void pl_keys_free(pl_keys *k) {
  for (size_t i = 0; i < k->cap; i++) free(k->slots[i].key);
  free(k->slots);
  k->slots = NULL;
  k->cap = k->used = 0;
}
