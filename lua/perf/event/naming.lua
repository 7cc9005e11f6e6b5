-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- The name perf prints for an event given in kernel terms.
--
--   naming.name_of { type = 1, config = 2 }                  --> "page-faults"
--   naming.name_of { type = 3, config = 0x10000 }            --> "L1-dcache-load-misses"
--   naming.name_of { type = 2, config = 372 }                --> "syscalls:sys_enter_openat"
--   naming.name_of { type = 5, bp_addr = 0x1000, bp_len = 8, bp_type = 2 } --> "mem:0x1000/8:w"
--   naming.name_of { type = "msr", config = 0 }              --> "msr/config=0x0/"
--
-- The core names what it knows by itself (generic events, breakpoints, raw
-- events, and "software/config=0x63/" for a number without a name:
-- perf.core.event_name); this adds the names found in tables and files
-- above it: cache events, tracepoints by id, PMUs by their sysfs type.
local core = require "perf.core"
local events = require "perf.event.events"
local pmus = require "perf.event.pmu"
local tracepoint = require "perf.event.tracepoint"

local M = {}

local function integer_or_0(v)
  return math.type(v) == "integer" and v or 0
end

--- The display name of an attr that came without one; nil when the attr
-- holds a field the core would refuse (opening it raises anyway).
-- @tparam table attr the fields `type`, `config`, and for breakpoints
--   `bp_addr`/`config1`, `bp_len`/`config2` and `bp_type`
-- @treturn ?string the name
function M.name_of(attr)
  local t, config = attr.type, integer_or_0(attr.config)
  if type(t) == "string" then
    local pmu = events.types[t] == nil and pmus.find(t)
    t = events.types[t] or pmu and pmu.type or t
  end
  if math.type(t) ~= "integer" then return nil end
  local name = t == core.PERF_TYPE_HW_CACHE and events.cache.name_of(config)
    or t == core.PERF_TYPE_TRACEPOINT and tracepoint.name_of(config)
  if name then return name end
  local pmu = t >= core.PERF_TYPE_MAX and pmus.by_type(t)   -- PMUs found at boot
  if pmu then return ("%s/config=0x%x/"):format(pmu.name, config) end
  local ok, core_name = pcall(core.event_name, {
    type = t, config = config,
    config1 = integer_or_0(attr.bp_addr or attr.config1),
    config2 = integer_or_0(attr.bp_len or attr.config2),
    bp_type = attr.bp_type,
  })
  return ok and core_name or nil
end

return M
