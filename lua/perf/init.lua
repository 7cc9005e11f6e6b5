-- perf for Lua: the front module.
--
--   local perf = require "perf"
--   local ev <close> = assert(perf.open "page-faults")
--
-- The C core (perf.core) opens events from attr tables with integer type
-- and config; this module adds perf's event syntax and names (perf.parse),
-- the defaults users expect (events open disabled, read_format with times
-- and ids), and the pure-Lua helpers.
local core = require "perf.core"
local capabilities = require "perf.capabilities"

-- A filter the kernel refuses on a tracepoint names the unknown fields.
require("perf.tracepoint").explain_filters(core.event_methods)

local perf = {
  core = core,
  version = core.version,
  symbol = core.symbol,
  addressof = core.addressof,
  enable_all = core.enable_all,
  disable_all = core.disable_all,
  capabilities = capabilities.get,
}

-- Keys a spec may carry that are not attr fields: stripped before opening.
local NOT_ATTR = { name = true, scale = true, unit = true }

local default_read_format
local function read_format()
  if not default_read_format then
    default_read_format = { "total_time_enabled", "total_time_running", "id" }
    if capabilities.get().read_lost then
      default_read_format[#default_read_format + 1] = "lost"
    end
  end
  return default_read_format
end

local function is_event(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__name == "perf.event"
end
perf.is_event = is_event

-- The name perf would print for an attr given without one: "task-clock",
-- "L1-dcache-load-misses", "mem:0x7ffd1000/8:rw"; otherwise "type:config".
local function derived_name(attr)
  local events = require "perf.events"
  local t, config = attr.type, attr.config
  if type(t) == "string" then t = events.types[t] or t end
  if math.type(config) == "integer" then
    local name = t == 0 and events.hardware_names[config]
      or t == 1 and events.software_names[config]
      or t == 3 and events.cache.name_of(config)
      or t == 2 and require("perf.tracepoint").name_of(config)
    if name then return name end
  end
  if t == 5 and math.type(attr.bp_addr) == "integer" then
    local bp = attr.bp_type
    if math.type(bp) == "integer" then
      bp = ({ [1] = "r", [2] = "w", [3] = "rw", [4] = "x" })[bp]
    end
    return ("mem:0x%x/%d:%s"):format(attr.bp_addr, attr.bp_len or 0, bp or "?")
  end
  local pmus = require "perf.pmu"
  local pmu = math.type(t) == "integer" and pmus.by_type(t)
    or type(t) == "string" and pmus.find(t)
  if pmu and math.type(config) == "integer" then
    return ("%s/config=0x%x/"):format(pmu.name, config)
  end
  return nil                       -- perf.core names it "type:config"
end

-- A spec (perf-syntax string, or attr table whose [1] may be one) to a new
-- attr table for the core, plus its display name and the non-attr extras.
function perf.attr(spec)
  local attr
  local kind = type(spec)
  if kind == "table" and spec[1] == nil and type(spec.config) ~= "string" then
    attr = {}                       -- already in kernel terms: copy it
    for k, v in pairs(spec) do attr[k] = v end
  elseif kind == "string" or kind == "table" then
    local msg, errno
    attr, msg, errno = require("perf.parse").spec(spec)
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
  return attr, name or derived_name(attr), extra
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

-- Misuse raises at the caller's line, not inside this module.
local function strip(msg)
  if type(msg) ~= "string" then return msg end
  return (msg:gsub("^[^%s:]*perf/[%w_]+%.lua:%d+: ", ""))
end
perf.strip_position = strip

--- perf.open(event [, target]) -> ev | nil, message, errno
function perf.open(spec, target)
  local ok, attr, name, extra = pcall(perf.attr, spec)
  if not ok then error(strip(attr), 2) end
  if not attr then return nil, "perf.open " .. name, extra end
  -- a group member opens enabled (unless told): enabling the leader starts it
  if type(target) == "table" and target.group ~= nil
      and not (type(spec) == "table" and spec.disabled ~= nil) then
    attr.disabled = false
  end
  local ev, msg, errno
  ok, ev, msg, errno = pcall(core.open, attr, target_of(target), name)
  if not ok then error(strip(ev), 2) end
  return ev, msg, errno
end

-- The helpers in their own modules, loaded on first use.
local lazy = {
  events = function() return require "perf.events" end,
  parse = function() return require("perf.parse").parse end,
  list = function() return require("perf.list").list end,
  pmus = function() return require("perf.list").pmus end,
  tracepoint = function() return require("perf.tracepoint").get end,
  watch = function()
    local watch = require "perf.watch"
    return function(where, opts) return watch.watch(perf, where, opts) end
  end,
  uprobe = function()
    local uprobe = require "perf.uprobe"
    return function(binary, where, opts) return uprobe.uprobe(perf, binary, where, opts) end
  end,
  group = function() return require("perf.group").new end,
  measure = function() return require("perf.measure").measure end,
  calibrate = function() return require("perf.measure").calibrate end,
  stat = function() return require("perf.stat").stat end,
  scale = function() return core.scale end,
  cpus = function() return require "perf.cpus" end,
  kallsyms = function() return require "perf.kallsyms" end,
}

return setmetatable(perf, {
  __index = function(t, k)
    local load = lazy[k]
    if load then
      local v = load()
      rawset(t, k, v)
      return v
    end
  end,
})
