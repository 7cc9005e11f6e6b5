/*
** tracefs.c: the one home of what the kernel's tracing directory says:
** where that directory is now (perf.core.tracing_dir, mounted), a
** tracepoint's id (tracepoint_id) and every tracepoint's (tracepoint_ids),
** which perf.tracefs and perf.tracepoint call; and, for the messages of
** calls that failed on a tracepoint, the name of its id, the fields of its
** format and the names a filter compares that the format lacks. It only
** looks: mounting tracefs on first use, and remembering the directory
** found, is perf.tracefs's (Lua).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* The directories of the mounted file systems of `kind` ("tracefs",
** "debugfs"), in the order of the mount table, each passed to `fn` until it
** returns nonzero; returns what `fn` returned last (0: none did). */
static int each_mount(const char *kind, int (*fn)(const char *dir, void *ud), void *ud) {
  FILE *f = setmntent("/proc/self/mounts", "re");
  struct mntent *m;
  int r = 0;
  if (!f) return 0;
  while (!r && (m = getmntent(f)) != NULL)
    if (strcmp(m->mnt_type, kind) == 0) r = fn(m->mnt_dir, ud);
  endmntent(f);
  return r;
}

/* Where tracing_dir looks: the directory found, and the first one that
** was there but not readable. */
typedef struct { char dir[2048]; char denied[2048]; const char *suffix; } look_state;

/* Whether DIR(+suffix)/events can be opened; notes a refused one. */
static int try_dir(const char *dir, void *ud) {
  look_state *s = ud;
  char events[4096];
  int fd;
  snprintf(events, sizeof events, "%s%s/events", dir, s->suffix);
  fd = open(events, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    snprintf(s->dir, sizeof s->dir, "%s%s", dir, s->suffix);
    return 1;
  }
  if (errno == EACCES && !s->denied[0])
    snprintf(s->denied, sizeof s->denied, "%s%s", dir, s->suffix);
  return 0;
}

/* The tracing directory there now (one with events/): where perf mounts
** tracefs, debugfs's tracing/, then any mounted tracefs or debugfs; 0 if
** none, with s->denied naming the first one that could not be read. This
** only looks: mounting one on first use is perf.tracefs's. */
static int tracing_dir(look_state *s) {
  s->dir[0] = s->denied[0] = '\0';
  s->suffix = "";
  if (try_dir("/sys/kernel/tracing", s) || try_dir("/sys/kernel/debug/tracing", s) ||
      each_mount("tracefs", try_dir, s))
    return 1;
  s->suffix = "/tracing";
  return each_mount("debugfs", try_dir, s);
}

/* Reads the id file at `path`: 0, or ENOENT/EACCES (not opened), EIO (no number). */
static int read_id(const char *path, long long *id) {
  FILE *f = fopen(path, "re");
  int ok;
  if (!f) return errno == EACCES ? EACCES : ENOENT;
  ok = fscanf(f, "%lld", id) == 1;
  fclose(f);
  return ok ? 0 : EIO;
}

/* Reads the id of tracepoint sys:event under tracing directory `dir`. */
static int tracepoint_id(const char *dir, const char *sys, size_t syslen,
                         const char *event, long long *id) {
  char path[4096];
  snprintf(path, sizeof path, "%s/events/%.*s/%s/id", dir, (int)syslen, sys, event);
  return read_id(path, id);
}

int pl_tracepoint_id(const char *name, uint64_t *id) {
  look_state s;
  const char *colon = strchr(name, ':');
  long long v;
  if (!colon || strchr(name, '/') || !tracing_dir(&s)) return 0;
  if (tracepoint_id(s.dir, name, (size_t)(colon - name), colon + 1, &v) != 0 || v < 0)
    return 0;
  *id = (uint64_t)v;
  return 1;
}

/* Calls fn(system, event, id, ud) for each tracepoint under `dir` (those
** with an id) until it returns nonzero; returns what it returned last. */
static int each_tracepoint(const char *dir, int (*fn)(const char *, const char *,
                           long long, void *), void *ud) {
  char path[4096];
  DIR *top, *sys;
  struct dirent *s, *e;
  int r = 0;
  snprintf(path, sizeof path, "%s/events", dir);
  if (!(top = opendir(path))) return 0;
  while (!r && (s = readdir(top)) != NULL) {
    if (s->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/events/%s", dir, s->d_name);
    if (!(sys = opendir(path))) continue;
    while (!r && (e = readdir(sys)) != NULL) {
      long long v;
      if (e->d_name[0] != '.' && tracepoint_id(dir, s->d_name, strlen(s->d_name),
                                               e->d_name, &v) == 0)
        r = fn(s->d_name, e->d_name, v, ud);
    }
    closedir(sys);
  }
  closedir(top);
  return r;
}

typedef struct { lua_State *L; long long id; const char *dir; } find_state;

/* Pushes "system:event" and its format's path when the id is the one sought. */
static int push_if_id(const char *sys, const char *event, long long id, void *ud) {
  find_state *f = ud;
  if (id != f->id) return 0;
  lua_pushfstring(f->L, "%s:%s", sys, event);
  lua_pushfstring(f->L, "%s/events/%s/%s/format", f->dir, sys, event);
  return 1;
}

/* Pushes "system:event" of tracepoint `id` and its format's path; returns 0
** (pushing nothing) when tracefs is not mounted or no tracepoint has it. */
static int push_tracepoint(lua_State *L, long long id) {
  look_state s;
  find_state f = { L, id, NULL };
  if (!tracing_dir(&s)) return 0;
  f.dir = s.dir;
  return each_tracepoint(s.dir, push_if_id, &f);
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

/* perf.core.tracing_dir() -> dir | nil, denied */
static int l_tracing_dir(lua_State *L) {
  look_state s;
  if (tracing_dir(&s)) {
    lua_pushstring(L, s.dir);
    return 1;
  }
  lua_pushnil(L);
  if (s.denied[0]) lua_pushstring(L, s.denied);
  else lua_pushnil(L);
  return 2;
}

static int push_dir(const char *dir, void *ud) {
  lua_State *L = ud;
  lua_pushstring(L, dir);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return 0;
}

/* perf.core.mounted(kind) -> { dir, ... } */
static int l_mounted(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  lua_newtable(L);
  each_mount(kind, push_dir, L);
  return 1;
}

/* perf.core.tracepoint_id(dir, system, event) -> id | nil, errno */
static int l_tracepoint_id(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  size_t syslen;
  const char *sys = luaL_checklstring(L, 2, &syslen);
  const char *event = luaL_checkstring(L, 3);
  long long id;
  int err = tracepoint_id(dir, sys, syslen, event, &id);
  if (err == 0) {
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
  }
  lua_pushnil(L);
  lua_pushinteger(L, err);
  return 2;
}

static int set_id(const char *sys, const char *event, long long id, void *ud) {
  lua_State *L = ud;
  lua_pushfstring(L, "%s:%s", sys, event);
  lua_pushinteger(L, (lua_Integer)id);
  lua_rawset(L, -3);
  return 0;
}

/* perf.core.tracepoint_ids(dir) -> { ["system:event"] = id, ... } */
static int l_tracepoint_ids(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  lua_newtable(L);
  each_tracepoint(dir, set_id, L);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"check_filter", l_check_filter},
  {"tracing_dir", l_tracing_dir},
  {"mounted", l_mounted},
  {"tracepoint_id", l_tracepoint_id},
  {"tracepoint_ids", l_tracepoint_ids},
  {NULL, NULL}
};

void pl_open_tracefs(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  lua_pushstring(L, filter_syntax);
  lua_setfield(L, -2, "filter_syntax");
}
