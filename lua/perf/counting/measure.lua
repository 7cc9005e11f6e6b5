-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.measure: count what one call of a function does.
--
--   local t, result = perf.measure({ "task-clock", "page-faults" }, fn, arg)
--   print(t["page-faults"], t.time_enabled, result)
--
-- The events open as one group (perf.group), enabled around a protected
-- call of fn. The results table holds each count scaled for multiplexing
-- under its index and name, time_enabled and time_running; fn's results
-- follow it. An error in fn propagates unchanged, after the group is
-- disabled and closed.
--
-- Calibration. The counts include what the bracket itself costs: the end
-- of the ioctl that enables the group, the protected call, the start of the
-- ioctl that disables it (a syscalls:sys_enter_ioctl event counts that one
-- ioctl). With `calibrate = true` (or a number of rounds) in the events
-- list, an empty function is first measured the same way on the same group,
-- the least count of each event over the rounds is the overhead, and it is
-- subtracted (a count never goes below zero). `calibrate` may also be a
-- table from perf.calibrate, to calibrate once and measure often.
--
-- The group is reset before fn's bracket and each member's times are read
-- before and after it, so the results cover that bracket alone.
local group = require "perf.counting.group"
local base = require "perf.event.base"
local core = require "perf.core"

local M = {}

local DEFAULT_ROUNDS = 10

-- Events are counted, not sampled: the sampling fields perf's syntax sets
-- for tracepoints (sample_period = 1, sample_type) are dropped, as perf stat
-- does.
local SAMPLING = { "sample_period", "sample_freq", "freq", "sample_type" }
function M.counting(list)
  for _, e in ipairs(list) do
    for _, k in ipairs(SAMPLING) do e.attr[k] = nil end
  end
  return list
end

-- The events argument without its options: a list copy and the options.
local function split(events, who)
  if type(events) ~= "table" or getmetatable(events) ~= nil then
    return events, {}
  end
  local list, opts = {}, {}
  for k, v in pairs(events) do
    if k == "calibrate" then opts.calibrate = v else list[k] = v end
  end
  local c = opts.calibrate
  if c ~= nil and c ~= false and c ~= true and type(c) ~= "table"
      and not (math.type(c) == "integer" and c >= 1 and c <= 10000) then
    error(("%s: calibrate must be true, a number of rounds (1..10000) or a "
      .. "table from perf.calibrate"):format(who), 0)
  end
  if type(c) == "table" then
    for k, v in pairs(c) do
      if math.type(v) ~= "integer" or v < 0 then
        error(("%s: calibrate[%s] must be a count (an integer >= 0)"):format(who, tostring(k)), 0)
      end
    end
  end
  return list, opts
end

local function open(specs, who)
  local list, msg, errno = group.resolve(specs, who)
  if not list then return nil, msg, errno end
  -- kernel-mode counting refused (perf_event_paranoid): user space only,
  -- as perf stat retries, with a note in the results
  return group.open_list(M.counting(list), nil, { user_fallback = true })
end

-- The counted bracket: the same code for fn and for the empty function.
local function after(g, ...)
  g:disable()
  return ...
end

local function bracket(g, fn, ...)
  local ok, msg, errno = g:enable()
  if not ok then return nil, msg, errno end
  return after(g, pcall(fn, ...))
end

local function empty() end

-- The least count of each event over `rounds` empty brackets, as a table
-- keyed by index and by name.
local function overhead(g, rounds)
  local least, t = {}, {}
  for _ = 1, rounds do
    local ok, msg, errno = g:reset()
    if not ok then return nil, msg, errno end
    ok, msg, errno = bracket(g, empty)
    if ok == nil then return nil, msg, errno end
    ok, msg, errno = g:read(t)
    if not ok then return nil, msg, errno end
    for i = 1, #g do
      if t[i] and (least[i] == nil or t[i] < least[i]) then least[i] = t[i] end
    end
  end
  for i = 1, #g do
    local name = g[i]:name()
    if least[name] == nil then least[name] = least[i] end
  end
  return least
end

local function check_fn(fn, who)
  local mt = getmetatable(fn)
  if type(fn) ~= "function" and not (mt and mt.__call) then
    error(("%s: a function to measure expected, got %s"):format(who, type(fn)), 0)
  end
end

local function raise_at_caller(ok, ...)
  if not ok then error(base.strip_position((...)), 3) end
  return ...
end

--- The cost of an empty `perf.measure` bracket, for each event: the least
-- count over `rounds` measures of an empty function.
-- @param events a list of events, as for `perf.measure`
-- @tparam[opt=10] integer rounds how many empty brackets (1..10000)
-- @treturn[1] table overhead: `[i]` and `[name]`, to pass as the
-- `calibrate` field of `perf.measure`'s events
-- @return[2] nil, message, errno when the events cannot be opened
-- @usage
-- local over = assert(perf.calibrate { "syscalls:sys_enter_ioctl" })
-- local t = perf.measure({ "syscalls:sys_enter_ioctl", calibrate = over }, fn)
-- @function calibrate
function M.calibrate(events, rounds)
  local g, msg, errno = raise_at_caller(pcall(function()
    if rounds ~= nil and not (math.type(rounds) == "integer" and rounds >= 1 and rounds <= 10000) then
      error("perf.calibrate: rounds must be an integer in 1..10000", 0)
    end
    return open(events, "perf.calibrate")
  end))
  if not g then return nil, msg, errno end
  local g_ <close> = g
  return overhead(g, rounds or DEFAULT_ROUNDS)
end

-- Each member's time_enabled and time_running now, into en[i], run[i].
local function times(g, en, run)
  for i = 1, #g do
    local v, e, r = g[i]:read()
    if not v then return nil, e, r end
    en[i], run[i] = e, r
  end
  return true
end

-- The counts of fn's bracket (reset before it), each scaled for
-- multiplexing by its own times over the bracket, less the overhead (never
-- below zero); t.overhead holds what was subtracted.
local function results(g, over, en0, run0)
  local scale = core.scale
  local t, applied, seen = {}, over and {} or nil, {}
  for i = 1, #g do
    local v, en, run = g[i]:read()
    if not v then return nil, en, run end
    v = scale(v, en - en0[i], run - run0[i])
    if i == 1 then t.time_enabled, t.time_running = en - en0[i], run - run0[i] end
    local name = g[i]:name()
    if over then
      local o = over[i] or over[name] or 0
      v = v > o and v - o or 0
      applied[i] = o
    end
    t[i] = v
    if not seen[name] then             -- t[name] is the first such member's
      seen[name] = true
      t[name] = v
      if over then applied[name] = applied[i] end
    end
  end
  t.overhead = applied
  local notes = g:notes()
  if #notes > 0 then t.notes = notes end
  return core.show(t, "perf.measure")
end

local function deliver(g, over, en0, run0, ok, ...)
  if ok == nil then return nil, ... end         -- enabling failed: msg, errno
  if not ok then error((...), 0) end            -- fn's error, unchanged
  local t, msg, errno = results(g, over, en0, run0)
  if not t then return nil, msg, errno end
  return t, ...
end

--- Counts what one call of a function does.
--
-- The events open as one group (`perf.group`), reset and enabled around a
-- protected call of `fn(...)`. An error in fn propagates unchanged, after
-- the group is closed. With `calibrate = true` (or a number of rounds, or
-- a table from `perf.calibrate`) in the events list, the cost of the
-- bracket itself is measured and subtracted (never below zero).
-- @param events a list of events (as `perf.group` takes them), with an
-- optional `calibrate` field
-- @tparam function fn the function to measure
-- @param ... its arguments
-- @treturn[1] table results: `[i]` and `[name]` each count (scaled for
-- multiplexing), `time_enabled`, `time_running`, `overhead`, `notes`
-- @return[1] ... fn's results
-- @return[2] nil, message, errno when the events cannot be opened or enabled
-- @raise fn's error; misuse (fn not a function, a malformed event)
-- @usage
-- local t, n = perf.measure({ "page-faults", "syscalls:sys_enter_openat" }, function()
--   io.open("/dev/null"):close()
--   return 42
-- end)
-- print(t["syscalls:sys_enter_openat"], n)   --> 1   42
-- @function measure
function M.measure(events, fn, ...)
  local g, msg, errno, cal = raise_at_caller(pcall(function()
    local list, opts = split(events, "perf.measure")
    check_fn(fn, "perf.measure")
    local mg, mmsg, merr = open(list, "perf.measure")
    return mg, mmsg, merr, opts.calibrate
  end))
  if not g then return nil, msg, errno end
  local g_ <close> = g
  local over = type(cal) == "table" and cal or nil
  if cal and not over then
    over, msg, errno = overhead(g, cal == true and DEFAULT_ROUNDS or cal)
    if not over then return nil, msg, errno end
  end
  local en0, run0 = {}, {}
  local ok
  ok, msg, errno = g:reset()
  if ok then ok, msg, errno = times(g, en0, run0) end
  if not ok then return nil, msg, errno end
  return deliver(g, over, en0, run0, bracket(g, fn, ...))
end

return M
