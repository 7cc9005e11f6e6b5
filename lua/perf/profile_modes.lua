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
local nearest = require "perf.nearest"

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
local function switches(perf)
  sig_data = sig_data + 1
  local ev, msg, errno = perf.open { type = "software", config = "context-switches",
    sample_period = 1, sigtrap = true, remove_on_exec = true, sig_data = sig_data,
    name = "context-switches" }
  if not ev then return nil, (msg:gsub("^perf%.open", "perf.profile")), errno end
  local ok
  ok, msg, errno = ev:notify()
  if not ok then ev:close() return nil, msg, errno end
  return ev
end

local function cpu_clock(perf, freq, period)
  local ev, msg, errno = perf.open { type = "software", config = "cpu-clock",
    freq = freq and true or nil, sample_freq = freq, sample_period = period, name = "cpu-clock" }
  if not ev then return nil, (msg:gsub("^perf%.open", "perf.profile")), errno end
  local ok
  ok, msg, errno = ev:notify()
  if not ok then ev:close() return nil, msg, errno end
  return ev
end

-- Whether a refused perf event can be replaced by the timer: cpu-clock or
-- task-clock, refused by permission or by a seccomp profile.
local REFUSED = { [1] = true, [13] = true, [38] = true }   -- EPERM, EACCES, ENOSYS
function M.timer_replaces(attr, errno, opts)
  return attr.type == 1 and (attr.config == 0 or attr.config == 1) and REFUSED[errno]
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
function M.open(perf, opts)
  local mode = M.check(opts)
  if opts.event == "timer" then
    if opts.period then error("perf.profile: the timer samples by freq (Hz of CPU time), not period", 3) end
    return M.timer(opts.freq or WALL_FREQ)
  end
  local fields = { mode = mode, unit = UNITS[mode], native = false }
  if mode == "alloc" then
    fields.name = "alloc"
    fields.period = opts.period or ALLOC_PERIOD
    fields.extra = setmetatable({ c = core.profile_alloc(fields.period), events = {} }, Extra)
    return fields
  end
  local cs, msg, errno = switches(perf)
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
  ev, msg, errno = cpu_clock(perf, freq, opts.period)
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
