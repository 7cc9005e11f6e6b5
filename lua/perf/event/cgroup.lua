-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.cgroup: where the cgroups perf_event counts in are, found as the
-- perf tool finds them (tools/lib/api/fs/cgroup.c): the mount of a cgroup
-- v1 hierarchy with the perf_event controller, else the cgroup2 mount. On
-- a hybrid layout (v1 controllers under /sys/fs/cgroup, v2 at
-- /sys/fs/cgroup/unified) that is the unified one, not /sys/fs/cgroup.
--
-- The kernel looks a cgroup event's directory up in the hierarchy its
-- perf_event controller is bound to (kernel/events/core.c,
-- perf_cgroup_connect): a directory elsewhere is refused.
local fs = require "perf.util.fs"

local M = {}

local E = require("perf.core").errno
local EBADF, ENOENT, ENOTDIR = E.EBADF, E.ENOENT, E.ENOTDIR

-- /proc/mounts writes a space, tab, newline or backslash as \ooo.
local function unescape(s)
  return (s:gsub("\\(%d%d%d)", function(o) return string.char(tonumber(o, 8)) end))
end

--- cgroup.root([mounts]) -> the directory of the perf_event hierarchy | nil, why
-- `mounts` is the text of /proc/self/mounts (read when not given).
function M.root(mounts)
  mounts = mounts or fs.read("/proc/self/mounts") or ""
  local v2
  for line in mounts:gmatch("[^\n]+") do
    local dir, kind, opts = line:match("^%S+ (%S+) (%S+) (%S+)")
    if kind == "cgroup" and ("," .. opts .. ","):find(",perf_event,", 1, true) then
      return unescape(dir)
    elseif kind == "cgroup2" then
      v2 = unescape(dir)                  -- the last one, as perf takes it
    end
  end
  if v2 then return v2 end
  return nil, "no cgroup hierarchy with perf_event is mounted (mount -t cgroup2 none /sys/fs/cgroup)"
end

-- Whether path is a cgroup mount or below one.
local function in_cgroupfs(path, mounts)
  for line in mounts:gmatch("[^\n]+") do
    local dir, kind = line:match("^%S+ (%S+) (%S+)")
    if kind == "cgroup" or kind == "cgroup2" then
      dir = unescape(dir)
      if path == dir or path:sub(1, #dir + 1) == dir .. "/" then return true end
    end
  end
  return false
end

--- cgroup.dir(g [, mounts]) -> the directory a cgroup name stands for
-- A path in a mounted cgroup hierarchy is taken as it is; anything else
-- is a name under cgroup.root, as perf stat -G reads it ("web", "/web",
-- and "/" for the root cgroup), or under /sys/fs/cgroup when nothing is
-- mounted.
function M.dir(g, mounts)
  mounts = mounts or fs.read("/proc/self/mounts") or ""
  if g:sub(1, 1) == "/" and in_cgroupfs(g, mounts) then return g end
  local root = M.root(mounts) or "/sys/fs/cgroup"
  local name = g:gsub("^/+", ""):gsub("/+$", "")
  return name == "" and root or root .. "/" .. name
end

--- cgroup.advise(msg, errno, path [, mounts]) -> msg, with where the
-- perf_event cgroups are when the kernel refused `path` (a missing
-- directory, or one outside that hierarchy).
function M.advise(msg, errno, path, mounts)
  local root = M.root(mounts)
  if not root then return msg end
  if errno == ENOENT or errno == ENOTDIR then
    if msg:find('^perf%.open: cgroup "') then            -- the directory did not open
      local name = path:match("[^/]+$") or path
      return ("%s; the perf_event cgroups here are under %s (e.g. %s/%s)"):format(msg, root, root, name)
    end
  elseif errno ~= EBADF then
    return msg
  end
  if msg:find("not in a hierarchy with the perf_event controller", 1, true) then
    return ("%s; here that is %s"):format(msg, root)
  end
  return msg
end

return M
