/*
** nearest.c: "did you mean": the names nearest to a misspelt one, and the
** one check of an option table's keys. C messages and Lua modules (through
** perf.core.nearest, did_you_mean and check_keys, which perf.nearest
** re-exports) share this file, so every suggestion is found and spelt alike:
** " (did you mean 'a'?)", " (did you mean 'a', 'b' or 'c'?)".
*/
#include <string.h>
#include <strings.h>

#include "perf_core.h"

#define MAXLEN 255     /* longer names are compared by containment only */
#define MAXHITS 8

/* The nearest names found so far, closest first, ties by name. */
typedef struct {
  const char *name[MAXHITS];
  size_t d[MAXHITS];
  int n, max;
} hits;

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Levenshtein distance between a and b ignoring case, or limit + 1 once it
** exceeds `limit`. */
static size_t distance(const char *a, const char *b, size_t limit) {
  size_t la = strlen(a), lb = strlen(b), i, j, prev[MAXLEN + 1], cur[MAXLEN + 1];
  if (la > MAXLEN || lb > MAXLEN) return limit + 1;
  if ((la > lb ? la - lb : lb - la) > limit) return limit + 1;
  for (j = 0; j <= lb; j++) prev[j] = j;
  for (i = 1; i <= la; i++) {
    size_t best = cur[0] = i;
    for (j = 1; j <= lb; j++) {
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      size_t sub = prev[j - 1] + (lower((unsigned char)a[i - 1]) != lower((unsigned char)b[j - 1]));
      cur[j] = del < ins ? del : ins;
      if (sub < cur[j]) cur[j] = sub;
      if (cur[j] < best) best = cur[j];
    }
    if (best > limit) return limit + 1;
    memcpy(prev, cur, (lb + 1) * sizeof cur[0]);
  }
  return prev[lb];
}

static size_t limit_for(const char *s) {
  size_t third = strlen(s) / 3;
  return third > 2 ? third : 2;
}

/* Weighs candidate `c` for `s`: close by edit distance, or (for 3 letters
** or more) containing `s`, or (for 4 or more) the start of `s`, as an
** abbreviation is: "frequency" suggests 'freq'. */
static void consider(hits *h, const char *s, const char *c, size_t limit) {
  size_t d = distance(s, c, limit), lc = strlen(c);
  int i;
  if (d > limit && strlen(s) >= 3 && strcasestr(c, s)) d = limit;
  if (d > limit && lc >= 4 && lc < strlen(s) && strncasecmp(s, c, lc) == 0) d = limit;
  if (d > limit) return;
  for (i = 0; i < h->n; i++)
    if (strcmp(h->name[i], c) == 0) return;          /* a name listed twice */
  for (i = h->n; i > 0; i--) {                       /* insertion, in order */
    if (h->d[i - 1] < d || (h->d[i - 1] == d && strcmp(h->name[i - 1], c) < 0)) break;
    if (i < h->max) { h->name[i] = h->name[i - 1]; h->d[i] = h->d[i - 1]; }
  }
  if (i < h->max) {
    h->name[i] = c;
    h->d[i] = d;
    if (h->n < h->max) h->n++;
  }
}

/* Keeps the hits at the least distance: "ipp" suggests 'ip', not also
** 'bp' and 'sp'. */
static void keep_nearest(hits *h) {
  int i;
  for (i = 1; i < h->n && h->d[i] == h->d[0]; i++) {}
  h->n = i < h->n ? i : h->n;
}

/* Pushes " (did you mean ...?)" for the hits, or "". */
static const char *push_hint(lua_State *L, const hits *h) {
  luaL_Buffer b;
  int i;
  if (h->n == 0) {
    lua_pushliteral(L, "");
    return lua_tostring(L, -1);
  }
  luaL_buffinit(L, &b);
  luaL_addstring(&b, " (did you mean ");
  for (i = 0; i < h->n; i++) {
    if (i > 0) luaL_addstring(&b, i == h->n - 1 ? " or " : ", ");
    luaL_addchar(&b, '\'');
    luaL_addstring(&b, h->name[i]);
    luaL_addchar(&b, '\'');
  }
  luaL_addstring(&b, "?)");
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

const char *pl_nearest(const char *s, const char *const *cands, size_t n) {
  hits h = {.n = 0, .max = 1};
  size_t i, limit = limit_for(s);
  for (i = 0; i < n; i++) consider(&h, s, cands[i], limit);
  return h.n ? h.name[0] : "";
}

const char *pl_did_you_mean(lua_State *L, const char *s, const char *const *cands,
                            size_t n) {
  hits h = {.n = 0, .max = 3};
  size_t i, limit = limit_for(s);
  for (i = 0; i < n; i++) consider(&h, s, cands[i], limit);
  keep_nearest(&h);
  return push_hint(L, &h);
}

int pl_unknown_key(lua_State *L, const char *what, const char *key,
                   const char *const *cands, size_t n) {
  const char *hint = pl_did_you_mean(L, key, cands, n);
  return luaL_error(L, "%s '%s'%s", what, key, hint);
}

void pl_check_keys(lua_State *L, int idx, const char *const *keys, size_t n,
                   const char *what) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t i;
    const char *k;
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s %s (names are strings)", what, luaL_tolstring(L, -1, NULL));
    k = lua_tostring(L, -1);
    for (i = 0; i < n && strcmp(k, keys[i]) != 0; i++) {}
    if (i == n) pl_unknown_key(L, what, k, keys, n);
  }
}

/* The hits for `s` among the strings of the list at `idx`. */
static void lua_hits(lua_State *L, hits *h, const char *s, int idx) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, idx);
  size_t limit = limit_for(s);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) == LUA_TSTRING)           /* the list keeps it alive */
      consider(h, s, lua_tostring(L, -1), limit);
    lua_pop(L, 1);
  }
  keep_nearest(h);
}

static int opt_max(lua_State *L, int idx) {
  lua_Integer max = luaL_optinteger(L, idx, 3);
  luaL_argcheck(L, max >= 1 && max <= MAXHITS, idx, "out of range (1..8)");
  return (int)max;
}

/* perf.core.nearest(s, names [, max = 3]) -> the names nearest to s */
static int l_nearest(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  hits h = {.n = 0, .max = 0};
  int i;
  luaL_checktype(L, 2, LUA_TTABLE);
  h.max = opt_max(L, 3);
  lua_hits(L, &h, s, 2);
  lua_createtable(L, h.n, 0);
  for (i = 0; i < h.n; i++) {
    lua_pushstring(L, h.name[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* perf.core.did_you_mean(s, names [, max = 3]) -> " (did you mean 'x'?)" or "" */
static int l_did_you_mean(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  hits h = {.n = 0, .max = 0};
  luaL_checktype(L, 2, LUA_TTABLE);
  h.max = opt_max(L, 3);
  lua_hits(L, &h, s, 2);
  push_hint(L, &h);
  return 1;
}

/* perf.core.check_keys(t, names, what [, level = 1 [, tail]]): raises
** "<what> 'k' (did you mean 'x'?)<tail>" at `level` for a key of t not in
** the list `names`; returns t. */
static int l_check_keys(lua_State *L) {
  const char *what = luaL_checkstring(L, 3);
  int level = (int)luaL_optinteger(L, 4, 1);
  const char *tail = luaL_optstring(L, 5, "");
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_Integer i, n = (lua_Integer)lua_rawlen(L, 2);
    int known = 0;
    lua_pop(L, 1);
    for (i = 1; i <= n && !known; i++) {
      lua_rawgeti(L, 2, i);
      known = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
    }
    if (!known) {
      hits h = {.n = 0, .max = 3};
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
      luaL_where(L, level);
      if (k) {
        lua_hits(L, &h, k, 2);
        lua_pushfstring(L, "%s '%s'%s%s", what, k, push_hint(L, &h), tail);
        lua_remove(L, -2);                       /* the hint */
      } else {
        lua_pushfstring(L, "%s %s (names are strings)%s", what, luaL_tolstring(L, -2, NULL),
                        tail);
        lua_remove(L, -2);                       /* the key as a string */
      }
      lua_concat(L, 2);                          /* where .. message */
      return lua_error(L);
    }
  }
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"nearest", l_nearest},
  {"did_you_mean", l_did_you_mean},
  {"check_keys", l_check_keys},
  {NULL, NULL}
};

void pl_open_nearest(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
}
