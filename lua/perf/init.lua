--- Linux `perf_event_open(2)` for Lua 5.4: the front module.
--
-- The C core (`perf.core`) opens events from attr tables with integer type
-- and config; this module adds perf's event syntax and names (`perf.parse`),
-- the defaults users expect (events open disabled, read_format with times
-- and ids), and the pure-Lua helpers, loaded on first use.
--
-- Kernel failures return `nil, message, errno` (the message names the
-- call, the errno name, strerror and a hint); misuse raises.
-- @module perf
-- @usage
-- local perf = require "perf"
-- local ev <close> = assert(perf.open "page-faults")
-- ev:enable()
-- local t = {} for i = 1, 1000 do t[i] = {} end
-- ev:disable()
-- print(ev:read())   --> count, time_enabled, time_running, lost
local core = require "perf.core"
local base = require "perf.event.base"
local capabilities = require "perf.event.capabilities"

local perf = {
  core = core,
  version = core.version,
  symbol = core.symbol,
  addressof = core.addressof,
  enable_all = core.enable_all,
  disable_all = core.disable_all,
  capabilities = capabilities.get,
  -- documented with their code, in lua/perf/event/base.lua
  is_event = base.is_event,
  attr = base.attr,
  strip_position = base.strip_position,
  open = base.open,
}

--- The C core's version, a string ("0.1").
-- @field version

--- The address of a C symbol (dlsym), as `perf.core.symbol`.
-- @function symbol
-- @string name the symbol
-- @string[opt] library a shared library to look in (default: the process)
-- @treturn[1] integer its address
-- @return[2] nil, message (dlerror's) when no such symbol is loaded
-- @usage local addr = perf.symbol "getenv"

--- The address of a string's bytes or a userdata's block, as
-- `perf.core.addressof` (for `perf.watch`).
-- @function addressof
-- @param value a string or a full userdata
-- @treturn integer the address
-- @usage local ev = perf.watch(perf.addressof(buffer), { mode = "w", len = 8 })

--- Enables every event this thread opened (prctl `PR_TASK_PERF_EVENTS_ENABLE`).
-- @function enable_all
-- @treturn[1] boolean true
-- @return[2] nil, message, errno when prctl fails
-- @usage perf.enable_all() work() perf.disable_all()

--- Disables every event this thread opened (prctl `PR_TASK_PERF_EVENTS_DISABLE`).
-- @function disable_all
-- @treturn[1] boolean true
-- @return[2] nil, message, errno when prctl fails
-- @usage perf.disable_all()

--- What this machine's kernel lets perf do, probed once (a fresh copy each
-- call), except `tracefs`, `breakpoints` and `max_breakpoints` (the hardware
-- breakpoint slots free for this thread now), probed at every call.
-- Fields: `kernel`, `paranoid`, `pmu` (a hardware PMU exists), `rdpmc`,
-- `tracefs` (its path or nil), `breakpoints`, `max_breakpoints`, `uprobes`,
-- `max_sample_rate`, `max_stack`, `mlock_kb`, `attr_size`, `read_lost`,
-- `cpus`, `pmus`, and `why`: for each capability that is unavailable, a
-- sentence saying why (`t.why.pmu`).
-- @function capabilities
-- @treturn table the capabilities
-- @usage
-- local caps = perf.capabilities()
-- if not caps.pmu then print(caps.why.pmu) end

--- A count scaled for multiplexing, as `perf.core.scale`:
-- `value * enabled / running` (0 when it never ran).
-- @function scale
-- @int value the raw count
-- @int enabled time_enabled
-- @int running time_running
-- @treturn integer the estimate
-- @treturn number the fraction of the time it ran
-- @usage local estimate, fraction = perf.scale(ev:read())

--- A tracepoint's id, fields and decoder: `perf.tracepoint.get`.
-- @function tracepoint
-- @string name `"system:event"`
-- @treturn[1] perf.tracepoint.Tracepoint the tracepoint
-- @return[2] nil, message, errno when tracefs or the tracepoint is missing
-- @usage local tp = assert(perf.tracepoint "sched:sched_switch")

-- The helpers in their own modules, loaded on first use: each name is
-- { module, field } (the field of the module), or { module } (the module).
local lazy = {
  events = { "perf.event.events" },
  parse = { "perf.event.parse", "parse" },
  list = { "perf.event.list", "list" },
  pmus = { "perf.event.list", "pmus" },
  tracepoint = { "perf.event.tracepoint", "get" },
  watch = { "perf.event.watch", "watch" },
  uprobe = { "perf.event.uprobe", "uprobe" },
  group = { "perf.counting.group", "new" },
  measure = { "perf.counting.measure", "measure" },
  calibrate = { "perf.counting.measure", "calibrate" },
  stat = { "perf.counting.stat", "stat" },
  scale = { "perf.core", "scale" },
  cpus = { "perf.counting.cpus" },
  kallsyms = { "perf.util.kallsyms" },
  elf = { "perf.util.elf" },
  profile = { "perf.profiling.profile", "profile" },
  profiler = { "perf.profiling.profile", "profiler" },
  data = { "perf.recording.data" },
  exporter = { "perf.serving.exporter", "new" },
  serve = { "perf.serving.serve", "serve" },
  server = { "perf.serving.serve", "new" },
  record = { "perf.recording.record", "record" },
}

return setmetatable(perf, {
  __index = function(t, k)
    local entry = lazy[k]
    if entry then
      local m = require(entry[1])   -- on first use: requiring perf loads none of the helpers
      local v = m
      if entry[2] then v = m[entry[2]] end
      rawset(t, k, v)
      return v
    end
  end,
})
