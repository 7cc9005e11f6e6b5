-- Layer lua/perf/serving/: the Prometheus exporter and the HTTP server; it requires perf.core
-- and the layers below it (util, event, counting, profiling, recording) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.exporter: counters that keep counting, read out as Prometheus's
-- text exposition format (0.0.4), for `perf-lua serve`, `perf.serve` or a
-- Lua program's own HTTP server.
--
--   local e = assert(perf.exporter { events = { "page-faults" }, all_cpus = true })
--   local text = e:metrics()     -- perf_page_faults_total{cpu="0"} 1234 ...
--
-- The events open once, enabled, and count from then on; each scrape reads
-- them. A target is where they count, each one a "place" with its labels:
--   (default)         this process: every thread, those it starts too {pid}
--   all_cpus = true   everything on every online CPU, one place per CPU {cpu}
--   cpus = "0-3"      on those CPUs {cpu}
--   pid = P (or list) process P's threads and what they start {pid}
--   cgroup = G (list) every task of cgroup G on every CPU {cgroup}
-- One counter family per event, named perf_ + its name with every byte
-- outside [a-zA-Z0-9_] turned into _ + _total; the counts are scaled for
-- multiplexing (perf.scale) and never go down between scrapes (a scaled
-- estimate can dip when the counter's running time catches up: the last
-- value is kept instead). perf_enabled_seconds_total and
-- perf_running_seconds_total {event, place} show the multiplexing;
-- perf_target_up {place} is 0 once a process has exited (its counts stay
-- as they were) or a cgroup's directory is gone.
local core = require "perf.core"
local fs = require "perf.util.fs"
local group = require "perf.counting.group"
local measure = require "perf.counting.measure"
local processes = require "perf.counting.processes"
local base = require "perf.event.base"
local capabilities = require "perf.event.capabilities"
local percpu = require "perf.counting.cpus"
local nearest = require "perf.util.nearest"
local serve_profile = require "perf.serving.serve_profile"
local stat = require "perf.counting.stat"

local M = {}

-- perf stat's default events where no PMU exists (what perf-lua stat counts)
M.DEFAULT_EVENTS = { "task-clock", "context-switches", "cpu-migrations", "page-faults" }

local OPTS = { events = true, all_cpus = true, cpus = true, pid = true, cgroup = true,
  max_seconds = true, profile = true }

local Exporter = { __name = "perf.exporter" }
Exporter.__index = Exporter

-- "syscalls:sys_enter_openat" -> "perf_syscalls_sys_enter_openat_total"
function M.family(name)
  return "perf_" .. name:gsub("[^a-zA-Z0-9_]", "_") .. "_total"
end

-- A label value as the format writes it: \, " and newline escaped.
local function label_value(v)
  return (tostring(v):gsub("[\\\"\n]", { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" }))
end
M.label_value = label_value

-- The start time of process pid (field 22 of /proc/pid/stat), to tell it
-- from a later process given the same pid; nil when there is none, or
-- when it has exited and waits to be reaped (state Z or X, proc(5)).
local function start_time(pid)
  local s = fs.read(("/proc/%d/stat"):format(pid))
  if not s then return nil end
  local rest = s:match("^.*%) (.*)$")            -- comm may hold spaces and ')'
  local n = 0
  for field in (rest or ""):gmatch("%S+") do
    n = n + 1
    if n == 1 and (field == "Z" or field == "X") then return nil end
    if n == 20 then return field end             -- fields 3.. follow the comm
  end
end

local function own_pid()
  local s = fs.read("/proc/self/stat")
  return math.tointeger(tonumber(s and s:match("^%d+")))
end

local function ids(v)
  return type(v) == "table" and v or { v }
end

-- The places of opts: a list of { label = 'cpu="0"', targets = {perf.open
-- targets}, up = function() -> bool }, or nil, message, errno.
local function places_of(opts)
  local places = {}
  if opts.all_cpus or opts.cpus then
    local list = opts.cpus
    if type(list) == "string" then list = percpu.parse_list(list) end
    list = list or capabilities.online_cpus()
    for _, c in ipairs(list) do
      places[#places + 1] = { label = ('cpu="%d"'):format(c), targets = { { pid = -1, cpu = c } } }
    end
  elseif opts.cgroup then
    local cpus = capabilities.online_cpus()
    for _, name in ipairs(ids(opts.cgroup)) do
      local targets, msg, errno = processes.cgroup_targets(name, cpus)
      if not targets then return nil, "perf.exporter: " .. msg, errno end
      local dir = targets[1].cgroup
      places[#places + 1] = { label = ('cgroup="%s"'):format(label_value(name)), targets = targets,
        up = function() return fs.isdir(dir) end }
    end
  else
    local self_pid = own_pid()
    for _, pid in ipairs(ids(opts.pid or self_pid)) do
      local started = start_time(pid)
      local targets, msg, errno = processes.targets({ pid = pid })
      if not targets or not started then
        return nil, "perf.exporter: " .. (msg or ("no process %d"):format(pid)), errno or core.errno.ESRCH
      end
      places[#places + 1] = { label = ('pid="%d"'):format(pid), targets = targets,
        -- this process is there while it asks (and reading /proc would count an openat)
        up = pid ~= self_pid and function() return start_time(pid) == started end or nil }
    end
  end
  return places
end

local function check(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then
    error(("perf.exporter: options must be a table, got %s"):format(type(opts)), 0)
  end
  nearest.check_keys(opts, OPTS, "perf.exporter: unknown option", 0,
    "; options: events, all_cpus, cpus, pid, cgroup, max_seconds, profile")
  local n = 0
  for _, k in ipairs { "all_cpus", "cpus", "pid", "cgroup" } do
    if opts[k] ~= nil and opts[k] ~= false then n = n + 1 end
  end
  if n > 1 then error("perf.exporter: one target: all_cpus, cpus, pid or cgroup", 0) end
  if opts.pid ~= nil then processes.check({ pid = opts.pid }) end
  if opts.cgroup ~= nil then processes.check({ cgroup = opts.cgroup }) end
  local events = opts.events or M.DEFAULT_EVENTS
  if type(events) == "string" then events = stat.split(events) end
  if type(events) ~= "table" or #events == 0 then
    error("perf.exporter: events must be a list of events or a comma-separated string", 0)
  end
  return opts, events
end

-- The units to open (each a list from group.resolve: one event, a {group}
-- or a pattern's matches), counting, inheriting to new tasks when a task
-- is counted; or nil, message, errno.
local function units_of(events, per_task)
  local units = {}
  for _, ev in ipairs(events) do
    local specs = type(ev) == "string" and ev:match("^[%w_%.%-]*{") and ev or { ev }
    local list, msg, errno = group.resolve(specs, "perf.exporter")
    if not list then return nil, msg, errno end
    measure.counting(list)
    if #list > 1 and not (type(ev) == "string" and ev:find("{", 1, true)) then
      for _, e in ipairs(list) do units[#units + 1] = { e } end   -- a pattern: each alone
    else
      units[#units + 1] = list
    end
  end
  for _, list in ipairs(units) do
    for _, e in ipairs(list) do
      e.attr.inherit = per_task
      e.attr.enable_on_exec = nil
    end
    list[1].attr.disabled = false                 -- counting from the open on
  end
  return units
end

function Exporter:close()
  for _, place in ipairs(self.places or {}) do
    for _, gs in ipairs(place.opened or {}) do
      for k = #gs, 1, -1 do gs[k]:close() end
    end
  end
  self.places = {}
  self.closed = true
  return true
end
Exporter.__close = Exporter.close
Exporter.__gc = Exporter.close

function Exporter:__tostring()
  if self.closed then return "perf.exporter (closed)" end
  return ("perf.exporter (%d events, %d places)"):format(#self.names, #self.places)
end

-- Opens every unit on every target of every place: place.opened[u][k]
-- the group of unit u on target k. Returns true, or nil, message, errno
-- (what was opened is closed).
local function open_all(e, units)
  for _, place in ipairs(e.places) do
    place.opened = {}
    for u, list in ipairs(units) do
      local gs = {}
      place.opened[u] = gs
      for k, target in ipairs(place.targets) do
        -- open_list leaves the attrs as it opened them (the leader disabled):
        -- each group is enabled here, as perf.stat enables its groups
        local g, msg, errno = group.open_list(list, target, { user_fallback = true })
        local ok
        if g then ok, msg, errno = g:enable() end
        if not ok then
          if g then g:close() end
          e:close()
          return nil, msg, errno
        end
        gs[k] = g
        for _, note in ipairs(g:notes()) do e.notes[#e.notes + 1] = note end
      end
    end
  end
  return true
end

--- Counters that keep counting, read as Prometheus text (see the module
-- comment); `e:metrics()`, `e:profile(seconds [, opts])`, `e:close()`.
-- @tparam[opt] table opts `events` (a list or `"a,b"`; default perf
-- stat's), one target (`all_cpus`, `cpus`, `pid`, `cgroup`; default this
-- process), `max_seconds` (the longest profile, default 60), `profile`
-- (defaults for `e:profile`'s options: `event`, `freq`)
-- @treturn[1] table the exporter
-- @return[2] nil, message, errno when an event cannot be opened
-- @raise on misuse: an unknown option, two targets, a malformed event
-- @usage local e = assert(perf.exporter { events = "page-faults", all_cpus = true })
-- @function exporter
function M.new(opts)
  local ok, o, events = pcall(check, opts)
  if not ok then error(base.strip_position(o), 2) end
  local max = o.max_seconds or 60
  if math.type(max) ~= "integer" or max < 1 then
    error("perf.exporter: max_seconds must be a whole number of seconds, at least 1", 2)
  end
  local per_task = not (o.all_cpus or o.cpus or o.cgroup)
  local units, msg, errno
  ok, units, msg, errno = pcall(units_of, events, per_task)
  if not ok then error(base.strip_position(units), 2) end
  if not units then return nil, msg, errno end
  local places
  places, msg, errno = places_of(o)
  if not places then return nil, msg, errno end
  local e = setmetatable({ places = places, notes = {}, last = {}, max_seconds = max,
    profile_defaults = o.profile or {}, pid = o.pid ~= own_pid() and o.pid or nil, names = {} }, Exporter)
  ok, msg, errno = open_all(e, units)
  if not ok then return nil, msg, errno end
  local seen = {}
  for u, list in ipairs(units) do                  -- each event's name, once per family
    for i = 1, #list do
      local name = places[1].opened[u][1][i]:name()
      local fam = M.family(name)
      if seen[fam] then
        e:close()
        error(("perf.exporter: %s and %s both make the metric %s: give each event once")
          :format(seen[fam], name, fam), 2)
      end
      seen[fam] = name
      e.names[#e.names + 1] = { unit = u, member = i, name = name, family = fam }
    end
  end
  return e
end

-- Event ev (of e.names) at place p: count, enabled and running summed over
-- the place's targets; or nil, message, errno.
local function read_place(place, ev)
  local sum, en, run = 0, 0, 0
  for _, g in ipairs(place.opened[ev.unit]) do
    local v, ten, trun = g[ev.member]:read()
    if not v then return nil, ten, trun end
    sum, en, run = sum + v, en + ten, run + trun
  end
  return sum, en, run
end

-- value, never below the last one given for `key`
local function monotonic(e, key, value)
  local last = e.last[key]
  if last and value < last then return last end
  e.last[key] = value
  return value
end

local function seconds(ns)
  return ("%.9f"):format(ns / 1e9)
end

--- The text of a scrape: every family with its # HELP and # TYPE lines.
-- A counter that cannot be read (its target gone in a way the kernel
-- refuses to read) keeps its last value.
-- @treturn string Prometheus's text format, version 0.0.4
-- @function exporter:metrics
function Exporter:metrics()
  if self.closed then error("attempt to use a closed perf.exporter", 2) end
  local out, times = {}, { {}, {} }
  for _, ev in ipairs(self.names) do
    out[#out + 1] = ("# HELP %s %s counted by perf_event_open, scaled for multiplexing\n# TYPE %s counter\n")
      :format(ev.family, ev.name, ev.family)
    for _, place in ipairs(self.places) do
      local key = ev.family .. "{" .. place.label .. "}"
      local v, en, run = read_place(place, ev)
      v = v and (core.scale(v, en, run)) or self.last[key] or 0
      out[#out + 1] = ("%s %d\n"):format(key, monotonic(self, key, v))
      local labels = ('event="%s",%s'):format(label_value(ev.name), place.label)
      times[1][#times[1] + 1] = ("perf_enabled_seconds_total{%s} %s\n")
        :format(labels, seconds(monotonic(self, "e" .. labels, en or 0)))
      times[2][#times[2] + 1] = ("perf_running_seconds_total{%s} %s\n")
        :format(labels, seconds(monotonic(self, "r" .. labels, run or 0)))
    end
  end
  out[#out + 1] = "# HELP perf_enabled_seconds_total Seconds each event was enabled\n"
    .. "# TYPE perf_enabled_seconds_total counter\n"
  out[#out + 1] = table.concat(times[1])
  out[#out + 1] = "# HELP perf_running_seconds_total Seconds each event was counting "
    .. "(less than enabled: multiplexed)\n# TYPE perf_running_seconds_total counter\n"
  out[#out + 1] = table.concat(times[2])
  out[#out + 1] = "# HELP perf_target_up Whether the target is still there (a process "
    .. "that exited, a cgroup removed: 0)\n# TYPE perf_target_up gauge\n"
  for _, place in ipairs(self.places) do
    out[#out + 1] = ("perf_target_up{%s} %d\n"):format(place.label,
      (not place.up or place.up()) and 1 or 0)
  end
  return table.concat(out)
end

--- A profile of `seconds` seconds, as pprof's gzipped profile.proto (what
-- Go's /debug/pprof/profile serves): of this process, or of the exporter's
-- pid (the attach of `perf.profile { pid = P }`).
-- @int seconds 1 to max_seconds
-- @tparam[opt] table opts `event`, `freq` (as perf.profile's), `wait` (a
-- function called with the seconds, e.g. a scheduler's sleep that runs the
-- program's other coroutines meanwhile; default: a plain sleep)
-- @treturn[1] string the gzipped pprof bytes
-- @return[2] nil, message, status (an HTTP status: 503, 501 when the
-- attach is not available)
-- @function exporter:profile
function Exporter:profile(secs, opts)
  if self.closed then error("attempt to use a closed perf.exporter", 2) end
  local session = serve_profile
  local ok, s, msg, status = pcall(session.start, self, secs, opts)
  if not ok then error(base.strip_position(s), 2) end
  if not s then return nil, msg, status end
  local wait = opts and opts.wait or session.sleep
  wait(secs)
  return s:finish()
end

return M
