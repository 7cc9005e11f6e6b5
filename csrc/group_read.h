/*
** group_read.h: the perf.group handle and its reading (group_read.c),
** under group.c (building, switching, lifecycle, registration).
**
** A group's user values:
**   uv1 = list of member events (member 1 is the leader)
**   uv2 = keys: keys[i] = member i's name, or false when an earlier member
**         has the same name (t[name] then names the first);
**         keys[n + 1], keys[n + 2] = "time_enabled", "time_running"
**   uv3 = notes: strings saying what the library did differently than asked
*/
#ifndef PERF_GROUP_READ_H
#define PERF_GROUP_READ_H

#include "perf_core.h"

#pragma GCC visibility push(hidden)

#define PL_GROUP_MT "perf.group"

/* Reads of groups up to this many words use a buffer on the C stack. */
#define PL_STACK_WORDS 256

typedef struct pl_group {
  int n;                /* members */
  int open;             /* 0 once closed */
  int separate;         /* members are independent events, read one by one */
  int cap;              /* words a read needs, with room for members joined later */
  uint64_t rf;          /* the leader's read_format */
  pl_event **ev;        /* the members, in this block (owned by uv1) */
  uint64_t *ids;        /* their kernel ids, in this block */
  uint64_t *buf;        /* read buffer past PL_STACK_WORDS, in this block */
} pl_group;

/* Group metatables (the prototype and each group's own copy) hold
** t[&pl_group_tag] = true. */
extern const char pl_group_tag;

/* The perf.group at idx, as lauxlib's accessors: test returns NULL, to
** raises on another type, check raises on a closed group too. */
pl_group *pl_test_group(lua_State *L, int idx);
pl_group *pl_to_group(lua_State *L, int idx);
pl_group *pl_check_group(lua_State *L, int idx);

/* Pushes nil, "g:<method>: ...", err; returns 3. */
int pl_group_fail(lua_State *L, int err, const char *method, const char *hint);

/* Reads every member of g into the table at t (keys at `keys`), as g:read
** (scaled: as g:scaled) fills it, with ordinary assignments. Returns 0 or
** an errno (-1: end of file, the group's error state). */
int pl_group_fill(lua_State *L, pl_group *g, int t, int keys, int scaled);

/* Pushes g:read and g:scaled for the group of n members at u (keys at
** `keys`), made for that group alone, to be stored in its __index table
** (at `index`): see group_read.c. */
void pl_group_push_readers(lua_State *L, int u, int keys, int n, int index);

/* g_read/g_scaled for any group: the prototype metatable's methods. */
int pl_group_read(lua_State *L);
int pl_group_scaled(lua_State *L);

/* perf.core.scale(value, enabled, running) -> estimate, fraction_running */
int pl_group_scale(lua_State *L);

#pragma GCC visibility pop

#endif
