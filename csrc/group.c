/*
** group.c: the perf.group handle: events read together with one read(2).
**
** A group is built from events already open (lua/perf/counting/group.lua opens them):
** the leader first, the members joined to it, all with read_format GROUP and
** ID. The members live in the group's user value 1 (a list), which keeps
** them alive; the struct also caches pointers to their blocks for the read
** path, valid because a userdata never moves and the list holds it.
**
** Its user values are listed in group_read.h; reading is group_read.c's.
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
** tag (pl_group_tag) that pl_test_group looks for.
**
** "Separate" groups are events read one by one, used where the kernel
** refuses a real group (see group.lua); the same methods apply.
*/
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "group_read.h"

/* Room for entries of members joined to the leader from outside the group. */
#define PL_GROUP_SLACK 8

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
  if (err) return pl_group_fail(L, err, method, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* g:enable(): members first, the leader last (see the top of this file).
** A leader that may be counting already is switched off first, so members
** that were disabled meanwhile (perf.disable_all) join it cleanly. */
static int g_enable(lua_State *L) {
  pl_group *g = pl_check_group(L, 1);
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
  pl_group *g = pl_check_group(L, 1);
  pl_event *lead = g->ev[0];
  int err;
  if (g->separate || lead->fd < 0) return done(L, ioc_each(g, PERF_EVENT_IOC_DISABLE, 0), "disable");
  if ((err = ioc(lead, PERF_EVENT_IOC_DISABLE, 0)) == 0) lead->enabled = 0;
  return done(L, err, "disable");
}

/* g:reset(): every count to zero (the times keep running, as the kernel's
** PERF_EVENT_IOC_RESET leaves them). */
static int g_reset(lua_State *L) {
  pl_group *g = pl_check_group(L, 1);
  if (g->separate || g->ev[0]->fd < 0) return done(L, ioc_each(g, PERF_EVENT_IOC_RESET, -1), "reset");
  return done(L, ioc(g->ev[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP), "reset");
}

/* ---- introspection and lifecycle ---- */

static int g_notes(lua_State *L) {
  pl_check_group(L, 1);
  lua_getiuservalue(L, 1, 3);
  return 1;
}

/* g:separate() -> true when the members are read one by one */
static int g_separate(lua_State *L) {
  lua_pushboolean(L, pl_check_group(L, 1)->separate);
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
  pl_group *g = pl_to_group(L, 1);
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
  pl_group *g = pl_test_group(L, 1);
  if (g) g->open = 0;
  return 0;
}

static int g_len(lua_State *L) {
  pl_group *g = pl_to_group(L, 1);
  lua_pushinteger(L, g->n);
  return 1;
}

static int g_tostring(lua_State *L) {
  pl_group *g = pl_to_group(L, 1);
  luaL_Buffer b;
  int i, ok;
  if (!g->open) {
    lua_pushfstring(L, "perf.group (%d member%s, closed)", g->n, g->n == 1 ? "" : "s");
    return 1;
  }
  lua_settop(L, 1);
  lua_createtable(L, g->n, g->n + 2);             /* values at 2 */
  lua_getiuservalue(L, 1, 2);                      /* keys at 3 */
  ok = pl_group_fill(L, g, 2, 3, 0) == 0;
  lua_settop(L, 3);
  lua_getiuservalue(L, 1, 1);                      /* members at 4 */
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "perf.group (%d member%s%s, %s) {", g->n, g->n == 1 ? "" : "s",
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
    if (ok) {
      if (lua_rawgeti(L, 2, i) == LUA_TNUMBER) {
        lua_pushfstring(L, " = %I", lua_tointeger(L, -1));
        lua_remove(L, -2);
        luaL_addvalue(&b);
      } else {
        lua_pop(L, 1);
      }
    }
  }
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  return 1;
}

static const luaL_Reg methods[] = {
  {"read", pl_group_read}, {"scaled", pl_group_scaled},
  {"enable", g_enable}, {"disable", g_disable}, {"reset", g_reset},
  {"notes", g_notes}, {"separate", g_separate}, {"close", g_close},
  {NULL, NULL}
};

static const luaL_Reg metamethods[] = {
  {"__gc", g_gc}, {"__close", g_close}, {"__tostring", g_tostring},
  {"__len", g_len},
  {NULL, NULL}
};

/* Pushes a new group metatable: the prototype's metamethods, __name and
** tag, and __index = the methods plus the members (from the list at
** `list`), with read and scaled made for the group at `u` and its keys. */
static void push_metatable(lua_State *L, int list, int n, int u, int keys) {
  int i;
  lua_createtable(L, 0, 8);
  luaL_getmetatable(L, PL_GROUP_MT);
  lua_pushnil(L);
  while (lua_next(L, -2)) {                     /* a copy of the prototype */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);
  lua_createtable(L, n, (int)(sizeof methods / sizeof *methods));
  luaL_setfuncs(L, methods, 0);
  pl_group_push_readers(L, u, keys, n, lua_gettop(L));
  lua_setfield(L, -3, "scaled");
  lua_setfield(L, -2, "read");
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
    ev = pl_test_event(L, -1);
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
    g->ev[i - 1] = pl_test_event(L, -1);
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
  lua_pushboolean(L, pl_test_group(L, 1) != NULL);
  return 1;
}

static const luaL_Reg functions[] = {
  {"group", l_group}, {"is_group", l_is_group}, {"scale", pl_group_scale},
  {NULL, NULL}
};

void pl_open_group(lua_State *L) {
  /* the prototype of the groups' metatables, for __name lookups */
  pl_new_metatable(L, PL_GROUP_MT, metamethods, methods);
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &pl_group_tag);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
