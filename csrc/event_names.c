/*
** event_names.c: the generic events by the names perf gives them, the
** names ev:modify_attributes takes for `type` and `config`, and the name
** an event opened without one gets.
**
** The tables here are the one home of those names: perf.core exports them
** (perf.core.types, hardware_events, software_events) and perf.events
** builds its lookups from them. A generic name is resolved here alone:
** the event syntax (perf.event.parse) calls perf.core.generic_event and
** generic_config, as ev:modify_attributes does, so both find and refuse a
** name alike.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "perf_core.h"

/* A generic event: its config, its canonical name, then perf's aliases. */
typedef struct { uint64_t config; const char *names[3]; } generic;

/* PERF_TYPE_HARDWARE configs: PERF_COUNT_HW_* of linux/perf_event.h */
static const generic hardware[] = {
  {0, {"cpu-cycles", "cycles"}}, {1, {"instructions"}},
  {2, {"cache-references"}}, {3, {"cache-misses"}},
  {4, {"branch-instructions", "branches"}}, {5, {"branch-misses"}},
  {6, {"bus-cycles"}},
  {7, {"stalled-cycles-frontend", "idle-cycles-frontend"}},
  {8, {"stalled-cycles-backend", "idle-cycles-backend"}},
  {9, {"ref-cycles"}},
};

/* PERF_TYPE_SOFTWARE configs: PERF_COUNT_SW_* */
static const generic software[] = {
  {0, {"cpu-clock"}}, {1, {"task-clock"}}, {2, {"page-faults", "faults"}},
  {3, {"context-switches", "cs"}}, {4, {"cpu-migrations", "migrations"}},
  {5, {"minor-faults"}}, {6, {"major-faults"}}, {7, {"alignment-faults"}},
  {8, {"emulation-faults"}}, {9, {"dummy"}}, {10, {"bpf-output"}},
  {11, {"cgroup-switches"}},
};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* The config of generic event `name` (any case) in `list`; 0 if unknown. */
static int find_generic(const generic *list, size_t n, const char *name,
                        uint64_t *config) {
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < 3 && list[i].names[k]; k++)
      if (strcasecmp(list[i].names[k], name) == 0) {
        *config = list[i].config;
        return 1;
      }
  return 0;
}

/* Pushes "no software event 'x' (did you mean 'y'?)". */
static const char *push_unknown_generic(lua_State *L, const char *kind, const generic *list,
                                        size_t n, const char *name) {
  const char *cands[64];
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < 3 && list[i].names[k] && c < 64; k++)
      cands[c++] = list[i].names[k];
  lua_pushfstring(L, "no %s event '%s'%s", kind, name, pl_did_you_mean(L, name, cands, c));
  lua_remove(L, -2);
  return lua_tostring(L, -1);
}

/* The generic list of `type` (hardware or software) and its kind's word. */
static const generic *generic_list(uint64_t type, size_t *n, const char **kind) {
  if (type == PERF_TYPE_HARDWARE) { *n = COUNT(hardware); *kind = "hardware"; return hardware; }
  if (type == PERF_TYPE_SOFTWARE) { *n = COUNT(software); *kind = "software"; return software; }
  *n = 0;
  *kind = "";
  return NULL;
}

/* The config of generic event `name` of `type` (hardware or software);
** raises "ev:modify_attributes: no software event 'x' (...)" if unknown. */
static uint64_t generic_config(lua_State *L, uint64_t type, const char *name) {
  size_t n;
  const char *kind;
  const generic *list = generic_list(type, &n, &kind);
  uint64_t v = 0;
  if (!find_generic(list, n, name, &v))
    luaL_error(L, "ev:modify_attributes: %s", push_unknown_generic(L, kind, list, n, name));
  return v;
}

/* The type number of PMU `name` (/sys/bus/event_source/devices/NAME/type). */
static int pmu_type(const char *name, uint64_t *type) {
  char path[512];
  FILE *f;
  unsigned long long v;
  int ok;
  if (strchr(name, '/') || name[0] == '.') return 0;
  snprintf(path, sizeof path, "/sys/bus/event_source/devices/%s/type", name);
  if (!(f = fopen(path, "re"))) return 0;
  ok = fscanf(f, "%llu", &v) == 1;
  fclose(f);
  if (ok) *type = v;
  return ok;
}

/* The config named `s` for events of `type`. Raises when it is unknown. */
static uint64_t config_of(lua_State *L, uint64_t type, const char *s) {
  uint64_t v = 0;
  const char *end;
  switch (type) {
  case PERF_TYPE_HARDWARE:
  case PERF_TYPE_SOFTWARE:
    return generic_config(L, type, s);
  case PERF_TYPE_TRACEPOINT:
    if (!strchr(s, ':'))
      luaL_error(L, "ev:modify_attributes: '%s' is not a tracepoint "
                 "(write \"subsystem:event\")", s);
    if (!pl_tracepoint_id(s, &v))
      luaL_error(L, "ev:modify_attributes: no tracepoint '%s' in the mounted tracefs", s);
    return v;
  case PERF_TYPE_RAW:
    end = s + (s[0] == 'r');
    if (*end && strspn(end, "0123456789abcdefABCDEF") == strlen(end) && strlen(end) <= 16) {
      sscanf(end, "%" SCNx64, &v);
      return v;
    }
    luaL_error(L, "ev:modify_attributes: raw config '%s' must be rNNN (hexadecimal)", s);
    return 0;
  default:
    luaL_error(L, "ev:modify_attributes: config names of type %d events are not "
               "known here: give the number (perf.attr(name).config)", (int)type);
    return 0;
  }
}

/* Generic event `name` (any case): a hardware one, else a software one. */
static int find_event(const char *name, uint64_t *type, uint64_t *config) {
  if (find_generic(hardware, COUNT(hardware), name, config)) {
    *type = PERF_TYPE_HARDWARE;
    return 1;
  }
  if (find_generic(software, COUNT(software), name, config)) {
    *type = PERF_TYPE_SOFTWARE;
    return 1;
  }
  return 0;
}

/* A config name on an event whose type has none (a breakpoint): the name
** is an event's, as perf.open reads it ("cpu-clock" sets type and config),
** and the kernel answers the change. */
static uint64_t event_of(lua_State *L, const char *s, uint64_t *type) {
  uint64_t v = 0;
  const char *cands[32];
  size_t c = 0;
  if (find_event(s, type, &v)) return v;
  if (strchr(s, ':') && pl_tracepoint_id(s, &v)) { *type = PERF_TYPE_TRACEPOINT; return v; }
  for (size_t i = 0; i < COUNT(hardware); i++) cands[c++] = hardware[i].names[0];
  for (size_t i = 0; i < COUNT(software); i++) cands[c++] = software[i].names[0];
  luaL_error(L, "ev:modify_attributes: unknown event '%s'%s", s, pl_did_you_mean(L, s, cands, c));
  return 0;
}

void pl_resolve_names(lua_State *L, int idx, uint64_t current_type) {
  uint64_t type = current_type;
  int named;
  idx = lua_absindex(L, idx);
  lua_newtable(L);                                   /* a copy to rewrite */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_getfield(L, -1, "type");
  named = !lua_isnil(L, -1);
  if (lua_type(L, -1) == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    const pl_name *t;
    for (t = pl_type_names; t->name && strcmp(t->name, s) != 0; t++) {}
    if (t->name) type = t->value;
    else if (!pmu_type(s, &type)) type = pl_checkenum(L, -1, pl_type_names,
                                                     "ev:modify_attributes: attr field 'type'");
    lua_pushinteger(L, (lua_Integer)type);
    lua_setfield(L, -3, "type");
  } else if (lua_isinteger(L, -1)) {
    type = (uint64_t)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  lua_getfield(L, -1, "config");
  if (lua_type(L, -1) == LUA_TSTRING) {
    if (!named && type > PERF_TYPE_RAW) {
      lua_pushinteger(L, (lua_Integer)event_of(L, lua_tostring(L, -1), &type));
      lua_setfield(L, -3, "config");
      lua_pushinteger(L, (lua_Integer)type);
      lua_setfield(L, -3, "type");
    } else {
      lua_pushinteger(L, (lua_Integer)config_of(L, type, lua_tostring(L, -1)));
      lua_setfield(L, -3, "config");
    }
  }
  lua_pop(L, 1);
}

/* The canonical name of `config` in `list`, or NULL. */
static const char *generic_name(const generic *list, size_t n, uint64_t config) {
  for (size_t i = 0; i < n; i++)
    if (list[i].config == config) return list[i].names[0];
  return NULL;
}

/* perf's spelling, as `perf stat` prints an event given by numbers. The
** names only the front can find (cache events, tracepoints by id, PMUs
** from sysfs) are added by perf.naming, which falls back on this. */
void pl_push_event_name(lua_State *L, const struct pl_attr *a) {
  const char *name = NULL;
  const pl_name *t;
  char buf[80];
  switch (a->type) {
  case PERF_TYPE_HARDWARE: name = generic_name(hardware, COUNT(hardware), a->config); break;
  case PERF_TYPE_SOFTWARE: name = generic_name(software, COUNT(software), a->config); break;
  case PERF_TYPE_RAW:
    snprintf(buf, sizeof buf, "r%" PRIx64, a->config);
    name = buf;
    break;
  case PERF_TYPE_BREAKPOINT:      /* config1 is bp_addr, config2 bp_len */
    for (t = pl_bp_type_names; t->name && t->value != a->bp_type; t++) {}
    snprintf(buf, sizeof buf, "mem:0x%" PRIx64 "/%" PRIu64 ":%s", a->config1,
             a->config2, t->name ? t->name : "?");
    name = buf;
    break;
  }
  if (name) {
    lua_pushstring(L, name);
    return;
  }
  for (t = pl_type_names; t->name && t->value != a->type; t++) {}
  if (t->name)
    snprintf(buf, sizeof buf, "%s/config=0x%" PRIx64 "/", t->name, a->config);
  else
    snprintf(buf, sizeof buf, "type %" PRIu32 "/config=0x%" PRIx64 "/", a->type, a->config);
  lua_pushstring(L, buf);
}

static int l_event_name(lua_State *L) {
  struct pl_attr a;
  luaL_checktype(L, 1, LUA_TTABLE);
  pl_attr_from_table(L, 1, &a);
  pl_push_event_name(L, &a);
  return 1;
}

/* perf.core.generic_event(name) -> type, config | nil */
static int l_generic_event(lua_State *L) {
  uint64_t type, config;
  if (!find_event(luaL_checkstring(L, 1), &type, &config)) return 0;
  lua_pushinteger(L, (lua_Integer)type);
  lua_pushinteger(L, (lua_Integer)config);
  return 2;
}

/* perf.core.generic_config(type, name) -> config | nil, message */
static int l_generic_config(lua_State *L) {
  lua_Integer type = luaL_checkinteger(L, 1);
  const char *name = luaL_checkstring(L, 2), *kind;
  size_t n;
  const generic *list = generic_list((uint64_t)type, &n, &kind);
  uint64_t v;
  luaL_argcheck(L, list != NULL, 1, "a hardware or software type");
  if (find_generic(list, n, name, &v)) {
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
  }
  lua_pushnil(L);
  push_unknown_generic(L, kind, list, n, name);
  return 2;
}

static void push_generic(lua_State *L, const generic *list, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 2, 1);
    lua_pushstring(L, list[i].names[0]);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, (lua_Integer)list[i].config);
    lua_rawseti(L, -2, 2);
    lua_newtable(L);
    for (size_t k = 1; k < 3 && list[i].names[k]; k++) {
      lua_pushstring(L, list[i].names[k]);
      lua_rawseti(L, -2, (lua_Integer)k);
    }
    lua_setfield(L, -2, "aliases");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void pl_open_event_names(lua_State *L) {
  const pl_name *t;
  lua_newtable(L);                    /* types: name -> attr.type */
  for (t = pl_type_names; t->name; t++) {
    lua_pushinteger(L, (lua_Integer)t->value);
    lua_setfield(L, -2, t->name);
  }
  lua_setfield(L, -2, "types");
  push_generic(L, hardware, COUNT(hardware));
  lua_setfield(L, -2, "hardware_events");
  push_generic(L, software, COUNT(software));
  lua_setfield(L, -2, "software_events");
  static const luaL_Reg functions[] = {
    { "event_name", l_event_name },
    { "generic_event", l_generic_event },
    { "generic_config", l_generic_config },
    { NULL, NULL }
  };
  luaL_setfuncs(L, functions, 0);
}
