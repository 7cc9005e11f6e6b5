-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.tracefs: where the kernel's tracing file system is, mounting it on
-- first use as the perf tool does.
--
-- A freshly booted machine has nothing mounted on /sys/kernel/tracing
-- until something asks. When no tracefs is found, the library mounts one
-- there (or debugfs on /sys/kernel/debug, whose tracing/ directory is the
-- old layout, where the kernel has no tracefs), if the process may: root
-- or CAP_SYS_ADMIN. A tracefs already mounted anywhere is used as it is.
--
-- A found directory is remembered; a failure is not, so mounting tracefs
-- by hand after a failure works on the next call. Where one is now is
-- perf.core's to find (perf.core.tracing_dir); mounting one is this module's.

local core = require "perf.core"
local fs = require "perf.util.fs"

local M = {}

local TRACEFS = "/sys/kernel/tracing"
local DEBUGFS = "/sys/kernel/debug"
local E = core.errno
local EPERM, ENOENT, EACCES = E.EPERM, E.ENOENT, E.EACCES

local found -- the directory, once found

-- Mounted file systems of `kind` ("tracefs", "debugfs"): their directories,
-- in the order of the mount table (perf.core reads it).
local mounted = core.mounted
M.mounted = mounted

-- Whether the running kernel knows file system `kind`.
local function kernel_has(kind)
  local list = fs.read("/proc/filesystems") or ""
  return list:find("%s" .. kind .. "\n") ~= nil
end

-- A tracing directory that is there now (it has events/), or nil and the
-- directory that could not be read: perf.core looks (where perf mounts
-- tracefs, debugfs's tracing/, then the mount table), for the core's own
-- messages too.
local look = core.tracing_dir

local function mount(fstype, dir)
  if not core.mount then     -- a core built without it (the event-syntax fuzz target's)
    return nil, "cannot mount " .. fstype .. " without the C core", ENOENT
  end
  return core.mount(fstype, dir)
end

local function not_mounted(why, errno)
  return nil, ("tracefs is not mounted, and %s: as root, run `mount -t tracefs nodev %s`")
    :format(why, TRACEFS), errno
end

-- Mounts tracefs where perf does (debugfs where the kernel has no tracefs)
-- and returns the tracing directory, or nil, message, errno.
local function mount_one()
  if kernel_has("tracefs") or not kernel_has("debugfs") then
    local ok, msg, errno = mount("tracefs", TRACEFS)
    if ok then return TRACEFS end
    if errno == EPERM or errno == EACCES then
      return not_mounted("mounting it needs root (CAP_SYS_ADMIN)", errno)
    end
    return nil, msg, errno
  end
  if #mounted("debugfs") == 0 then
    local ok, msg, errno = mount("debugfs", DEBUGFS)
    if not ok then
      if errno == EPERM or errno == EACCES then
        return nil, ("this kernel has no tracefs and debugfs is not mounted; mounting it needs root (CAP_SYS_ADMIN): as root, run `mount -t debugfs nodev %s`")
          :format(DEBUGFS), errno
      end
      return nil, msg, errno
    end
  end
  local dir = look()
  if dir then return dir end
  return nil, "this kernel has neither tracefs nor debugfs tracing (CONFIG_FTRACE)", ENOENT
end

-- The tracing directory, mounting tracefs if none is there; or nil, a
-- message saying why and what to run, and an errno (EACCES: there but not
-- readable; EPERM: not mounted and not allowed to mount; ENOENT: the
-- kernel has none).
function M.path()
  if found then return found end
  local dir, denied = look()
  if not dir and denied then
    return nil, ("cannot read %s (permission denied): tracepoints need root, or read access to tracefs")
      :format(denied), EACCES
  end
  if not dir then
    local msg, errno
    dir, msg, errno = mount_one()
    if not dir then return nil, msg, errno end
  end
  found = dir
  return dir
end

-- Forgets the directory found (it is looked for again on the next call).
function M.forget()
  found = nil
end

return M
