-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.profile_modes: what perf.profile charges besides samples of one
-- event: allocated bytes, off-CPU time, wall time.
--
--   perf.profile(fn, { mode = "alloc" })      -- bytes, one sample every period bytes
--   perf.profile(fn, { mode = "off-cpu" })    -- ns off the CPU, at the line that blocked
--   perf.profile(fn, { mode = "wall" })       -- cpu-clock samples + off-CPU time, in ns
--
-- M.open(perf, opts) gives the profiler handle's fields: the sampling event
-- (nil for alloc: the allocator takes the samples), its name, freq or
-- period, mode and unit, and `extra`, the C object (csrc/profile_alloc.c,
-- csrc/profile_time.c) that perf.profile starts after the profiler and
-- stops before it.

local core = require "perf.core"
local base = require "perf.event.base"
local nearest = require "perf.util.nearest"
local capabilities = require "perf.event.capabilities"
local event_names = require "perf.event.events"

local M = {}

local MODES = { "cpu", "alloc", "off-cpu", "wall" }
local UNITS = { cpu = "samples", alloc = "bytes", ["off-cpu"] = "nanoseconds", wall = "nanoseconds" }
local ALLOC_PERIOD = 524288             -- bytes per sample, as pprof's heap profiles
local WALL_FREQ = 999

-- The mode opts names ("cpu" when none); raises on misuse.
function M.check(opts)
  local mode = opts.mode
  if opts.event == "timer" and (mode or "cpu") ~= "cpu" then
    error(("perf.profile: mode '%s' chooses its own events: give no event"):format(mode), 4)
  end
  if opts.event == "timer" and opts.native then
    error("perf.profile: the timer has no native call chains (they come with perf events)", 4)
  end
  if mode == nil then return "cpu" end
  if not UNITS[mode] then
    error(("perf.profile: unknown mode '%s'%s"):format(tostring(mode), nearest.hint(tostring(mode), MODES)), 4)
  end
  if mode ~= "cpu" and opts.event ~= nil then
    error(("perf.profile: mode '%s' chooses its own events: give no event"):format(mode), 4)
  end
  if mode ~= "cpu" and opts.native then
    error(("perf.profile: native call chains are not kept in mode '%s'"):format(mode), 4)
  end
  if (mode == "alloc" or mode == "off-cpu") and opts.freq then
    error(("perf.profile: mode '%s' samples by period, not freq"):format(mode), 4)
  end
  if mode == "off-cpu" and opts.period then
    error("perf.profile: mode 'off-cpu' takes every context switch: give no period", 4)
  end
  return mode
end

-- Each sigtrap event needs its own sig_data (signal.c finds it by that).
local sig_data = 0x70726f66000000

-- A context-switch event whose signal comes when the thread runs again.
local function switches()
  sig_data = sig_data + 1
  local ev, msg, errno = base.open { type = "software", config = "context-switches",
    sample_period = 1, sigtrap = true, remove_on_exec = true, sig_data = sig_data,
    name = "context-switches" }
  if not ev and (errno == core.errno.EACCES or errno == core.errno.EPERM) then
    -- context-switches:u counts none: a switch happens in the kernel
    return nil, ("perf.profile: off-CPU and wall time need the kernel's context switches, which "
      .. "perf_event_paranoid %s refuses this user: run with CAP_PERFMON (or paranoid <= 1), "
      .. "or profile CPU time (the default mode, cpu-clock:u for this user)")
      :format(tostring(capabilities.get().paranoid)), errno
  end
  if not ev then return nil, (msg:gsub("^perf%.open", "perf.profile")), errno end
  local ok
  ok, msg, errno = ev:notify()
  if not ok then ev:close() return nil, msg, errno end
  return ev
end

local function cpu_clock(freq, period)
  local ev, msg, errno = base.open { type = "software", config = "cpu-clock",
    freq = freq and true or nil, sample_freq = freq, sample_period = period, name = "cpu-clock" }
  if not ev then return nil, (msg:gsub("^perf%.open", "perf.profile")), errno end
  local ok
  ok, msg, errno = ev:notify()
  if not ok then ev:close() return nil, msg, errno end
  return ev
end

-- Whether a refused perf event can be replaced by the timer: cpu-clock or
-- task-clock, refused by permission or by a seccomp profile.
local REFUSED = { [core.errno.EPERM] = true, [core.errno.EACCES] = true, [core.errno.ENOSYS] = true }
function M.timer_replaces(attr, errno, opts)
  return event_names.is_clock(attr) and REFUSED[errno]
    and not opts.native and true or false
end

-- Starts and stops the C objects, and the events they follow, with the profiler.
local Extra = {}
Extra.__index = Extra

function Extra:start()
  self.c:start()
  for _, ev in ipairs(self.events) do assert(ev:enable()) end
  return true
end

function Extra:stop()
  for _, ev in ipairs(self.events) do ev:disable() end
  self.c:stop()
  return true
end

function Extra:close()
  self.c:close()
  for _, ev in ipairs(self.events) do ev:close() end
  return true
end

-- The timer's profiler fields: freq samples per second of CPU time;
-- `note` says why, when it stands in for a refused event.
function M.timer(freq, note)
  local t, msg, errno = core.profile_timer(freq)
  if not t then return nil, msg, errno end
  return { mode = "cpu", unit = "samples", native = false, name = "timer", freq = freq,
    note = note, extra = setmetatable({ c = t, events = {} }, Extra) }
end

-- M.open(perf, opts) -> fields | nil, message, errno
function M.open(opts)
  local mode = M.check(opts)
  if opts.event == "timer" then
    if opts.period then error("perf.profile: the timer samples by freq (Hz of CPU time), not period", 4) end
    return M.timer(opts.freq or WALL_FREQ)
  end
  local fields = { mode = mode, unit = UNITS[mode], native = false }
  if mode == "alloc" then
    fields.name = "alloc"
    fields.period = opts.period or ALLOC_PERIOD
    fields.extra = setmetatable({ c = core.profile_alloc(fields.period), events = {} }, Extra)
    return fields
  end
  local cs, msg, errno = switches()
  if not cs then return nil, msg, errno end
  local clock = core.profile_clock(mode)
  if mode == "off-cpu" then
    fields.name, fields.period, fields.event = "context-switches", 1, cs
    fields.extra = setmetatable({ c = clock, events = {} }, Extra)
    return fields
  end
  -- wall: cpu-clock samples, plus the switches
  local freq = opts.freq or (not opts.period and WALL_FREQ) or nil
  local ev
  ev, msg, errno = cpu_clock(freq, opts.period)
  if not ev then cs:close() return nil, msg, errno end
  clock:follow(cs)
  fields.name, fields.freq, fields.period, fields.event = "cpu-clock", freq, opts.period, ev
  fields.extra = setmetatable({ c = clock, events = { cs } }, Extra)
  return fields
end

-- "wall time (cpu-clock at 999 Hz and context switches)" and the like
function M.sampling(prof)
  if prof.mode == "alloc" then
    return ("allocated bytes, a sample every %d bytes"):format(prof.period)
  elseif prof.mode == "off-cpu" then
    return "off-CPU time, at every context switch"
  elseif prof.mode == "wall" then
    local rate = prof.freq and (prof.freq .. " Hz") or ("period " .. prof.period)
    return ("wall time: cpu-clock at %s and every context switch"):format(rate)
  end
end

-- ---- counters = { ... }: deltas charged with each sample ----

-- Several C objects started and stopped together, in order (stopped in
-- reverse).
local Extras = {}
Extras.__index = Extras

function Extras:start()
  for _, x in ipairs(self) do x:start() end
  return true
end

function Extras:stop()
  for i = #self, 1, -1 do self[i]:stop() end
  return true
end

function Extras:close()
  for i = #self, 1, -1 do self[i]:close() end
  return true
end

function Extras:annotate(meta)
  for _, x in ipairs(self) do if x.annotate then x:annotate(meta) end end
end

local Counters = {}
Counters.__index = Counters

function Counters:start() return self.c:start() end
function Counters:stop() return self.c:stop() end

function Counters:close()
  self.c:close()
  for i = #self.events, 1, -1 do self.events[i]:close() end
  return true
end

-- Adds what the profile needs: names, totals, deltas by stack key.
function Counters:annotate(meta)
  local by_key, totals = self.c:result()
  local copy = {}
  for k, v in pairs(by_key) do
    local named = {}
    for i, name in ipairs(self.names) do named[name] = v[i] end
    copy[k] = named
  end
  local named = {}
  for i, name in ipairs(self.names) do named[name] = totals[i] end
  meta.counter_names, meta.counters, meta.counters_by_key = self.names, named, copy
end

-- The attrs and names of opts.counters; raises on misuse (at the level of
-- perf.profiler's caller, before any event is open), nil, message, errno
-- where tracefs cannot be read.
function M.counter_attrs(list)
  if type(list) ~= "table" or #list == 0 then
    error(("perf.profile: counters must be a list of events, got %s"):format(type(list)), 3)
  end
  local attrs, names = {}, {}
  for i, spec in ipairs(list) do
    local ok, attr, name, errno = pcall(base.attr, spec)
    if not ok then error("perf.profile: counters: " .. base.strip_position(attr), 3) end
    if not attr then return nil, "perf.profile: counters: " .. tostring(name), errno end
    attr.name = name
    attrs[i], names[i] = attr, name
  end
  return attrs, names
end

-- Opens the counters: members of `leader`'s group (their values ride in
-- its samples), or, with no leader, a group of their own (first one
-- leading) enabled once, for good. nil, message, errno on failure.
local function open_counters(attrs, names, leader)
  local events = {}
  local function fail(msg, errno)
    for j = #events, 1, -1 do events[j]:close() end
    return nil, ("perf.profile: counters: %s"):format((tostring(msg):gsub("^perf%.open ", ""))), errno
  end
  for i, attr in ipairs(attrs) do
    local group = leader or events[1]
    if leader then attr.disabled = false end   -- enabled: the leader gates them
    local target = group and { group = group } or nil
    local ev, msg, errno = base.open(attr, target)
    -- refused for counting the kernel too (perf_event_paranoid): user
    -- space only, as perf stat retries
    local user = not ev and base.user_only(attr, errno)
    local uev = user and base.open(user, target)
    if uev then ev, names[i] = uev, base.user_name(names[i]) end
    if not ev then return fail(msg, errno) end
    events[i] = ev
    names[i] = names[i] or ev:name()
  end
  if not leader then
    for _, ev in ipairs(events) do
      local ok, msg, errno = ev:enable()
      if not ok then return fail(msg, errno) end
    end
  end
  return setmetatable({ c = core.profile_counters(events, leader ~= nil), events = events,
    names = names }, Counters)
end

-- The counters of opts.counters as members of the sampling event's
-- group (it samples PERF_SAMPLE_READ with PERF_FORMAT_GROUP|ID into its
-- ring); nil, message, errno.
function M.join(leader, attrs, names)
  return open_counters(attrs, names, leader)
end

-- Adds the counters (M.counter_attrs), read with read(2) at each charge,
-- to the profiler handle p (its extra objects): for the samplers that lead
-- no group (the timer, alloc, off-cpu and wall modes). true, or nil,
-- message, errno.
function M.attach(p, attrs, names)
  if attrs == nil then return true end
  local counters, msg, errno = open_counters(attrs, names)
  if not counters then return nil, msg, errno end
  local extras = setmetatable({}, Extras)
  if p.extra then extras[1] = p.extra end
  extras[#extras + 1] = counters
  p.extra = extras
  return true
end

-- The counters section of tostring(prof): totals, then per line (the
-- report's top lines), with IPC where cycles and instructions are both
-- counted and misses per 1000 instructions for the cache events.
function M.counter_report(prof, lines, max)
  local names = prof.counter_names
  local have = {}
  for _, name in ipairs(names) do have[name] = true end
  local ipc = have.cycles and have.instructions
  local per_k = {}
  if have.instructions then
    for _, name in ipairs(names) do
      if name:find("miss", 1, true) then per_k[#per_k + 1] = name end
    end
  end
  local function derived(c)
    local cols = {}
    if ipc then
      cols[#cols + 1] = (c.cycles or 0) > 0 and ("%8.2f"):format((c.instructions or 0) / c.cycles) or "       -"
    end
    for _, name in ipairs(per_k) do
      cols[#cols + 1] = (c.instructions or 0) > 0
        and ("%12.2f"):format(1000 * (c[name] or 0) / c.instructions) or "           -"
    end
    return table.concat(cols, "  ")
  end
  local out = { "#" }
  local head, total, width = {}, {}, {}
  for i, name in ipairs(names) do
    width[i] = math.max(12, #name)
    head[i] = ("%" .. width[i] .. "s"):format(name)
    total[i] = ("%" .. width[i] .. "d"):format(prof.counters[name] or 0)
  end
  if ipc then head[#head + 1] = "     IPC" end
  for _, name in ipairs(per_k) do head[#head + 1] = ("%12s"):format(name:sub(1, 7) .. "/1k ins") end
  out[#out + 1] = "# " .. table.concat(head, "  ") .. "  Line"
  local d = derived(prof.counters)
  out[#out + 1] = "  " .. table.concat(total, "  ") .. (d ~= "" and "  " .. d or "") .. "  (all)"
  for i = 1, math.min(max, #lines) do
    local l, cols = lines[i], {}
    local c = l.counters or {}
    for j, name in ipairs(names) do cols[j] = ("%" .. width[j] .. "d"):format(c[name] or 0) end
    d = derived(c)
    out[#out + 1] = ("  %s%s  %s:%d  %s"):format(table.concat(cols, "  "), d ~= "" and "  " .. d or "",
      l.source, l.line, l.name)
  end
  return table.concat(out, "\n")
end

-- A weight in the profile's unit for reports: "1.234 s", "12.5 MB".
function M.amount(n, unit)
  if unit == "nanoseconds" then
    if n >= 1e9 then return ("%.3f s"):format(n / 1e9) end
    if n >= 1e6 then return ("%.3f ms"):format(n / 1e6) end
    return ("%.3f us"):format(n / 1e3)
  elseif unit == "bytes" then
    if n >= 1 << 20 then return ("%.1f MiB"):format(n / (1 << 20)) end
    if n >= 1 << 10 then return ("%.1f KiB"):format(n / (1 << 10)) end
    return ("%d bytes"):format(n)
  end
  return ("%d samples"):format(n)
end

return M
