/*
** group_read.c: g:read([t]) and g:scaled([t]), the counts of every member
** from one read(2) of the leader.
**
** Filling t is most of what a group read costs beyond the read(2) itself:
** n integer keys and n + 2 named ones. Stores the Lua VM makes with
** constant keys cost about half of the same stores made through the C API
** (lua_rawseti, lua_rawset), so each group gets a small Lua function made
** for it, with its member names written in as constants:
**
**   local values, G, slow = ...
**   return function(g, t)
**     if g ~= G then return slow(g, t) end      -- called on another group
**     local r, en, run, v1, v2 = values(t)     -- C: one read(2), decoded
**     if not r then return nil, en, run end     -- nil, message, errno
**     r[1] = v1
**     r[2] = v2
**     r["task\045clock"] = v1
**     r["page\045faults"] = v2
**     r["time_enabled"] = en
**     r["time_running"] = run
**     return r
**   end
**
** So t is filled with ordinary assignments (a __newindex sees the keys t
** does not have yet). The function is compiled at the group's first read
** (see first_read); groups of more than PL_FAST_MEMBERS members are filled
** from C (pl_group_fill), with ordinary assignments too.
*/
#include <errno.h>
#include <unistd.h>

#include "counter_read.h"
#include "group_read.h"
#include "read_format.h"

/* The functions between the read(2) and the Lua VM are inlined into the
** reader: each return the kernel's own calls have left unpredictable costs
** more than the call saves. */
#define PL_INLINE static inline __attribute__((always_inline))

/* Groups up to this many members get a generated reader. */
#define PL_FAST_MEMBERS 64

/* ---- the handle ---- */

const char pl_group_tag = 0;   /* its address marks group metatables */

pl_group *pl_test_group(lua_State *L, int idx) {
  pl_group *g = NULL;
  if (lua_getmetatable(L, idx)) {
    if (lua_rawgetp(L, -1, &pl_group_tag) == LUA_TBOOLEAN)
      g = (pl_group *)lua_touserdata(L, idx);
    lua_pop(L, 2);
  }
  return g;
}

pl_group *pl_to_group(lua_State *L, int idx) {
  pl_group *g = pl_test_group(L, idx);
  if (!g) luaL_typeerror(L, idx, PL_GROUP_MT);
  return g;
}

pl_group *pl_check_group(lua_State *L, int idx) {
  pl_group *g = pl_to_group(L, idx);
  if (!g->open) luaL_error(L, "attempt to use a closed perf group");
  return g;
}

int pl_group_fail(lua_State *L, int err, const char *method, const char *hint) {
  return pl_fail(L, err, lua_pushfstring(L, "g:%s", method), hint);
}

/* ---- decoding ---- */

/* Room for the values of groups of up to this many members on the C stack;
** larger groups take a temporary block (a userdata left on the stack). */
#define PL_STACK_MEMBERS PL_FAST_MEMBERS

typedef struct pl_values {
  uint64_t en, run;     /* the times the read gave */
  int pushed;           /* temporary blocks left on the Lua stack */
  uint64_t *v;          /* v[i]: member i's count */
  char *present;        /* present[i] == 0: member i is gone (nil) */
  uint64_t v_stack[PL_STACK_MEMBERS];
  char present_stack[PL_STACK_MEMBERS];
} pl_values;

static void values_init(lua_State *L, pl_values *vs, int n) {
  vs->en = vs->run = 0;
  vs->pushed = 0;
  if (n <= PL_STACK_MEMBERS) {
    vs->v = vs->v_stack;
    vs->present = vs->present_stack;
  } else {
    vs->v = (uint64_t *)lua_newuserdatauv(L, (size_t)n * (sizeof(uint64_t) + 1), 0);
    vs->pushed++;
    vs->present = (char *)(vs->v + n);
  }
}

/* One read(2) of the leader. The layout is uapi's struct read_format with
** PERF_FORMAT_GROUP: nr, [time_enabled], [time_running], then nr entries of
** value, [id], [lost]. Entries are matched to members by id: the kernel
** lists the leader and then its siblings in the order they joined, which
** is tried first, but members closed since (the kernel drops them) or
** joined from outside shift that order. Returns 0 or an errno (-1: end of
** file, the error state). */
PL_INLINE int read_group(lua_State *L, pl_group *g, int scaled, pl_values *vs) {
  uint64_t stack[PL_STACK_WORDS], *buf = g->cap <= PL_STACK_WORDS ? stack : g->buf;
  size_t size = g->cap <= PL_STACK_WORDS ? sizeof stack : (size_t)g->cap * sizeof *buf;
  uint64_t rf = g->rf, nr;
  size_t k = pl_rf_head_words(rf), per = pl_rf_entry_words(rf), words;
  pl_counts head;
  ssize_t got;
  int i;
  got = pl_counter_read(g->ev[0]->fd, buf, size);
  if (got < 0 && errno == ENOSPC) {
    /* more members joined the leader than the buffer holds: read into a
    ** temporary block large enough for the kernel's maximum read */
    size = (3 + 3 * (size_t)65536) * sizeof *buf;
    buf = (uint64_t *)lua_newuserdatauv(L, size, 0);
    vs->pushed++;
    got = pl_counter_read(g->ev[0]->fd, buf, size);
  }
  if (got < 0) return errno;
  if (got == 0) return -1;
  words = (size_t)got / sizeof *buf;
  if (words < k) return EIO;
  nr = pl_rf_head(buf, rf, &head);
  vs->en = head.enabled;
  vs->run = head.running;
  if (nr > (words - k) / per) return EIO;   /* entries: value, id [, lost] */
  for (i = 0; i < g->n; i++) {
    const uint64_t *e = buf + k + (size_t)i * per;
    uint64_t j;
    if ((uint64_t)i >= nr || e[1] != g->ids[i]) {
      for (j = 0, e = NULL; j < nr; j++)
        if (buf[k + j * per + 1] == g->ids[i]) { e = buf + k + j * per; break; }
    }
    vs->present[i] = e != NULL;
    vs->v[i] = e ? (scaled ? pl_scale(e[0], vs->en, vs->run, NULL) : e[0]) : 0;
  }
  return 0;
}

/* Members read one by one: a separate group, or one whose leader was closed
** (the kernel made its members single events). The times reported are those
** of the first member still open; scaling uses each member's own. */
PL_INLINE int read_each(pl_group *g, int scaled, pl_values *vs) {
  int i, first = 1;
  for (i = 0; i < g->n; i++) {
    uint64_t v, en, run, lost;
    const pl_event *ev = g->ev[i];
    vs->present[i] = ev->fd >= 0;
    vs->v[i] = 0;
    if (ev->fd < 0) continue;
    {
      int err = pl_event_read(ev, &v, &en, &run, &lost);
      if (err) return err;
    }
    if (first) { vs->en = en; vs->run = run; first = 0; }
    vs->v[i] = scaled ? pl_scale(v, en, run, NULL) : v;
  }
  return 0;
}

/* Every member's count into *vs (set up by values_init). */
PL_INLINE int read_values(lua_State *L, pl_group *g, int scaled, pl_values *vs) {
  if (g->separate || g->ev[0]->fd < 0) return read_each(g, scaled, vs);
  return read_group(L, g, scaled, vs);
}

static void push_value(lua_State *L, const pl_values *vs, int i) {
  if (vs->present[i]) lua_pushinteger(L, (lua_Integer)vs->v[i]);
  else lua_pushnil(L);
}

/* ---- filling t from C ---- */

int pl_group_fill(lua_State *L, pl_group *g, int t, int keys, int scaled) {
  pl_values vs;
  int i, err;
  values_init(L, &vs, g->n);
  if ((err = read_values(L, g, scaled, &vs)) != 0) return err;
  for (i = 0; i < g->n; i++) {
    push_value(L, &vs, i);
    lua_seti(L, t, i + 1);
  }
  for (i = 0; i < g->n; i++) {
    if (lua_rawgeti(L, keys, i + 1) == LUA_TSTRING) {
      push_value(L, &vs, i);
      lua_settable(L, t);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_rawgeti(L, keys, g->n + 1);
  lua_pushinteger(L, (lua_Integer)vs.en);
  lua_settable(L, t);
  lua_rawgeti(L, keys, g->n + 2);
  lua_pushinteger(L, (lua_Integer)vs.run);
  lua_settable(L, t);
  return 0;
}

#define PL_EOF_HINT "the group is in error state (a pinned group that lost " \
                    "its place on the PMU); reopen it"

static int read_failed(lua_State *L, int err, int scaled) {
  const char *method = scaled ? "scaled" : "read";
  if (err < 0) return pl_group_fail(L, EIO, method, PL_EOF_HINT);
  return pl_group_fail(L, err, method, NULL);
}

/* Raises msg at the position of the function `level` levels up: 1 for
** the caller of a C method, 2 from values() (whose caller is generated). */
static int raise_at(lua_State *L, int level, const char *msg) {
  luaL_where(L, level);
  lua_pushstring(L, msg);
  lua_concat(L, 2);
  return lua_error(L);
}

static int closed_error(lua_State *L, int level) {
  return raise_at(L, level, "attempt to use a closed perf group");
}

/* t at idx (the top), or a new table there; raises when it is neither
** table nor nil. */
static void table_arg(lua_State *L, int idx, int n, int scaled, int level) {
  if (lua_type(L, idx) == LUA_TTABLE) return;
  if (!lua_isnoneornil(L, idx))
    raise_at(L, level, lua_pushfstring(L, "bad argument #1 to '%s' (table or nil expected, got %s)",
                                       scaled ? "scaled" : "read", luaL_typename(L, idx)));
  lua_settop(L, idx - 1);
  lua_createtable(L, n, n + 2);
  pl_show(L, -1, "perf.read");     /* a table of ours: it prints readably */
}

/* The C readers: plain functions for any group (the prototype metatable),
** or closures over one group (upvalue 1) and its keys (upvalue 2). */
static int do_read(lua_State *L, int scaled) {
  pl_group *g;
  int keys, err;
  if (lua_rawequal(L, 1, lua_upvalueindex(1))) {
    g = (pl_group *)lua_touserdata(L, 1);
    keys = lua_upvalueindex(2);
  } else {
    g = pl_to_group(L, 1);
    keys = 0;
  }
  if (!g->open) return closed_error(L, 1);
  lua_settop(L, 2);
  table_arg(L, 2, g->n, scaled, 1);
  if (!keys) {
    lua_getiuservalue(L, 1, 2);
    keys = 3;
  }
  if ((err = pl_group_fill(L, g, 2, keys, scaled)) != 0) return read_failed(L, err, scaled);
  lua_pushvalue(L, 2);
  return 1;
}

/* g:read([t]) -> t: t[i], t[name] = member i's count, t.time_enabled,
** t.time_running. Allocates nothing when t is given (after its first fill). */
int pl_group_read(lua_State *L) { return do_read(L, 0); }

/* g:scaled([t]) -> t: the same with each count scaled for multiplexing. */
int pl_group_scaled(lua_State *L) { return do_read(L, 1); }

int pl_group_scale(lua_State *L) {
  uint64_t v = (uint64_t)luaL_checkinteger(L, 1);
  lua_Integer en = luaL_checkinteger(L, 2), run = luaL_checkinteger(L, 3);
  luaL_argcheck(L, en >= 0, 2, "negative time");
  luaL_argcheck(L, run >= 0, 3, "negative time");
  double fraction;
  lua_pushinteger(L, (lua_Integer)pl_scale(v, (uint64_t)en, (uint64_t)run, &fraction));
  lua_pushnumber(L, (lua_Number)fraction);
  return 2;
}

/* ---- the generated readers ---- */

/* values(t) for the generated reader, over the group (upvalue 1); values
** scaled(t) the same scaled. They return
**   t, en, run, v1 .. vn   the counts (nil for a member gone), t made when nil
**   nil, msg, errno        the read failed
** The generated code calls them with exactly one argument. */
PL_INLINE int values(lua_State *L, int scaled) {
  pl_group *g = (pl_group *)lua_touserdata(L, lua_upvalueindex(1));
  pl_values vs;
  int i, err;
  if (!g->open) return closed_error(L, 2);
  if (lua_type(L, 1) != LUA_TTABLE) table_arg(L, 1, g->n, scaled, 2);
  values_init(L, &vs, g->n);              /* on the C stack: n <= PL_FAST_MEMBERS */
  if ((err = read_values(L, g, scaled, &vs)) != 0) return read_failed(L, err, scaled);
  if (vs.pushed) lua_pop(L, vs.pushed);           /* a temporary read block */
  if (g->n + 2 > LUA_MINSTACK) luaL_checkstack(L, g->n + 2, "group read");
  lua_pushinteger(L, (lua_Integer)vs.en);
  lua_pushinteger(L, (lua_Integer)vs.run);
  for (i = 0; i < g->n; i++) push_value(L, &vs, i);
  return g->n + 3;
}

static int values_plain(lua_State *L) { return values(L, 0); }
static int values_scaled(lua_State *L) { return values(L, 1); }

/* Adds s as a Lua string literal: bytes other than ASCII letters, digits
** and a few safe marks as three-digit decimal escapes (whatever the C
** locale says a letter is). */
static void add_literal(luaL_Buffer *b, const char *s, size_t len) {
  size_t i;
  luaL_addchar(b, '"');
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '_' || c == ':' || c == '.' || c == '/' || c == ' ') {
      luaL_addchar(b, (char)c);
    } else {
      char esc[5];
      esc[0] = '\\';
      esc[1] = (char)('0' + c / 100);
      esc[2] = (char)('0' + c / 10 % 10);
      esc[3] = (char)('0' + c % 10);
      esc[4] = '\0';
      luaL_addstring(b, esc);
    }
  }
  luaL_addchar(b, '"');
}

/* Pushes the source of the reader for n members with the keys at `keys`.
** The key strings stay referenced by the keys table, so their pointers
** outlive the pops that keep the buffer's stack discipline. */
static void push_source(lua_State *L, int keys, int n) {
  luaL_Buffer b;
  int i;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "local values, G, slow = ...\n"
                     "return function(g, t)\n"
                     "  if g ~= G then return slow(g, t) end\n"
                     "  local r, en, run");
  for (i = 1; i <= n; i++) {
    lua_pushfstring(L, ", v%d", i);
    luaL_addvalue(&b);
  }
  luaL_addstring(&b, " = values(t)\n"
                     "  if not r then return nil, en, run end\n");
  for (i = 1; i <= n; i++) {
    lua_pushfstring(L, "  r[%d] = v%d\n", i, i);
    luaL_addvalue(&b);
  }
  for (i = 1; i <= n + 2; i++) {
    const char *s;
    size_t len;
    if (lua_rawgeti(L, keys, i) != LUA_TSTRING) {
      lua_pop(L, 1);
      continue;
    }
    s = lua_tolstring(L, -1, &len);
    lua_pop(L, 1);
    luaL_addstring(&b, "  r[");
    add_literal(&b, s, len);
    if (i <= n) lua_pushfstring(L, "] = v%d\n", i);
    else lua_pushstring(L, i == n + 1 ? "] = en\n" : "] = run\n");
    luaL_addvalue(&b);
  }
  luaL_addstring(&b, "  return r\nend\n");
  luaL_pushresult(&b);
}

/* Compiled sources by text: groups with the same names share one compiled
** chunk (perf.measure makes a group per call). At most PL_CHUNKS of them are
** kept; past that the cache starts over. */
#define PL_CHUNKS 256
static const char chunks_key = 0;

/* Pushes the chunk for the source on top (which it replaces), or returns 0
** with nothing pushed in its place when it does not compile. */
static int push_chunk(lua_State *L) {
  int src = lua_gettop(L);
  lua_Integer count;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &chunks_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 8);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &chunks_key);
  }
  lua_pushvalue(L, src);
  if (lua_rawget(L, -2) != LUA_TFUNCTION) {
    size_t len;
    const char *s = lua_tolstring(L, src, &len);
    lua_pop(L, 1);
    if (luaL_loadbufferx(L, s, len, "=perf.group", "t") != LUA_OK) {
      lua_settop(L, src - 1);
      return 0;
    }
    lua_rawgeti(L, -2, 1);                         /* cache[1]: entries */
    count = lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    if (count > PL_CHUNKS) {                       /* start over */
      lua_createtable(L, 0, 8);
      lua_pushvalue(L, -1);
      lua_rawsetp(L, LUA_REGISTRYINDEX, &chunks_key);
      lua_replace(L, -3);
      count = 1;
    }
    lua_pushinteger(L, count);
    lua_rawseti(L, -3, 1);
    lua_pushvalue(L, src);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_replace(L, src);
  lua_settop(L, src);
  return 1;
}

/* Pushes the generated reader of the group at u (keys at `keys`), or
** returns 0 with nothing pushed when it does not compile (a bug). */
static int push_generated(lua_State *L, int u, int keys, int n, int scaled) {
  push_source(L, keys, n);
  if (!push_chunk(L)) return 0;
  lua_pushvalue(L, u);
  lua_pushcclosure(L, scaled ? values_scaled : values_plain, 1);
  lua_pushvalue(L, u);
  lua_pushcfunction(L, scaled ? pl_group_scaled : pl_group_read);
  lua_call(L, 3, 1);
  return 1;
}

/* The first g:read or g:scaled of a group: a closure over the group
** (upvalue 1), its keys (2) and its __index table (3). It compiles the
** generated reader, puts it in __index in its own place, and reads through
** it; groups that only read their members one by one (perf.stat) never
** compile one. Misuse is raised here, at the caller's position. */
static int first_read(lua_State *L, int scaled) {
  pl_group *g;
  int nargs = lua_gettop(L);
  if (!lua_rawequal(L, 1, lua_upvalueindex(1))) return do_read(L, scaled);
  g = (pl_group *)lua_touserdata(L, 1);
  if (!g->open) return closed_error(L, 1);
  if (nargs >= 2 && !lua_istable(L, 2) && !lua_isnil(L, 2)) table_arg(L, 2, g->n, scaled, 1);
  if (!push_generated(L, lua_upvalueindex(1), lua_upvalueindex(2), g->n, scaled))
    return do_read(L, scaled);
  lua_pushvalue(L, -1);
  lua_setfield(L, lua_upvalueindex(3), scaled ? "scaled" : "read");
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
}

static int first_plain(lua_State *L) { return first_read(L, 0); }
static int first_scaled(lua_State *L) { return first_read(L, 1); }

void pl_group_push_readers(lua_State *L, int u, int keys, int n, int index) {
  int scaled;
  for (scaled = 0; scaled <= 1; scaled++) {
    lua_pushvalue(L, u);
    lua_pushvalue(L, keys);
    if (n <= PL_FAST_MEMBERS) {
      lua_pushvalue(L, index);
      lua_pushcclosure(L, scaled ? first_scaled : first_plain, 3);
    } else {
      lua_pushcclosure(L, scaled ? pl_group_scaled : pl_group_read, 2);
    }
  }
}
