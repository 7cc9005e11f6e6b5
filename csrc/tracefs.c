/*
** tracefs.c: what the kernel's tracing directory says about a tracepoint,
** for the messages of the calls that failed on one: the name of a
** tracepoint id, the fields of its format, and the names a filter compares
** that the format lacks. It reads only what is mounted already; finding,
** mounting and caching tracefs for use is perf.tracefs's (Lua), which
** reaches this file's checks through perf.core.check_filter.
*/
#include <dirent.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_core.h"

/* A filter compares one of these without the format naming it (the
** kernel's filter_pred_* special fields: kernel/trace/trace_events.c). */
static const char *const special_fields[] = {"common_cpu", "CPU", "COMM", "comm"};

static const char filter_syntax[] =
  "a filter is field op value, joined by && and || (op: == != < <= > >= & for "
  "numbers, == != ~ for strings, ~ taking a glob)";

/* The tracing directory mounted now (with events/), into buf; 0 if none. */
static int tracing_dir(char *buf, size_t size) {
  static const char *const kinds[] = {"tracefs", "debugfs"};
  int found = 0;
  for (int k = 0; k < 2 && !found; k++) {
    FILE *f = setmntent("/proc/self/mounts", "re");
    struct mntent *m;
    if (!f) return 0;
    while (!found && (m = getmntent(f)) != NULL) {
      char events[4096];
      if (strcmp(m->mnt_type, kinds[k]) != 0) continue;
      snprintf(buf, size, k == 0 ? "%s" : "%s/tracing", m->mnt_dir);
      snprintf(events, sizeof events, "%s/events", buf);
      found = access(events, R_OK | X_OK) == 0;
    }
    endmntent(f);
  }
  return found;
}

static int read_id(const char *path, long long *id) {
  FILE *f = fopen(path, "re");
  int ok;
  if (!f) return 0;
  ok = fscanf(f, "%lld", id) == 1;
  fclose(f);
  return ok;
}

int pl_tracepoint_id(const char *name, uint64_t *id) {
  char dir[2048], path[4096];
  const char *colon = strchr(name, ':');
  long long v;
  if (!colon || strchr(name, '/') || !tracing_dir(dir, sizeof dir)) return 0;
  snprintf(path, sizeof path, "%s/events/%.*s/%s/id", dir, (int)(colon - name), name,
           colon + 1);
  if (!read_id(path, &v) || v < 0) return 0;
  *id = (uint64_t)v;
  return 1;
}

/* Pushes "system:event" of tracepoint `id` and its format's path; returns 0
** (pushing nothing) when tracefs is not mounted or no tracepoint has it. */
static int push_tracepoint(lua_State *L, long long id) {
  char dir[2048], path[4096];
  DIR *top, *sys;
  struct dirent *s, *e;
  int found = 0;
  if (!tracing_dir(dir, sizeof dir)) return 0;
  snprintf(path, sizeof path, "%s/events", dir);
  if (!(top = opendir(path))) return 0;
  while (!found && (s = readdir(top)) != NULL) {
    if (s->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/events/%s", dir, s->d_name);
    if (!(sys = opendir(path))) continue;
    while (!found && (e = readdir(sys)) != NULL) {
      long long v;
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/events/%s/%s/id", dir, s->d_name, e->d_name);
      if (read_id(path, &v) && v == id) {
        lua_pushfstring(L, "%s:%s", s->d_name, e->d_name);
        snprintf(path, sizeof path, "%s/events/%s/%s/format", dir, s->d_name, e->d_name);
        lua_pushstring(L, path);
        found = 1;
      }
    }
    closedir(sys);
  }
  closedir(top);
  return found;
}

/* Pushes the list of field names of the format file at `path` (after
** "field:", the declaration's last identifier, before a trailing [N]:
** "char comm[16]", "__data_loc char[] name"). */
static int push_fields(lua_State *L, const char *path) {
  FILE *f = fopen(path, "re");
  char line[1024];
  lua_Integer n = 0;
  if (!f) return 0;
  lua_newtable(L);
  while (fgets(line, sizeof line, f)) {
    char *p = strstr(line, "field:"), *end, *start;
    if (!p || !(end = strchr(p, ';'))) continue;
    while (end > p && end[-1] == ' ') end--;
    if (end > p && end[-1] == ']') {           /* char comm[16], not char[] x */
      while (end > p && end[-1] != '[') end--;
      if (end > p) end--;
      while (end > p && end[-1] == ' ') end--;
    }
    start = end;
    while (start > p && (start[-1] == '_' || (start[-1] >= '0' && start[-1] <= '9') ||
           ((start[-1] | 32) >= 'a' && (start[-1] | 32) <= 'z'))) start--;
    if (start == end) continue;
    lua_pushlstring(L, start, (size_t)(end - start));
    lua_rawseti(L, -2, ++n);
  }
  fclose(f);
  return 1;
}

static int is_word(int c) {
  return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

static int has_field(lua_State *L, int fields, const char *s, size_t len) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, fields);
  for (i = 0; i < (lua_Integer)(sizeof special_fields / sizeof special_fields[0]); i++)
    if (strlen(special_fields[i]) == len && memcmp(special_fields[i], s, len) == 0)
      return 1;
  for (i = 1; i <= n; i++) {
    size_t fl;
    const char *f;
    lua_rawgeti(L, fields, i);
    f = lua_tolstring(L, -1, &fl);
    lua_pop(L, 1);
    if (f && fl == len && memcmp(f, s, len) == 0) return 1;
  }
  return 0;
}

/* Checks the names `text` compares (an identifier followed by an operator,
** outside quotes) against the list of fields at index `fields`. Returns 1,
** or pushes "<name> has no field 'x' (its fields: a, b)" and returns 0. */
static int check_filter(lua_State *L, const char *name, int fields, const char *text) {
  luaL_Buffer bad;
  const char *p = text;
  int nbad = 0;
  fields = lua_absindex(L, fields);
  luaL_buffinit(L, &bad);
  while (*p) {
    const char *w = p, *q;
    if (*p == '"' || *p == '\'') {                   /* a quoted value */
      const char *close = strchr(p + 1, *p);
      p = close ? close + 1 : p + strlen(p);
      continue;
    }
    if (!is_word((unsigned char)*p) || (*p >= '0' && *p <= '9')) {
      p++;
      while (is_word((unsigned char)p[-1]) && is_word((unsigned char)*p)) p++;
      continue;
    }
    while (is_word((unsigned char)*p)) p++;
    for (q = p; *q == ' ' || *q == '\t'; q++) {}
    if (*q && strchr("=!<>~&", *q) && !has_field(L, fields, w, (size_t)(p - w))) {
      luaL_addstring(&bad, nbad++ ? ", '" : "'");
      luaL_addlstring(&bad, w, (size_t)(p - w));
      luaL_addchar(&bad, '\'');
    }
  }
  luaL_pushresult(&bad);
  if (nbad == 0) {
    lua_pop(L, 1);
    return 1;
  }
  {
    luaL_Buffer b;
    lua_Integer i, n = (lua_Integer)lua_rawlen(L, fields), shown = 0;
    int badidx = lua_gettop(L);
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "%s has no field %s (its fields: ", name, lua_tostring(L, badidx));
    luaL_addvalue(&b);
    for (i = 1; i <= n; i++) {
      const char *f;
      lua_rawgeti(L, fields, i);
      f = lua_tostring(L, -1);        /* the table keeps the string alive */
      lua_pop(L, 1);
      if (!f || strncmp(f, "common_", 7) == 0) continue;
      if (shown++) luaL_addstring(&b, ", ");
      luaL_addstring(&b, f);
    }
    luaL_addchar(&b, ')');
    luaL_pushresult(&b);
    lua_remove(L, badidx);
  }
  return 0;
}

int pl_explain_filter(lua_State *L, long long id, const char *text) {
  int top = lua_gettop(L);
  if (!push_tracepoint(L, id)) return 0;
  if (!push_fields(L, lua_tostring(L, -1))) {
    lua_settop(L, top);
    return 0;
  }
  if (check_filter(L, lua_tostring(L, top + 1), -1, text))
    lua_pushstring(L, filter_syntax);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return 1;
}

/* perf.core.check_filter(name, fields, text) -> true | nil, message
** Whether filter `text` compares only fields of tracepoint `name` (whose
** field names are the list `fields`); the message names the others. */
static int l_check_filter(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *text = luaL_checkstring(L, 3);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (check_filter(L, name, 2, text)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

static const luaL_Reg funcs[] = {
  {"check_filter", l_check_filter},
  {NULL, NULL}
};

void pl_open_tracefs(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  lua_pushstring(L, filter_syntax);
  lua_setfield(L, -2, "filter_syntax");
}
