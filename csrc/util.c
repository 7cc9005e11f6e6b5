/*
** util.c: module functions that are not handles: symbol addresses for
** breakpoints, addresses of Lua values, the prctl switches, and probes of
** what the running kernel accepts.
*/
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf_core.h"

/* perf.symbol(name [, library]) -> address | nil, msg, errno */
static int l_symbol(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *lib = luaL_optstring(L, 2, NULL);
  void *h = RTLD_DEFAULT, *p;
  const char *err;
  if (lib) {
    /* kept loaded for good: the address must stay valid for breakpoints */
    h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      err = dlerror();
      lua_pushnil(L);
      lua_pushfstring(L, "perf.symbol \"%s\": cannot load \"%s\": %s", name,
                      lib, err ? err : "?");
      lua_pushinteger(L, ENOENT);
      return 3;
    }
  }
  dlerror();
  p = dlsym(h, name);
  err = dlerror();
  if (!p || err) {
    lua_pushnil(L);
    lua_pushfstring(L, "perf.symbol \"%s\": not found in %s (%s); static "
                    "functions have no dynamic symbol: try the library that "
                    "exports it, or an address", name,
                    lib ? lib : "the process's global symbols",
                    err ? err : "null address");
    lua_pushinteger(L, ENOENT);
    return 3;
  }
  lua_pushinteger(L, (lua_Integer)(uintptr_t)p);
  return 1;
}

/* perf.addressof(string | userdata) -> address of its bytes or block */
static int l_addressof(lua_State *L) {
  const void *p;
  switch (lua_type(L, 1)) {
  case LUA_TSTRING: p = lua_tostring(L, 1); break;
  case LUA_TUSERDATA: case LUA_TLIGHTUSERDATA: p = lua_touserdata(L, 1); break;
  default:
    return luaL_typeerror(L, 1, "string or userdata");
  }
  lua_pushinteger(L, (lua_Integer)(uintptr_t)p);
  return 1;
}

static int task_events(lua_State *L, int op, const char *what) {
  if (prctl(op, 0, 0, 0, 0) != 0) return pl_fail(L, errno, what, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* perf.enable_all() / perf.disable_all(): every event this thread created */
static int l_enable_all(lua_State *L) {
  return task_events(L, PR_TASK_PERF_EVENTS_ENABLE, "perf.enable_all");
}
static int l_disable_all(lua_State *L) {
  return task_events(L, PR_TASK_PERF_EVENTS_DISABLE, "perf.disable_all");
}

/* perf.core.kernel_attr_size() -> bytes of the running kernel's
** perf_event_attr. A size past a page is refused with E2BIG before the
** kernel reads anything, and the kernel writes its own size back. */
static int l_kernel_attr_size(lua_State *L) {
  struct pl_attr a;
  memset(&a, 0, sizeof a);
  a.size = 8192;
  a.type = PERF_TYPE_SOFTWARE;
  if (syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) >= 0)
    return luaL_error(L, "kernel_attr_size: the kernel accepted a 8192-byte attr");
  if (errno != E2BIG) return pl_fail(L, errno, "perf.core.kernel_attr_size", NULL);
  lua_pushinteger(L, a.size);
  return 1;
}

/* A DIR* owned by a userdata, so that a memory error while listing (which
** longjmps out of l_listdir) still closes the directory at collection. */
typedef struct dirbox { DIR *d; } dirbox;
#define DIRBOX_MT "perf.dirbox"

static int dirbox_gc(lua_State *L) {
  dirbox *b = (dirbox *)luaL_checkudata(L, 1, DIRBOX_MT);
  if (b->d) {
    closedir(b->d);
    b->d = NULL;
  }
  return 0;
}

/* perf.core.listdir(path) -> list of names (without . and ..), unsorted,
** or nil, msg, errno: sysfs and tracefs discovery without a child process. */
static int l_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct dirent *e;
  lua_Integer n = 0;
  dirbox *b = (dirbox *)lua_newuserdatauv(L, sizeof *b, 0);
  b->d = NULL;
  luaL_setmetatable(L, DIRBOX_MT);
  lua_newtable(L);
  b->d = opendir(path);
  if (!b->d) {
    int err = errno;
    return pl_fail(L, err, lua_pushfstring(L, "perf.core.listdir \"%s\"", path), NULL);
  }
  while ((e = readdir(b->d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, -2, ++n);
  }
  closedir(b->d);
  b->d = NULL;
  return 1;
}

/* perf.core.errno_name(n) -> "ENOENT" */
/* perf.core.thousands_sep() -> the user's locale's digit-group separator
** (LC_ALL/LC_NUMERIC/LANG), "" in the C locale, as perf stat prints counts.
** Read through a locale object: the process's own locale stays as it is
** (Lua formats numbers in it). */
static int l_thousands_sep(lua_State *L) {
  locale_t loc = newlocale(LC_NUMERIC_MASK, "", (locale_t)0);
  if (loc == (locale_t)0) {
    lua_pushliteral(L, "");      /* an unknown locale: perf falls back to C */
    return 1;
  }
  lua_pushstring(L, nl_langinfo_l(THOUSEP, loc));
  freelocale(loc);
  return 1;
}

static int l_errno_name(lua_State *L) {
  lua_pushstring(L, pl_errno_name((int)luaL_checkinteger(L, 1)));
  return 1;
}

/* The four values of a generic for over the iterator userdata on top of
** the stack: step (a closure holding it), the userdata as the state, nil,
** and the userdata again as the closing value, so that a `break` still
** releases it (as lfs.dir does). */
int pl_push_for(lua_State *L, lua_CFunction step) {
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, step, 1);
  lua_insert(L, -2);
  lua_pushnil(L);
  lua_pushvalue(L, -2);
  return 4;
}

static const luaL_Reg funcs[] = {
  {"symbol", l_symbol}, {"addressof", l_addressof},
  {"enable_all", l_enable_all}, {"disable_all", l_disable_all},
  {"kernel_attr_size", l_kernel_attr_size}, {"errno_name", l_errno_name},
  {"thousands_sep", l_thousands_sep},
  {"listdir", l_listdir},
  {NULL, NULL}
};

static const luaL_Reg dirbox_meta[] = {
  {"__gc", dirbox_gc},
  {NULL, NULL}
};

void pl_open_util(lua_State *L) {
  pl_new_metatable(L, DIRBOX_MT, dirbox_meta, NULL);
  lua_pop(L, 1);
  luaL_setfuncs(L, funcs, 0);
  lua_pushinteger(L, sizeof(struct pl_attr));
  lua_setfield(L, -2, "attr_size");
}
