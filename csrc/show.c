/*
** show.c: how the plain tables the library returns print at the prompt.
**
** Attrs, records, reads, stats and the pure-Lua results stay ordinary
** tables; they get a metatable with __name and one shared __tostring that
** writes `name { [1] = ..., key = value, ... }`: the list part in order,
** then the named fields sorted, nested tables in short. The metatables are
** made once, named in the registry ("perf.attr", "perf.record", ...), so a
** C file sets one with a registry lookup and Lua with perf.core.show.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_core.h"

#define MAX_SORTED 256
#define MAX_STRING 48


/* Strings are built as pieces on the stack, joined with lua_concat: no
** luaL_Buffer, whose box must stay on top, so values can be read between. */
typedef struct acc { lua_State *L; int n; } acc;

static void piece(acc *a) {           /* one more string on top */
  if (++a->n >= 32) {
    lua_concat(a->L, a->n);
    a->n = 1;
  }
}

static void put(acc *a, const char *s) {
  lua_pushstring(a->L, s);
  piece(a);
}

static void done(acc *a) {
  lua_concat(a->L, a->n);
}

static void push_value(lua_State *L, int idx, int depth);

/* Pushes one string: a table in short. */
static void push_table(lua_State *L, int idx, int depth) {
  int t = luaL_getmetafield(L, idx, "__name");   /* pushes only if found */
  if (t == LUA_TSTRING && depth > 0) {
    lua_pushfstring(L, "%s {...}", lua_tostring(L, -1));
    lua_remove(L, -2);
    return;
  }
  if (t != LUA_TNIL) lua_pop(L, 1);
  if (depth > 0) {
    lua_pushliteral(L, "{...}");
    return;
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), i;
  int k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) { k++; lua_pop(L, 1); }
  if (n > 0 && n <= 8 && k == n) {
    acc a = { L, 0 };
    luaL_checkstack(L, 48, "printing a table");
    put(&a, "{");
    for (i = 1; i <= n; i++) {
      if (i > 1) put(&a, ", ");
      lua_rawgeti(L, idx, i);
      push_value(L, -1, depth + 1);
      lua_remove(L, -2);
      piece(&a);
    }
    put(&a, "}");
    done(&a);
  } else {
    lua_pushfstring(L, "{%d entr%s}", k, k == 1 ? "y" : "ies");
  }
}

/* Pushes one string: the value at idx, short (long strings cut). */
static void push_value(lua_State *L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    int bin = 0;
    for (size_t i = 0; i < n && i < MAX_STRING; i++)
      if ((unsigned char)s[i] < 32 || (unsigned char)s[i] > 126) bin = 1;
    if (bin) {
      lua_pushfstring(L, "<%d bytes>", (int)n);
    } else if (n > MAX_STRING) {
      lua_pushlstring(L, s, MAX_STRING);
      lua_pushfstring(L, "\"%s...\" (%d bytes)", lua_tostring(L, -1), (int)n);
      lua_remove(L, -2);
    } else {
      lua_pushfstring(L, "\"%s\"", s);
    }
    return;
  }
  case LUA_TTABLE:
    push_table(L, idx, depth);
    return;
  default:
    luaL_tolstring(L, idx, NULL);
    return;
  }
}

/* For an attr: the names behind the integer of field `key` (its type,
** its sample_type and read_format bits), as " (software)", " (ip|tid)". */
static void put_attr_names(acc *a, const char *key, int idx) {
  lua_State *L = a->L;
  const pl_name *names = NULL;
  int bits = 1, n = 0;
  if (!lua_isinteger(L, idx)) return;
  if (!strcmp(key, "type")) names = pl_type_names, bits = 0;
  else if (!strcmp(key, "sample_type")) names = pl_sample_type_names;
  else if (!strcmp(key, "read_format")) names = pl_read_format_names;
  else if (!strcmp(key, "branch_sample_type")) names = pl_branch_names;
  if (!names) return;
  uint64_t v = (uint64_t)lua_tointeger(L, idx), left = v;
  for (const pl_name *p = names; p->name; p++) {
    int hit = bits ? (p->value && (v & p->value) == p->value) : v == p->value;
    if (!hit) continue;
    put(a, n++ ? "|" : " (");
    put(a, p->name);
    left &= ~p->value;
  }
  if (n && bits && left) {       /* lua_pushfstring has no hex: %I is decimal */
    char hex[24];
    snprintf(hex, sizeof hex, "|0x%" PRIx64, left);
    put(a, hex);
  }
  if (n) put(a, ")");
}

static int cmp_keys(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

/* __tostring of every shown table */
static int show_tostring(lua_State *L) {
  const char *keys[MAX_SORTED];
  size_t nkeys = 0, i;
  lua_Integer n, j;
  int first = 1, others = 0, attr;
  acc a = { L, 0 };
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkstack(L, 48, "printing a table");
  lua_settop(L, 1);
  if (luaL_getmetafield(L, 1, "__name") != LUA_TSTRING) {
    lua_settop(L, 1);
    lua_pushliteral(L, "table");
  }
  attr = !strcmp(lua_tostring(L, 2), "perf.attr");
  /* the sorted keys: strings kept alive by the table itself */
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING && nkeys < MAX_SORTED)
      keys[nkeys++] = lua_tostring(L, -1);
    else if (lua_type(L, -1) != LUA_TNUMBER || !lua_isinteger(L, -1) ||
             lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > (lua_Integer)lua_rawlen(L, 1))
      others++;
  }
  qsort(keys, nkeys, sizeof keys[0], cmp_keys);
  lua_pushvalue(L, 2);                          /* the name */
  piece(&a);
  put(&a, " {");
  n = (lua_Integer)lua_rawlen(L, 1);
  for (j = 1; j <= n; j++) {
    put(&a, first ? " " : ", ");
    first = 0;
    lua_rawgeti(L, 1, j);
    push_value(L, -1, 0);
    lua_remove(L, -2);
    piece(&a);
  }
  for (i = 0; i < nkeys; i++) {
    put(&a, first ? " " : ", ");
    first = 0;
    if (is_identifier(keys[i])) put(&a, keys[i]);
    else {
      lua_pushfstring(L, "[\"%s\"]", keys[i]);
      piece(&a);
    }
    put(&a, " = ");
    lua_getfield(L, 1, keys[i]);
    push_value(L, -1, 0);
    if (attr) {                    /* the names after the value */
      acc b = { L, 1 };
      put_attr_names(&b, keys[i], -2);
      done(&b);
    }
    lua_remove(L, -2);
    piece(&a);
  }
  if (others) {
    lua_pushfstring(L, "%s... (%d more)", first ? " " : ", ", others);
    piece(&a);
    first = 0;
  }
  put(&a, first ? "}" : " }");
  done(&a);
  return 1;
}

static const luaL_Reg show_meta[] = {
  { "__tostring", show_tostring },
  { NULL, NULL }
};

void pl_show_metatable(lua_State *L, const char *name) {
  pl_new_metatable(L, name, show_meta, NULL);
}

void pl_show(lua_State *L, int idx, const char *name) {
  idx = lua_absindex(L, idx);
  pl_show_metatable(L, name);
  lua_setmetatable(L, idx);
}

/* perf.core.show(t, name) -> t, printing as `name { ... }` */
static int l_show(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *name = luaL_checkstring(L, 2);
  luaL_argcheck(L, lua_getmetatable(L, 1) == 0, 1, "the table has a metatable already");
  pl_show(L, 1, name);
  lua_settop(L, 1);
  return 1;
}

void pl_open_show(lua_State *L) {
  static const char *const made_in_c[] = {
    "perf.attr", "perf.record", "perf.read", "perf.ring.stats", "perf.userpage", NULL
  };
  for (int i = 0; made_in_c[i]; i++) {
    pl_show_metatable(L, made_in_c[i]);
    lua_pop(L, 1);
  }
  static const luaL_Reg functions[] = {
    { "show", l_show },
    { NULL, NULL }
  };
  luaL_setfuncs(L, functions, 0);
}
