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
local capabilities = require "perf.event.capabilities"

local perf = {
  core = core,
  version = core.version,
  symbol = core.symbol,
  addressof = core.addressof,
  enable_all = core.enable_all,
  disable_all = core.disable_all,
  capabilities = capabilities.get,
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

local base = require "perf.event.base"
perf.is_event = base.is_event
perf.attr = base.attr
perf.strip_position = base.strip_position
perf.open = base.open

--- Whether `v` is an event handle (a `perf.event` userdata).
-- @param v any value
-- @treturn boolean
-- @function is_event
-- @usage assert(perf.is_event(perf.open "task-clock"))

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

--- An error message without the library's own "perf/x.lua:N:" position,
-- so that misuse raises at the caller's line.
-- @param msg an error value (strings are stripped, others returned as they are)
-- @return the message
-- @function strip_position
-- @usage error(perf.strip_position(msg), 2)

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

-- The helpers in their own modules, loaded on first use.
local lazy = {
  events = function() return require "perf.event.events" end,
  parse = function() return require("perf.event.parse").parse end,
  list = function() return require("perf.event.list").list end,
  pmus = function() return require("perf.event.list").pmus end,
  tracepoint = function() return require("perf.event.tracepoint").get end,
  watch = function()
    local watch = require "perf.event.watch"
    return function(where, opts) return watch.watch(perf, where, opts) end
  end,
  uprobe = function()
    local uprobe = require "perf.event.uprobe"
    return function(binary, where, opts) return uprobe.uprobe(perf, binary, where, opts) end
  end,
  group = function() return require("perf.counting.group").new end,
  measure = function() return require("perf.counting.measure").measure end,
  calibrate = function() return require("perf.counting.measure").calibrate end,
  stat = function() return require("perf.counting.stat").stat end,
  scale = function() return core.scale end,
  cpus = function() return require "perf.counting.cpus" end,
  kallsyms = function() return require "perf.util.kallsyms" end,
  elf = function() return require "perf.util.elf" end,
  profile = function()
    local profile = require "perf.profiling.profile"
    return function(fn, opts, ...) return profile.profile(perf, fn, opts, ...) end
  end,
  profiler = function()
    local profile = require "perf.profiling.profile"
    return function(opts) return profile.profiler(perf, opts) end
  end,
  data = function() return require "perf.recording.data" end,
  exporter = function()
    local exporter = require "perf.serving.exporter"
    return function(opts) return exporter.new(perf, opts) end
  end,
  serve = function()
    local serve = require "perf.serving.serve"
    return function(opts) return serve.serve(perf, opts) end
  end,
  server = function()
    local serve = require "perf.serving.serve"
    return function(opts) return serve.new(perf, opts) end
  end,
  record = function()
    local record = require "perf.recording.record"
    return function(argv, events, opts) return record.record(perf, argv, events, opts) end
  end,
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
