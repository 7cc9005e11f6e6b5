-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.group: events that count together and read with one read(2).
--
--   local g <close> = assert(perf.group { "task-clock", "page-faults" })
--   g:enable() ... g:disable()
--   local t = g:read()     --> t[1], t["page-faults"], t.time_enabled, ...
--
-- The leader opens disabled and the members enabled, every one reading with
-- PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING (and LOST
-- where the kernel has it); the handle itself is C (csrc/group.c).
--
-- Where the kernel refuses a group that inherits to child tasks (older
-- kernels refuse inherit with PERF_FORMAT_GROUP), the events are opened
-- separately instead and the group says so in g:notes(): the counts stay
-- right, only the members are no longer scheduled as a unit.
local core = require "perf.core"
local glob = require "perf.event.glob"
local base = require "perf.event.base"
local capabilities = require "perf.event.capabilities"
local cgroup = require "perf.event.cgroup"
local nearest = require "perf.util.nearest"
local parse = require "perf.event.parse"
local uprobe = require "perf.event.uprobe"

local M = {}

local EINVAL = core.errno.EINVAL

local FORMAT = core.attr_names("read_format")   -- name -> PERF_FORMAT_* bit

-- read_format as given (list of names, one name, integer or nil) to bits.
local function format_bits(rf)
  if rf == nil then return 0 end
  return core.attr_value("read_format", rf)
end

local lost_supported
local function lost_bit()
  if lost_supported == nil then
    lost_supported = capabilities.read_lost() and FORMAT.lost or 0
  end
  return lost_supported
end

-- The events argument as a list of specs. A string is one event or a
-- "{a,b}" group; a table must be a list (an attr table alone is ambiguous).
-- Tracepoint patterns ("sched:sched_*") become their matches, each its
-- own member (perf.glob); nil, message, errno when tracefs is unreadable.
function M.specs(events, who)
  if type(events) == "string" then
    local list, msg, errno = glob.expand(events)
    if not list then return nil, who .. " " .. msg, errno end
    if #list > 1 then return list end
    local r = parse.parse(list[1])
    if r.group then return r end
    return list
  end
  if type(events) ~= "table" then
    error(("%s: a list of events expected, got %s"):format(who, type(events)), 0)
  end
  local n = #events
  if n == 0 then error(who .. ": the list of events is empty", 0) end
  for k in pairs(events) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      if k == "name" or k == "group" then goto continue end     -- a parsed {a,b}
      error(("%s: a list of events expected (key %s); wrap a single event "
        .. "as { event }"):format(who, tostring(k)), 0)
    end
    ::continue::
  end
  local list, msg, errno = glob.specs(events)
  if not list then return nil, who .. " " .. msg, errno end
  return list
end

-- M.specs then M.attrs: the events argument to a list of attrs, or nil,
-- message, errno.
function M.resolve(events, who)
  local specs, msg, errno = M.specs(events, who)
  if not specs then return nil, msg, errno end
  return M.attrs(specs, who)
end

-- Specs to a list of { attr =, name =, extra = } (via perf.attr: parse and
-- defaults), or nil, message, errno where the system cannot answer (such
-- as tracefs for a tracepoint name). Raises on misuse.
function M.attrs(specs, who)
  local list = {}
  for i, spec in ipairs(specs) do
    local ok, attr, name, extra = pcall(base.attr, spec)
    if not ok then error(base.strip_position(attr), 0) end
    if not attr then return nil, who .. " " .. name, extra end
    list[i] = { attr = attr, name = name, extra = extra }
  end
  return list
end

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

local function close_all(evs)
  for i = #evs, 1, -1 do evs[i]:close() end
end

-- core.open, retrying a refused kernel-mode count as user-only the way
-- perf stat does (with `opts.user_fallback`); notes collects what changed.
local function open_one(e, target, opts, notes)
  local attr, probe, perr = e.attr
  if attr.inherit and (math.type(attr.type) ~= "integer" or attr.type > 5) then
    attr, probe, perr = uprobe.inheritable(attr, e.name)
    if not attr then return nil, probe, perr end
  end
  local ev, msg, errno = core.open(attr, target, e.name)
  local user = not ev and opts.user_fallback and base.user_only(attr, errno)
  if user then
    ev = core.open(user, target, e.name)
    if ev then
      notes[#notes + 1] = ("%s: kernel-mode counting is not permitted here "
        .. "(perf_event_paranoid); counting user space only"):format(ev:name())
    end
  end
  if probe then
    if ev then uprobe.bind(probe, ev) else probe:remove() end
  end
  if ev then return ev end
  if type(target) == "table" and type(target.cgroup) == "string" then
    msg = cgroup.advise(msg, errno, target.cgroup)
  end
  return nil, msg, errno
end

local function inherits(list)
  for _, e in ipairs(list) do
    if e.attr.inherit then return true end
  end
  return false
end

-- Opens every entry of `list` after prepare(i, e, evs) has set its attr
-- and returned its target; on a failure, closes those opened. Returns the
-- events, or nil, msg, errno.
local function open_each(list, opts, notes, prepare)
  local evs = {}
  for i, e in ipairs(list) do
    local ev, msg, errno = open_one(e, prepare(i, e, evs), opts, notes)
    if not ev then
      close_all(evs)
      return nil, msg, errno
    end
    evs[i] = ev
  end
  return evs
end

-- Opens `list` (from M.attrs) as one kernel group: leader disabled, members
-- enabled. Returns the events, or nil, msg, errno.
local function open_group(list, target, opts, notes)
  local extra = lost_bit() | FORMAT.group | FORMAT.id | FORMAT.total_time_enabled
    | FORMAT.total_time_running
  return open_each(list, opts, notes, function(i, e, evs)
    e.attr.read_format = format_bits(e.attr.read_format) | extra
    e.attr.disabled = i == 1
    if i == 1 then return target end
    local t = copy(target)
    t.group = evs[1]
    return t
  end)
end

-- The same events each on its own (no PERF_FORMAT_GROUP), all disabled;
-- each counts from an exec if the leader was to.
local function open_separate(list, target, opts, notes)
  local on_exec = list[1].attr.enable_on_exec
  return open_each(list, opts, notes, function(_, e)
    e.attr.enable_on_exec = on_exec
    e.attr.read_format = (format_bits(e.attr.read_format) | lost_bit() | FORMAT.id
      | FORMAT.total_time_enabled | FORMAT.total_time_running) & ~FORMAT.group
    e.attr.disabled = true
    return target
  end)
end

-- Opens attrs (from M.attrs) as a perf.group. opts: user_fallback.
-- Returns g, or nil, msg, errno.
function M.open_list(list, target, opts)
  opts = opts or {}
  local notes = {}
  local start = list[1].attr.disabled == false
  local saved = {}
  for i, e in ipairs(list) do saved[i] = copy(e.attr) end
  local evs, msg, errno = open_group(list, target, opts, notes)
  local separate = false
  if not evs and errno == EINVAL and #list > 1 and inherits(list) then
    for i, e in ipairs(list) do e.attr = copy(saved[i]) end
    for k in pairs(notes) do notes[k] = nil end      -- about the refused group
    local first = msg
    evs, msg, errno = open_separate(list, target, opts, notes)
    if evs then
      separate = true
      notes[#notes + 1] = "the kernel refused a group that inherits to child tasks ("
        .. first .. "); its events are counted separately, each read on its own"
    end
  end
  if not evs then return nil, msg, errno end
  local g = core.group(evs, separate, notes)
  if start then
    local ok, emsg, eno = g:enable()
    if not ok then
      g:close()
      return nil, emsg, eno
    end
  end
  return g
end

-- perf.core.open's target keys but group (a group's members join it)
local TARGET_KEYS = {}
for k in pairs(require("perf.util.options").TARGET_KEYS) do
  if k ~= "group" then TARGET_KEYS[k] = true end
end

--- Opens events as one kernel group: they count over the same time and
-- read with one read(2) (`PERF_FORMAT_GROUP`).
--
-- The leader opens disabled and the members enabled, so `g:enable()`
-- starts them all. Where the kernel refuses an inheriting group (older
-- kernels), the events open separately and `g:notes()` says so.
-- @param events a list of events (strings or attr tables as for
-- `perf.open`; the first is the leader), or a `"{a,b}"` group string
-- @tparam[opt] table target `pid`, `cpu`, `cgroup`, `flags` as for `perf.open`
-- @treturn[1] perf.core.group the group handle
-- @return[2] nil, message, errno when the kernel refuses a member (the
-- message names it)
-- @raise on misuse: not a list, `target.group`, an unknown target field
-- @usage
-- local g <close> = assert(perf.group { "task-clock", "page-faults" })
-- g:enable()
-- local t = {} for i = 1, 100 do t[i] = {} end
-- g:disable()
-- local r = g:read()     --> r[1], r["page-faults"], r.time_enabled, ...
-- @function group
function M.new(events, target)
  local ok, list, msg, errno = pcall(function()
    if target ~= nil then
      if type(target) ~= "table" then
        error(("perf.group: target must be a table, got %s"):format(type(target)), 0)
      end
      if target.group ~= nil then
        error("perf.group: target.group is not supported: add a member to a group "
          .. "with perf.open(event, { group = g })", 0)
      end
      nearest.check_keys(target, TARGET_KEYS, "perf.group: unknown target field",
        0, "; fields: pid, cpu, cgroup, flags")
    end
    return M.resolve(events, "perf.group")
  end)
  local strip = base.strip_position
  if not ok then error(strip(list), 2) end
  if not list then return nil, msg, errno end
  local g
  ok, g, msg, errno = pcall(M.open_list, list, target, { user_fallback = true })
  if not ok then error(strip(g), 2) end
  if not g then return nil, msg, errno end
  return g
end

return M
