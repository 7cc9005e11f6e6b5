-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- Documented on the perf page.
-- @submodule perf

-- perf.event.base: what the front (`perf`) and the modules under it share: an
-- event spec to an attr with perf's defaults, opening it, and the small
-- helpers for messages and handles. It requires nothing above it, so
-- perf.group, perf.stat, perf.cpus, ... use it without loading the front.
local core = require "perf.core"
local capabilities = require "perf.event.capabilities"

-- The event syntax, display names and cgroup advice are loaded on first use,
-- not with the module: compiling them is most of what loading the front
-- would cost (4 ms instead of 1).
local function parse() return require "perf.event.parse" end     -- first use
local function naming() return require "perf.event.naming" end   -- first use
local function cgroup() return require "perf.event.cgroup" end   -- first use

local M = {}

-- Keys a spec may carry that are not attr fields: stripped before opening.
local NOT_ATTR = { name = true, scale = true, unit = true }
M.NOT_ATTR = NOT_ATTR     -- the keys an event table takes besides attr fields

local default_read_format
local function read_format()
  if not default_read_format then
    default_read_format = { "total_time_enabled", "total_time_running", "id" }
    if capabilities.read_lost() then
      default_read_format[#default_read_format + 1] = "lost"
    end
  end
  return default_read_format
end

--- Whether `v` is an event handle (a `perf.event` userdata).
-- @param v any value
-- @treturn boolean
-- @function is_event
-- @usage assert(perf.is_event(perf.open "task-clock"))
local function is_event(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__name == "perf.event"
end
M.is_event = is_event

--- An event spec to the attr table `perf.open` passes to the core, with
-- the defaults applied (`disabled = true`, the default `read_format`).
-- @param spec a perf-syntax string, an attr table, an attr table whose
-- `[1]` is a perf-syntax string the other fields refine, or an event (its
-- attr, under its name)
-- @treturn[1] table the attr (kernel field names, integer type and config)
-- @treturn[1] string its display name (nil when it has none)
-- @treturn[1] table the fields that are not attr fields (`name`, `scale`, `unit`)
-- @return[2] nil, message, errno when tracefs cannot be read
-- @raise on a malformed spec or an unknown field
-- @usage local attr, name = perf.attr "page-faults:u"
-- @function attr
function M.attr(spec)
  local attr
  if is_event(spec) then            -- an event: its attr, under its name
    local a = spec:attr()
    a.name = spec:name()
    spec = a
  end
  local kind = type(spec)
  if kind == "table" and spec[1] == nil and type(spec.config) ~= "string" then
    attr = {}                       -- already in kernel terms: copy it
    for k, v in pairs(spec) do attr[k] = v end
  elseif kind == "string" or kind == "table" then
    local msg, errno
    attr, msg, errno = parse().spec(spec)
    if not attr then return nil, msg, errno end     -- tracefs unreadable, ...
  else
    error(("perf.open: event expected (a string or a table), got %s"):format(kind), 2)
  end
  local extra = {}
  for k in pairs(NOT_ATTR) do extra[k], attr[k] = attr[k], nil end
  if attr.disabled == nil then attr.disabled = true end
  if attr.read_format == nil then attr.read_format = read_format() end
  local name = extra.name
  if not name and kind == "string" then name = spec end
  if not name and kind == "table" and type(spec[1]) == "string" then name = spec[1] end
  return attr, name or naming().name_of(attr), extra
end

-- target.group may be an event or anything whose [1] is its leader event.
local function target_of(target)
  local g = target and target.group
  if g == nil or is_event(g) or (type(g) ~= "table" and type(g) ~= "userdata") then
    return target
  end
  local copy = {}
  for k, v in pairs(target) do copy[k] = v end
  copy.group = target.group[1]
  return copy
end

--- An error message without the library's own "perf/x.lua:N:" position,
-- so that misuse raises at the caller's line.
-- @param msg an error value (strings are stripped, others returned as they are)
-- @return the message
-- @function strip_position
-- @usage error(perf.strip_position(msg), 2)
local function strip(msg)
  if type(msg) ~= "string" then return msg end
  return (msg:gsub("^[^%s:]*perf/[%w_/]+%.lua:%d+: ", ""))
end
M.strip_position = strip

-- Whether target.flags has fd_no_group (PERF_FLAG_FD_NO_GROUP, bit 0):
-- the event is then no member of target.group's group.
local function no_group(flags)
  if math.type(flags) == "integer" then return flags & 1 ~= 0 end
  if type(flags) ~= "table" then return false end
  for _, f in ipairs(flags) do
    if f == "fd_no_group" then return true end
  end
  return false
end

-- perf's retry of an event that perf_event_paranoid refused for counting
-- the kernel too (EACCES): the attr for user space only (exclude_kernel,
-- exclude_hv), or nil when that is not the refusal (another errno, or
-- user space is all it counts or excludes already).
function M.user_only(attr, errno)
  if errno ~= core.errno.EACCES or attr.exclude_kernel or attr.exclude_user then return nil end
  local a = {}
  for k, v in pairs(attr) do a[k] = v end
  a.exclude_kernel, a.exclude_hv = true, true
  return a
end

-- The name of an event opened for user space only: "cpu-clock:u" (a name
-- with modifiers or a PMU's syntax is kept).
function M.user_name(name)
  if name:find("[:/]") then return name end
  return name .. ":u"
end

--- Opens an event (`perf_event_open(2)`), disabled unless the attr says
-- `disabled = false`; a group member opens enabled, so that enabling its
-- leader starts it.
-- @param spec a string in perf's event syntax (`"task-clock"`,
-- `"page-faults:u"`, `"sched:sched_switch"`, `"r01c2"`,
-- `"mem:0x1000/8:w"`), a table of `perf_event_attr` fields under their
-- kernel names, or such a table whose `[1]` is a perf-syntax string
-- @tparam[opt] table target `pid` (default 0, this thread; a pid is one
-- *thread* to the kernel: count a whole process, its threads and those it
-- starts, with `perf.stat({ pid = P }, ...)`; -1 any), `cpu` (default -1, any), `group` (an
-- event or group to join), `cgroup` (a cgroup directory),
-- `flags` (`{"fd_no_group", "fd_output"}`)
-- @treturn[1] perf.core.event the event handle
-- @return[2] nil, message, errno: what the kernel refused, with the
-- errno name and a hint (`ENOENT`: no such event or PMU here; `EACCES`:
-- `perf_event_paranoid`; `EINVAL`: a field this kernel refuses)
-- @raise on misuse: a malformed event string (pointing at the position),
-- an unknown attr field (with the nearest valid name), a bad type
-- @usage
-- local ev <close> = assert(perf.open "syscalls:sys_enter_openat")
-- ev:enable()
-- for _ = 1, 3 do io.open("/dev/null"):close() end
-- ev:disable()
-- assert(ev:read() == 3)
-- @function open
function M.open(spec, target)
  if target ~= nil and type(target) ~= "table" then
    error(("perf.open: target must be a table ({ pid =, cpu =, group =, cgroup =, flags = }), got %s")
      :format(type(target)), 2)
  end
  local ok, attr, name, extra = pcall(M.attr, spec)
  if not ok then error(strip(attr), 2) end
  if not attr then return nil, "perf.open " .. name, extra end
  -- a group member opens enabled (unless told): enabling the leader starts it
  if type(target) == "table" and target.group ~= nil and not no_group(target.flags)
      and not (type(spec) == "table" and spec.disabled ~= nil) then
    attr.disabled = false
  end
  -- an inherited uprobe is made in tracefs (see perf.uprobe)
  local probe, uprobe
  if attr.inherit and (math.type(attr.type) ~= "integer" or attr.type > 5) then
    -- required here, not at the top: perf.event.uprobe opens through this module (a cycle)
    uprobe = require "perf.event.uprobe"
    local a, perr
    ok, a, probe, perr = pcall(uprobe.inheritable, attr, name)
    if not ok then error(strip(a), 2) end
    if not a then return nil, "perf.open " .. name .. ": " .. probe, perr end
    attr = a
  end
  local ev, msg, errno
  ok, ev, msg, errno = pcall(core.open, attr, target_of(target), name)
  if probe then
    if ok and ev then uprobe.bind(probe, ev) else probe:remove() end
  end
  if not ok then error(strip(ev), 2) end
  if not ev then
    if type(target) == "table" and type(target.cgroup) == "string" then
      msg = cgroup().advise(msg, errno, target.cgroup)
    end
    return nil, msg, errno
  end
  return ev
end

return M
