/*
** mount.c: mounting the kernel's pseudo file systems the library needs
** (tracefs, or debugfs where the kernel has no tracefs), as the perf tool
** does on first use (tools/lib/api/fs/fs.c). Which one and where is
** decided in Lua (perf.tracefs); this is only the system call.
*/
#include <errno.h>
#include <sys/mount.h>

#include "perf_core.h"

/* perf.core.mount(fstype, target) -> true | nil, msg, errno
** Mounts a fresh instance of `fstype` ("tracefs", "debugfs") on the
** directory `target`, with the source "nodev" as mount(8) shows it. */
static int l_mount(lua_State *L) {
  const char *fstype = luaL_checkstring(L, 1);
  const char *target = luaL_checkstring(L, 2);
  const char *hint = NULL;
  int err;
  if (mount("nodev", target, fstype, 0, NULL) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  err = errno;
  if (err == EPERM || err == EACCES)
    hint = "mounting needs root (CAP_SYS_ADMIN)";
  else if (err == ENODEV)
    hint = "this kernel has no such file system";
  else if (err == ENOENT)
    hint = "the mount point does not exist";
  lua_pushfstring(L, "mount -t %s nodev %s", fstype, target);
  return pl_fail(L, err, lua_tostring(L, -1), hint);
}

static const luaL_Reg funcs[] = {
  {"mount", l_mount},
  {NULL, NULL}
};

void pl_open_mount(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
}
