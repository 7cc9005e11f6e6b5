/*
** group.c: the perf.group handle: events read together with one read(2).
**
** A group is built from events already open (lua/perf/group.lua opens them):
** the leader first, the members joined to it, all with read_format GROUP and
** ID. The members live in the group's user value 1 (a list), which keeps
** them alive; the struct also caches pointers to their blocks for the read
** path, valid because a userdata never moves and the list holds it.
**
**   uv1 = list of member events (member 1 is the leader)
**   uv2 = keys: keys[i] = member i's name, or false when an earlier member
**         has the same name (t[name] then names the first)
**   uv3 = notes: strings saying what the library did differently than asked
**
** Enabling. The kernel schedules a group as a unit when its leader is
** enabled, taking the members that are enabled at that moment. A member
** enabled on its own while its leader is already active is scheduled only
** at the task's next context switch when it belongs to another PMU than the
** leader (task-clock and cpu-clock are PMUs of their own, the other software
** events share one, tracepoints and breakpoints have theirs): checked on
** Linux 6.18 with PERF_IOC_FLAG_GROUP and with PR_TASK_PERF_EVENTS_ENABLE.
** So members stay enabled and the leader gates the group; g:enable() makes
** sure of the members first and switches the leader on last.
**
** Each group has its own metatable, a copy of the "perf.group" one whose
** __index is a table of the methods and the members, so g[i] and g:read
** are plain table lookups: an __index function would cost about a third of
** what g:read may add to the read(2) itself. The copies carry a private
** tag that check_group looks for.
**
** "Separate" groups are events read one by one, used where the kernel
** refuses a real group (see group.lua); the same methods apply.
*/
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "perf_core.h"

#define PL_GROUP_MT "perf.group"

/* Room for entries of members joined to the leader from outside the group. */
#define PL_GROUP_SLACK 8

/* Reads of groups up to this many words use a buffer on the C stack. */
#define PL_STACK_WORDS 256

typedef struct pl_group {
  int n;                /* members */
  int open;             /* 0 once closed */
  int separate;         /* members are independent events, read one by one */
  int cap;              /* words a read needs, with room for PL_GROUP_SLACK */
  uint64_t rf;          /* the leader's read_format */
  pl_event **ev;        /* the members, in this block (owned by uv1) */
  uint64_t *ids;        /* their kernel ids, in this block */
  uint64_t *buf;        /* read buffer past PL_STACK_WORDS, in this block */
} pl_group;

static const char group_tag = 0;   /* its address marks group metatables */

/* The perf.group at idx, or NULL. */
static pl_group *to_group(lua_State *L, int idx) {
  pl_group *g = NULL;
  if (lua_getmetatable(L, idx)) {
    if (lua_rawgetp(L, -1, &group_tag) == LUA_TBOOLEAN)
      g = (pl_group *)lua_touserdata(L, idx);
    lua_pop(L, 2);
  }
  return g;
}

static pl_group *test_group(lua_State *L, int idx) {
  pl_group *g = to_group(L, idx);
  if (!g) luaL_typeerror(L, idx, PL_GROUP_MT);
  return g;
}

static pl_group *check_group(lua_State *L, int idx) {
  pl_group *g = test_group(L, idx);
  if (!g->open) luaL_error(L, "attempt to use a closed perf group");
  return g;
}

static int fail(lua_State *L, int err, const char *method, const char *hint) {
  return pl_fail(L, err, lua_pushfstring(L, "g:%s", method), hint);
}

/* ---- reading ---- */

__extension__ typedef unsigned __int128 u128;

/* The count a multiplexed event would have reached had it run all the time
** it was enabled; 0 when it never ran. Exact in 128 bits. */
static uint64_t scale(uint64_t v, uint64_t en, uint64_t run) {
  if (run == 0) return 0;
  if (run >= en) return v;
  return (uint64_t)((u128)v * en / run);
}

/* Fills t from vals[0..n-1] (present[i] == 0: nil) and the times: the
** integer keys first, then the names (keys[i], false for a duplicate) and
** keys[n + 1], keys[n + 2] = "time_enabled", "time_running". */
static void fill(lua_State *L, int t, int keys, int n, const uint64_t *vals,
                 const char *present, uint64_t en, uint64_t run) {
  int i;
  for (i = 0; i < n; i++) {
    if (present[i]) lua_pushinteger(L, (lua_Integer)vals[i]);
    else lua_pushnil(L);
    lua_rawseti(L, t, i + 1);
  }
  for (i = 0; i < n; i++) {
    if (lua_rawgeti(L, keys, i + 1) == LUA_TSTRING) {
      if (present[i]) lua_pushinteger(L, (lua_Integer)vals[i]);
      else lua_pushnil(L);
      lua_rawset(L, t);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_rawgeti(L, keys, n + 1);
  lua_pushinteger(L, (lua_Integer)en);
  lua_rawset(L, t);
  lua_rawgeti(L, keys, n + 2);
  lua_pushinteger(L, (lua_Integer)run);
  lua_rawset(L, t);
}

/* Room for the values of groups of up to this many members on the C stack;
** larger groups take a temporary block. */
#define PL_STACK_MEMBERS 64

typedef struct pl_values {
  uint64_t *v;
  char *present;
  uint64_t v_stack[PL_STACK_MEMBERS];
  char present_stack[PL_STACK_MEMBERS];
} pl_values;

static void values_init(lua_State *L, pl_values *vs, int n) {
  if (n <= PL_STACK_MEMBERS) {
    vs->v = vs->v_stack;
    vs->present = vs->present_stack;
  } else {
    vs->v = (uint64_t *)lua_newuserdatauv(L, (size_t)n * (sizeof(uint64_t) + 1), 0);
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
static int read_group(lua_State *L, pl_group *g, int t, int keys, int scaled) {
  uint64_t stack[PL_STACK_WORDS], *buf = g->cap <= PL_STACK_WORDS ? stack : g->buf;
  size_t size = g->cap <= PL_STACK_WORDS ? sizeof stack : (size_t)g->cap * sizeof *buf;
  uint64_t rf = g->rf, nr, en = 0, run = 0;
  size_t k = 1, per, words;
  ssize_t got;
  pl_values vs;
  int i;
  got = read(g->ev[0]->fd, buf, size);
  if (got < 0 && errno == ENOSPC) {
    /* more members joined the leader than the buffer holds: read into a
    ** temporary block large enough for the kernel's maximum read */
    size = (3 + 3 * (size_t)65536) * sizeof *buf;
    buf = (uint64_t *)lua_newuserdatauv(L, size, 0);
    got = read(g->ev[0]->fd, buf, size);
  }
  if (got < 0) return errno;
  if (got == 0) return -1;
  words = (size_t)got / sizeof *buf;
  nr = buf[0];
  if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) en = buf[k++];
  if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) run = buf[k++];
  per = 2 + !!(rf & PERF_FORMAT_LOST);
  if (k + nr * per > words) return EIO;
  values_init(L, &vs, g->n);
  for (i = 0; i < g->n; i++) {
    const uint64_t *e = buf + k + (size_t)i * per;
    uint64_t j;
    if ((uint64_t)i >= nr || e[1] != g->ids[i]) {
      for (j = 0, e = NULL; j < nr; j++)
        if (buf[k + j * per + 1] == g->ids[i]) { e = buf + k + j * per; break; }
    }
    vs.present[i] = e != NULL;
    vs.v[i] = e ? (scaled ? scale(e[0], en, run) : e[0]) : 0;
  }
  fill(L, t, keys, g->n, vs.v, vs.present, en, run);
  return 0;
}

/* Members read one by one: a separate group, or one whose leader was closed
** (the kernel made its members single events). The times reported are those
** of the first member still open; scaling uses each member's own. */
static int read_each(lua_State *L, pl_group *g, int t, int keys, int scaled) {
  uint64_t en0 = 0, run0 = 0;
  int i, first = 1;
  pl_values vs;
  values_init(L, &vs, g->n);
  for (i = 0; i < g->n; i++) {
    uint64_t v, en, run, lost;
    const pl_event *ev = g->ev[i];
    vs.present[i] = ev->fd >= 0;
    vs.v[i] = 0;
    if (ev->fd < 0) continue;
    {
      int err = pl_event_read(ev, &v, &en, &run, &lost);
      if (err) return err;
    }
    if (first) { en0 = en; run0 = run; first = 0; }
    vs.v[i] = scaled ? scale(v, en, run) : v;
  }
  fill(L, t, keys, g->n, vs.v, vs.present, en0, run0);
  return 0;
}

#define PL_EOF_HINT "the group is in error state (a pinned group that lost " \
                    "its place on the PMU); reopen it"

/* The read methods in a group's own __index are closures over the group
** (upvalue 1) and its keys (upvalue 2): calling them on their own group
** needs no metatable lookup. Called on another group, they check it. */
static int do_read(lua_State *L, int scaled) {
  pl_group *g;
  int keys, err;
  if (lua_rawequal(L, 1, lua_upvalueindex(1))) {
    g = (pl_group *)lua_touserdata(L, 1);
    keys = lua_upvalueindex(2);
  } else {
    g = test_group(L, 1);
    keys = 0;
  }
  if (!g->open) return luaL_error(L, "attempt to use a closed perf group");
  if (lua_type(L, 2) != LUA_TTABLE) {
    if (!lua_isnoneornil(L, 2)) return luaL_typeerror(L, 2, "table or nil");
    lua_settop(L, 1);
    lua_createtable(L, g->n, g->n + 2);
  }
  if (!keys) {
    lua_settop(L, 2);
    lua_getiuservalue(L, 1, 2);
    keys = 3;
  }
  if (g->separate || g->ev[0]->fd < 0) err = read_each(L, g, 2, keys, scaled);
  else err = read_group(L, g, 2, keys, scaled);
  if (err) {
    const char *method = scaled ? "scaled" : "read";
    if (err < 0) return fail(L, EIO, method, PL_EOF_HINT);
    return fail(L, err, method, NULL);
  }
  lua_pushvalue(L, 2);
  return 1;
}

/* g:read([t]) -> t: t[i], t[name] = member i's count, t.time_enabled,
** t.time_running. Allocates nothing when t is given (after its first fill). */
static int g_read(lua_State *L) { return do_read(L, 0); }

/* g:scaled([t]) -> t: the same with each count scaled for multiplexing. */
static int g_scaled(lua_State *L) { return do_read(L, 1); }

/* perf.core.scale(value, enabled, running) -> estimate, fraction_running */
static int l_scale(lua_State *L) {
  uint64_t v = (uint64_t)luaL_checkinteger(L, 1);
  lua_Integer en = luaL_checkinteger(L, 2), run = luaL_checkinteger(L, 3);
  luaL_argcheck(L, en >= 0, 2, "negative time");
  luaL_argcheck(L, run >= 0, 3, "negative time");
  lua_pushinteger(L, (lua_Integer)scale(v, (uint64_t)en, (uint64_t)run));
  if (run == 0) lua_pushnumber(L, 0.0);
  else if (run >= en) lua_pushnumber(L, 1.0);
  else lua_pushnumber(L, (lua_Number)run / (lua_Number)en);
  return 2;
}

/* ---- switching ---- */

static int ioc(pl_event *ev, unsigned long req, unsigned long arg) {
  if (ev->fd < 0) return 0;
  return ioctl(ev->fd, req, arg) == 0 ? 0 : errno;
}

/* Every open member, each on its own. */
static int ioc_each(pl_group *g, unsigned long req, int state) {
  int i, err;
  for (i = g->n - 1; i >= 0; i--) {
    if ((err = ioc(g->ev[i], req, 0)) != 0) return err;
    if (state >= 0 && g->ev[i]->fd >= 0) g->ev[i]->enabled = state;
  }
  return 0;
}

static int done(lua_State *L, int err, const char *method) {
  if (err) return fail(L, err, method, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* g:enable(): members first, the leader last (see the top of this file).
** A leader that may be counting already is switched off first, so members
** that were disabled meanwhile (perf.disable_all) join it cleanly. */
static int g_enable(lua_State *L) {
  pl_group *g = check_group(L, 1);
  pl_event *lead = g->ev[0];
  int i, err = 0;
  if (g->separate || lead->fd < 0) return done(L, ioc_each(g, PERF_EVENT_IOC_ENABLE, 1), "enable");
  if (lead->enabled && (err = ioc(lead, PERF_EVENT_IOC_DISABLE, 0)) != 0)
    return done(L, err, "enable");
  lead->enabled = 0;
  for (i = 1; i < g->n && !err; i++) {
    err = ioc(g->ev[i], PERF_EVENT_IOC_ENABLE, 0);
    if (!err && g->ev[i]->fd >= 0) g->ev[i]->enabled = 1;
  }
  if (!err && (err = ioc(lead, PERF_EVENT_IOC_ENABLE, 0)) == 0) lead->enabled = 1;
  return done(L, err, "enable");
}

/* g:disable(): the leader stops the group; members stay enabled under it. */
static int g_disable(lua_State *L) {
  pl_group *g = check_group(L, 1);
  pl_event *lead = g->ev[0];
  int err;
  if (g->separate || lead->fd < 0) return done(L, ioc_each(g, PERF_EVENT_IOC_DISABLE, 0), "disable");
  if ((err = ioc(lead, PERF_EVENT_IOC_DISABLE, 0)) == 0) lead->enabled = 0;
  return done(L, err, "disable");
}

/* g:reset(): every count to zero (the times keep running, as the kernel's
** PERF_EVENT_IOC_RESET leaves them). */
static int g_reset(lua_State *L) {
  pl_group *g = check_group(L, 1);
  if (g->separate || g->ev[0]->fd < 0) return done(L, ioc_each(g, PERF_EVENT_IOC_RESET, -1), "reset");
  return done(L, ioc(g->ev[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP), "reset");
}

/* ---- introspection and lifecycle ---- */

static int g_notes(lua_State *L) {
  check_group(L, 1);
  lua_getiuservalue(L, 1, 3);
  return 1;
}

/* g:separate() -> true when the members are read one by one */
static int g_separate(lua_State *L) {
  lua_pushboolean(L, check_group(L, 1)->separate);
  return 1;
}

static void close_event(pl_event *ev) {
  if (ev->fd >= 0) {
    int fd = ev->fd;
    ev->fd = -1;
    close(fd);            /* not retried on EINTR: the fd is gone either way */
  }
}

/* g:close(): every member, the leader last (so no member is ever promoted
** to a single event in between). Idempotent. */
static int g_close(lua_State *L) {
  pl_group *g = test_group(L, 1);
  int i;
  if (g->open) {
    g->open = 0;
    for (i = g->n - 1; i >= 0; i--) close_event(g->ev[i]);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* __gc does not close members: each member's own finalizer closes its fd
** when it is collected, and one still referenced elsewhere must keep
** working. A dropped group's members are collected with it. */
static int g_gc(lua_State *L) {
  pl_group *g = to_group(L, 1);
  if (g) g->open = 0;
  return 0;
}

static int g_len(lua_State *L) {
  pl_group *g = test_group(L, 1);
  lua_pushinteger(L, g->n);
  return 1;
}

static int g_tostring(lua_State *L) {
  pl_group *g = test_group(L, 1);
  luaL_Buffer b;
  int i, ok;
  if (!g->open) {
    lua_pushfstring(L, "perf.group (%d members, closed)", g->n);
    return 1;
  }
  lua_settop(L, 1);
  lua_createtable(L, g->n, g->n + 2);             /* values at 2 */
  lua_getiuservalue(L, 1, 2);                      /* keys at 3 */
  ok = (g->separate || g->ev[0]->fd < 0 ? read_each(L, g, 2, 3, 0)
                                        : read_group(L, g, 2, 3, 0)) == 0;
  lua_settop(L, 3);
  lua_getiuservalue(L, 1, 1);                      /* members at 4 */
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "perf.group (%d members%s, %s) {", g->n,
                  g->separate ? ", read one by one" : "",
                  g->ev[0]->fd >= 0 && g->ev[0]->enabled ? "enabled" : "disabled");
  luaL_addvalue(&b);
  for (i = 1; i <= g->n; i++) {
    const char *name;
    lua_rawgeti(L, 4, i);
    lua_getiuservalue(L, -1, 1);
    name = lua_tostring(L, -1);
    lua_pop(L, 2);           /* the name stays referenced by the member */
    lua_pushfstring(L, "%s\"%s\"", i > 1 ? ", " : "", name ? name : "?");
    luaL_addvalue(&b);
    if (ok && lua_rawgeti(L, 2, i) == LUA_TNUMBER) {
      lua_pushfstring(L, " = %I", lua_tointeger(L, -1));
      lua_remove(L, -2);
    } else {
      lua_pop(L, 1);
      lua_pushliteral(L, "");
    }
    luaL_addvalue(&b);
  }
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  return 1;
}

static const luaL_Reg methods[] = {
  {"read", g_read}, {"scaled", g_scaled},
  {"enable", g_enable}, {"disable", g_disable}, {"reset", g_reset},
  {"notes", g_notes}, {"separate", g_separate}, {"close", g_close},
  {NULL, NULL}
};

static const luaL_Reg metamethods[] = {
  {"__gc", g_gc}, {"__close", g_close}, {"__tostring", g_tostring},
  {"__len", g_len},
  {NULL, NULL}
};

/* Pushes a new group metatable: the metamethods, __name, the tag, and
** __index = the methods plus the members (from the list at `list`), with
** read and scaled as closures over the group at `u` and its keys. */
static void push_metatable(lua_State *L, int list, int n, int u, int keys) {
  int i;
  lua_createtable(L, 0, 8);
  luaL_setfuncs(L, metamethods, 0);
  lua_pushliteral(L, PL_GROUP_MT);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &group_tag);
  lua_createtable(L, n, (int)(sizeof methods / sizeof *methods));
  luaL_setfuncs(L, methods, 0);
  lua_pushvalue(L, u);
  lua_pushvalue(L, keys);
  lua_pushcclosure(L, g_read, 2);
  lua_setfield(L, -2, "read");
  lua_pushvalue(L, u);
  lua_pushvalue(L, keys);
  lua_pushcclosure(L, g_scaled, 2);
  lua_setfield(L, -2, "scaled");
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_rawseti(L, -2, i);
  }
  lua_setfield(L, -2, "__index");
}

/* Pushes keys: keys[i] = member i's name, or false when an earlier member
** has the same name; keys[n+1], keys[n+2] = "time_enabled", "time_running". */
static void push_keys(lua_State *L, int list, int n) {
  int i, k, dup;
  lua_createtable(L, n + 2, 0);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_getiuservalue(L, -1, 1);                 /* its name */
    lua_remove(L, -2);
    for (k = 1, dup = 0; k < i && !dup; k++) {
      lua_rawgeti(L, list, k);
      lua_getiuservalue(L, -1, 1);
      dup = lua_rawequal(L, -1, -3);
      lua_pop(L, 2);
    }
    if (dup || lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
    }
    lua_rawseti(L, -2, i);
  }
  lua_pushliteral(L, "time_enabled");
  lua_rawseti(L, -2, n + 1);
  lua_pushliteral(L, "time_running");
  lua_rawseti(L, -2, n + 2);
}

/* perf.core.group(events [, separate [, notes]]) -> g
** `events` are open perf.events, the leader first. Unless `separate`, each
** member must have joined the leader and every one must read with
** PERF_FORMAT_GROUP and PERF_FORMAT_ID. Raises on misuse. */
static int l_group(lua_State *L) {
  const uint64_t need = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  lua_Integer n, i;
  int separate, cap, u;
  size_t head, size;
  pl_group *g;
  lua_settop(L, 3);
  luaL_checktype(L, 1, LUA_TTABLE);
  separate = lua_toboolean(L, 2);
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  n = (lua_Integer)lua_rawlen(L, 1);
  luaL_argcheck(L, n >= 1, 1, "a group needs at least one event");
  luaL_argcheck(L, n <= 65536, 1, "too many events");
  for (i = 1; i <= n; i++) {
    pl_event *ev;
    lua_rawgeti(L, 1, i);
    ev = pl_to_event(L, -1);
    if (!ev) return luaL_error(L, "group member %d: perf.event expected, got %s",
                               (int)i, luaL_typename(L, -1));
    if (ev->fd < 0) return luaL_error(L, "group member %d: attempt to use a closed perf event", (int)i);
    if (!separate) {
      if ((ev->attr.read_format & need) != need)
        return luaL_error(L, "group member %d: read_format needs \"group\" and \"id\"", (int)i);
      if (i > 1) {
        lua_getiuservalue(L, -1, 2);
        lua_rawgeti(L, 1, 1);
        if (!lua_rawequal(L, -1, -2))
          return luaL_error(L, "group member %d: not opened with target.group = the leader", (int)i);
        lua_pop(L, 2);
      }
    }
    lua_pop(L, 1);
  }
  /* our own copy of the list, so later changes to the argument don't matter */
  lua_createtable(L, (int)n, 0);                   /* 4 */
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    lua_rawseti(L, 4, i);
  }
  cap = 3 + 3 * ((int)n + PL_GROUP_SLACK);
  head = (sizeof(pl_group) + 7) & ~(size_t)7;
  size = head + (size_t)n * (sizeof(pl_event *) + sizeof(uint64_t)) +
         (cap > PL_STACK_WORDS ? (size_t)cap * sizeof(uint64_t) : 0);
  g = (pl_group *)lua_newuserdatauv(L, size, 3);  /* 5 */
  u = lua_gettop(L);
  memset(g, 0, sizeof *g);                         /* closed, no members */
  push_keys(L, 4, (int)n);                         /* 6 */
  push_metatable(L, 4, (int)n, u, u + 1);
  lua_setmetatable(L, u);
  lua_setiuservalue(L, u, 2);
  if (lua_istable(L, 3)) lua_pushvalue(L, 3);
  else lua_newtable(L);
  lua_setiuservalue(L, u, 3);
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, u, 1);
  g->ev = (pl_event **)(void *)((char *)g + head);
  g->ids = (uint64_t *)(void *)((char *)g->ev + (size_t)n * sizeof(pl_event *));
  g->buf = cap > PL_STACK_WORDS ? g->ids + n : NULL;
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 4, i);
    g->ev[i - 1] = pl_to_event(L, -1);
    g->ids[i - 1] = g->ev[i - 1]->id;
    lua_pop(L, 1);
  }
  g->rf = g->ev[0]->attr.read_format;
  g->n = (int)n;
  g->separate = separate;
  g->cap = cap;
  g->open = 1;
  return 1;
}

/* perf.core.is_group(v) -> true when v is a perf.group */
static int l_is_group(lua_State *L) {
  lua_pushboolean(L, to_group(L, 1) != NULL);
  return 1;
}

void pl_open_group(lua_State *L) {
  /* the prototype of the groups' metatables, for __name lookups */
  luaL_newmetatable(L, PL_GROUP_MT);
  luaL_setfuncs(L, metamethods, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &group_tag);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_group);
  lua_setfield(L, -2, "group");
  lua_pushcfunction(L, l_is_group);
  lua_setfield(L, -2, "is_group");
  lua_pushcfunction(L, l_scale);
  lua_setfield(L, -2, "scale");
}
