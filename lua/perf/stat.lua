-- perf.stat: run a command and count events on it and its children, as
-- `perf stat` does.
--
--   local r = assert(perf.stat({ "ls", "-l", "/" }, { "task-clock", "syscalls:sys_enter_openat" }))
--   print(r["syscalls:sys_enter_openat"], r.status, r.elapsed)
--
-- The command is forked and waits until the counters are attached to its
-- pid; they count from its exec (enable_on_exec) in it and in the tasks it
-- starts (inherit), as perf stat's do, and are read once it has exited.
-- Each event of the list is counted on its own; a "{a,b}" string is
-- counted as a group.
--
-- results[i] and results[name] are the counts (scaled for multiplexing);
-- results.events[i] has the details of event i (name, value, raw,
-- time_enabled, time_running, fraction, unit, scale, type, config,
-- supported, and group: the index of its group). An event this machine
-- cannot count (perf stat's <not supported>: no such PMU or event) is
-- false there, with supported = false and the kernel's error and errno in
-- its details; the others are counted. When none can be, perf.stat returns
-- nil, message, errno without running the command. status is the exit
-- code, or the name of the signal that ended the command (also in signal);
-- elapsed, user and sys are nanoseconds (wall clock from the exec to the
-- end of the wait; the command's CPU time from wait4). notes lists what
-- was done differently than asked, if anything.
local core = require "perf.core"
local group = require "perf.group"
local measure = require "perf.measure"

local M = {}

-- "a,b,{c,d}:u,cpu/event=0x3c,umask=0/" to its events: commas inside a
-- group's braces or a PMU's /terms/ do not split ("mem:ADDR/LEN" has a
-- slash that opens no terms).
function M.split(s)
  local out, depth, terms, start, event = {}, 0, false, 1, 1
  local memslash = false
  for i = 1, #s do
    local c = s:sub(i, i)
    if c == "{" and not terms then
      depth = depth + 1
      event = i + 1
    elseif c == "}" and not terms then
      depth = depth - 1
    elseif c == "/" then
      if s:sub(event, event + 3) == "mem:" and not memslash then
        memslash = true
      else
        terms = not terms
      end
    elseif c == "," and not terms then
      if depth == 0 then
        out[#out + 1] = s:sub(start, i - 1)
        start = i + 1
      end
      event, memslash = i + 1, false
    end
  end
  out[#out + 1] = s:sub(start)
  return out
end

local function is_group_string(s)
  return type(s) == "string" and s:match("^[%w_%.%-]*{") ~= nil
end

local OPTS = { stdin = true, stdout = true, stderr = true, inherit = true }

local function check_args(argv, events, opts)
  if type(argv) ~= "table" then
    error(("perf.stat: the command must be a list (argv), got %s"):format(type(argv)), 0)
  end
  if #argv == 0 then error("perf.stat: the command is empty", 0) end
  for i = 1, #argv do
    if type(argv[i]) ~= "string" then
      error(("perf.stat: argument %d of the command: a string expected, got %s")
        :format(i, type(argv[i])), 0)
    end
  end
  if opts ~= nil then
    if type(opts) ~= "table" then
      error(("perf.stat: options must be a table, got %s"):format(type(opts)), 0)
    end
    for k in pairs(opts) do
      if not OPTS[k] then
        error(("perf.stat: unknown option '%s' (options: stdin, stdout, stderr, inherit)")
          :format(tostring(k)), 0)
      end
    end
  end
  if type(events) == "string" then events = M.split(events) end
  if type(events) ~= "table" or #events == 0 then
    error("perf.stat: a list of events expected", 0)
  end
  return events
end

-- The events as units to open: each one a list from group.attrs, the
-- leader counting from the exec, all inheriting unless opts.inherit is
-- false. Returns the units, or nil, message, errno.
local function units_of(events, opts)
  local units = {}
  for _, item in ipairs(events) do
    local specs = is_group_string(item) and item or { item }
    local list, msg, errno = group.attrs(group.specs(specs, "perf.stat"), "perf.stat")
    if not list then return nil, msg, errno end
    measure.counting(list)
    for _, e in ipairs(list) do
      e.attr.inherit = opts.inherit ~= false
      e.attr.enable_on_exec = nil
    end
    list[1].attr.enable_on_exec = true
    units[#units + 1] = list
  end
  return units
end

-- Errors that mean "this machine cannot count that event" (no such PMU or
-- event, or a configuration the PMU refuses): perf stat prints the event as
-- <not supported> and counts the others, and so does perf.stat.
local NOT_SUPPORTED = { [2] = true, [6] = true, [22] = true, [38] = true, [95] = true }
-- ENOENT, ENXIO, EINVAL, ENOSYS, EOPNOTSUPP

local function close_all(groups, n)
  for i = n, 1, -1 do
    if groups[i] then groups[i]:close() end
  end
end

local function note(r, text)
  r.notes = r.notes or {}
  r.notes[#r.notes + 1] = text
end

-- The results table from the groups after the command ended; units[u]
-- that could not open have skipped[u] = { message, errno } instead.
local function collect(groups, skipped, units, w)
  local r = { events = {}, notes = nil }
  local n = 0
  for u = 1, #units do
    local g = groups[u]
    if not g then
      local msg, errno = skipped[u][1], skipped[u][2]
      for _, e in ipairs(units[u]) do
        n = n + 1
        r.events[n] = { name = e.name, supported = false, error = msg, errno = errno,
          type = e.attr.type, config = e.attr.config, group = #units[u] > 1 and u or nil }
        r[n] = false
        if r[e.name] == nil then r[e.name] = false end
      end
      note(r, ("%s: not supported here, not counted (%s)"):format(
        #units[u] > 1 and "the group of " .. units[u][1].name or units[u][1].name, msg))
      goto next_unit
    end
    for _, text in ipairs(g:notes()) do note(r, text) end
    for i = 1, #g do
      local ev = g[i]
      local v, en, run = ev:read()
      if not v then return nil, en, run end
      local estimate, fraction = core.scale(v, en, run)
      local extra = units[u][i].extra or {}
      local name, attr = ev:name(), ev:attr()     -- integer type and config
      n = n + 1
      r.events[n] = { name = name, value = estimate, raw = v, time_enabled = en,
        time_running = run, fraction = fraction, unit = extra.unit, scale = extra.scale,
        type = attr.type, config = attr.config, group = #g > 1 and u or nil, supported = true }
      r[n] = estimate
      if r[name] == nil then r[name] = estimate end
    end
    ::next_unit::
  end
  for k, v in pairs(w) do r[k] = v end
  return r
end

local function run(argv, events, opts)
  local units, msg, errno = units_of(events, opts)
  if not units then return nil, msg, errno end
  local child
  child, msg, errno = core.spawn(argv, { stdin = opts.stdin, stdout = opts.stdout, stderr = opts.stderr })
  if not child then return nil, "perf.stat: " .. msg, errno end
  local child_ <close> = child
  local groups, skipped, counted = {}, {}, 0
  -- every failure from here on closes what was opened
  local function fail(m, e)
    close_all(groups, #units)
    return nil, "perf.stat: " .. m, e
  end
  local target = { pid = child:pid() }
  for u, list in ipairs(units) do
    local g
    g, msg, errno = group.open_list(list, target, { user_fallback = true })
    if g then
      groups[u], counted = g, counted + 1
    elseif NOT_SUPPORTED[errno] then
      skipped[u] = { msg, errno }
    else
      return fail(msg, errno)
    end
  end
  if counted == 0 then                   -- nothing to count: the first reason
    return fail(skipped[1][1], skipped[1][2])
  end
  local ok
  ok, msg, errno = child:start()
  if not ok then return fail(msg, errno) end
  local w
  w, msg, errno = child:wait()
  if not w then return fail(msg, errno) end
  local r
  r, msg, errno = collect(groups, skipped, units, w)
  if not r then return fail(msg, errno) end
  close_all(groups, #units)
  return r
end

--- perf.stat(argv, events [, opts]) -> results | nil, message, errno
function M.stat(argv, events, opts)
  local ok, list = pcall(check_args, argv, events, opts)
  if not ok then error(require("perf").strip_position(list), 2) end
  local r, msg, errno
  ok, r, msg, errno = pcall(run, argv, list, opts or {})
  if not ok then error(require("perf").strip_position(r), 2) end
  return r, msg, errno
end

return M
