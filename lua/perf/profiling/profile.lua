-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.profile: perf events charged to Lua functions and lines.
--
--   local prof = perf.profile(fn, { event = "cpu-clock" }, ...)
--   print(prof)                       -- a report like perf report's
--   for _, f in ipairs(prof:functions()) do print(f.name, f.self, f.total) end
--   prof:write "out.svg"              -- flame graph; .json: speedscope
--
--   local p <close> = perf.profiler { event = "syscalls:sys_enter_openat" }
--   p:start() ... local prof = p:stop()
--
-- The C side (csrc/profile.c) charges each overflow of the event to the
-- Lua stack that was running (the running coroutine, found at the
-- overflow, under the lines that resumed it) and keeps samples by stack;
-- this module opens the event and turns the stacks into frames; their
-- tree (perf.profiling.stack_tree, built once at the first need) gives
-- the functions, lines, folded stacks and every report.

local core = require "perf.core"
local evbase = require "perf.event.base"
local capabilities = require "perf.event.capabilities"
local nearest = require "perf.util.nearest"
local elf = require "perf.util.elf"
local events = require "perf.event.events"
local flamegraph = require "perf.profiling.flamegraph"
local fs = require "perf.util.fs"
local modes = require "perf.profiling.profile_modes"
local pmus = require "perf.event.pmu"
local pprof = require "perf.profiling.pprof"
local profile_diff = require "perf.profiling.profile_diff"
local stack_tree = require "perf.profiling.stack_tree"

local M = {}

local OPTION_KEYS = { event = true, freq = true, period = true, native = true, mode = true,
  counters = true }
local DEFAULT_FREQ = 999
-- Each sample is a signal and a hook call (several microseconds here): far
-- above this rate the signals alone take the CPU and the program stalls.
local MAX_FREQ = 20000
local RING_PAGES = 64                   -- ring pages for native call chains, counters
local NATIVE_DEPTH = 64                 -- user frames the kernel records

local function option_error(msg) error("perf.profile: " .. msg, 4) end

local function check_options(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then option_error(("options must be a table, not %s"):format(type(opts))) end
  nearest.check_keys(opts, OPTION_KEYS, "perf.profile: unknown option", 4)
  for _, k in ipairs { "freq", "period" } do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
      option_error(("%s must be a positive integer, got %s"):format(k, tostring(v)))
    end
  end
  if opts.freq and opts.period then option_error("give freq or period, not both") end
  return opts
end

-- Time and hardware events are sampled by frequency; tracepoints,
-- breakpoints, probes and the other software events at every hit.
local function by_frequency(attr)
  local t = attr.type
  if t == core.PERF_TYPE_SOFTWARE then return events.is_clock(attr) end
  if t == core.PERF_TYPE_HARDWARE or t == core.PERF_TYPE_HW_CACHE or t == core.PERF_TYPE_RAW then
    return true
  end
  if math.type(t) == "integer" and t >= core.PERF_TYPE_MAX then
    local pmu = pmus.by_type(t)
    return not (pmu and (pmu.name == "uprobe" or pmu.name == "kprobe"))
  end
  return false
end

-- Syscall tracepoints and the overflow signal (csrc/signal.c): a blocking
-- call interrupted by the signal of its own entry is restarted by the
-- kernel and fires its entry again, which the handler keeps from being a
-- sample ("entry"; "ioctl" for events that fire on the ioctl it makes for
-- that too). Every signal handler returns through rt_sigreturn, a syscall
-- (whose exit has id -1: it undoes the syscall number): raw_syscalls leave
-- it out, the program's own too.
local function syscall_sampling(name)
  local tp = name:match("^[%w_]+:[%w_]+") or name
  if tp:match("^syscalls:sys_%a+_rt_sigreturn$") then
    error(("perf.profile: %s fires on every return from the profiler's own signal handler: profile it with perf-lua record instead"):format(tp), 4)
  end
  if tp == "raw_syscalls:sys_enter" then return "ioctl", true end
  if tp == "raw_syscalls:sys_exit" then return nil, true end
  if tp == "syscalls:sys_enter_ioctl" then return "ioctl" end
  if tp:match("^syscalls:sys_enter_") then return "entry" end
end

-- The sampling event of opts.event (default cpu-clock) with opts.freq or
-- opts.period, or the event's own, or the default for its kind: attr,
-- name, freq, period, note (a capped frequency); or nil, message, errno. Raises at `level` for a
-- malformed event.
function M.sampling_attr(opts, level)
  local ok, attr, name, extra = pcall(evbase.attr, opts.event or "cpu-clock")
  if not ok then error("perf.profile: " .. evbase.strip_position(attr), level) end
  if not attr then return nil, "perf.profile " .. name, extra end
  local freq, period
  if opts.freq then
    freq = opts.freq
  elseif opts.period then
    period = opts.period
  elseif attr.freq and attr.sample_freq then
    freq = attr.sample_freq
  elseif attr.sample_period and attr.sample_period > 0 then
    period = attr.sample_period
  elseif by_frequency(attr) then
    freq = DEFAULT_FREQ
  else
    period = 1
  end
  local note
  if freq and freq > MAX_FREQ then
    note = ("sampling at %d Hz, not %d: each sample is a signal, and faster the signals take the CPU")
      :format(MAX_FREQ, freq)
    freq = MAX_FREQ
  end
  if freq then
    attr.freq, attr.sample_freq, attr.sample_period = true, freq, nil
  else
    attr.freq, attr.sample_freq, attr.sample_period = nil, nil, period
  end
  return attr, name, freq, period, note
end

-- ---- the profiler handle ----

local Profiler = { __name = "perf.profiler" }
Profiler.__index = Profiler

--- A profiler handle: `perf.profile` in steps.
--
-- `p:start()` enables sampling, `p:stop()` disables it and returns the
-- profile of every sample so far (start again to add more), `p:close()`
-- releases the event; `<close>` and garbage collection stop and close it.
-- One profiler runs at a time: starting a second one raises.
-- @tparam[opt] table opts as for `perf.profile`
-- @treturn[1] perf.profiler the handle, stopped
-- @return[2] nil, message, errno when the event cannot be opened
-- @raise misuse (unknown option, both freq and period, a malformed event)
-- @usage
-- local p <close> = assert(perf.profiler { event = "page-faults" })
-- p:start()
-- local t = {} for i = 1, 1e5 do t[i] = i end
-- print(p:stop())
-- @function profiler

function M.profiler(opts)
  if type(opts) == "table" and (opts.pid ~= nil or opts.tid ~= nil) then
    -- required here: perf.profiling.attach builds on this module (a cycle)
    return require("perf.profiling.attach").profiler({ pid = opts.pid, tid = opts.tid }, opts)
  end
  opts = check_options(opts)
  M.own_code(modes.open)                -- its Extra:start and stop run while sampling
  local mode = modes.check(opts)
  local cattrs, cnames, cerrno
  if opts.counters ~= nil then
    cattrs, cnames, cerrno = modes.counter_attrs(opts.counters)
    if not cattrs then return nil, cnames, cerrno end
  end
  local function handle(p, msg, errno)             -- made by perf.profile_modes
    if not p then return nil, msg, errno end
    p = setmetatable(p, Profiler)
    p.state = core.profile_state(p.event, nil)
    local ok
    ok, msg, errno = modes.attach(p, cattrs, cnames)   -- counters, read at each charge
    if not ok then p:close() return nil, msg, errno end
    return p
  end
  if mode ~= "cpu" or opts.event == "timer" then   -- alloc, off-cpu, wall, timer
    return handle(modes.open(opts))
  end
  local attr, name, freq, period, note = M.sampling_attr(opts, 4)
  if not attr then return nil, name, freq end
  local notes = { note }
  local sample_type = {}
  if opts.native then
    sample_type[#sample_type + 1] = "callchain"
    attr.exclude_callchain_kernel = true
    attr.sample_max_stack = NATIVE_DEPTH
  end
  if cattrs then                  -- the counters' values ride in each sample
    sample_type[#sample_type + 1] = "read"
    attr.read_format = { "group", "id" }
  end
  local restarts, unsigreturn = syscall_sampling(name)
  -- with "period" in sample_type a software event samples every hit,
  -- whatever its period (perf_swevent_event): left out
  if #sample_type == 0 and not freq then sample_type[1] = "tid" end
  if #sample_type > 0 then attr.sample_type = sample_type end
  attr.name = name
  local ev, msg, errno = evbase.open(attr)
  -- refused for counting the kernel too (perf_event_paranoid): user space
  -- only, as perf retries
  local user = not ev and evbase.user_only(attr, errno)
  local uev = user and evbase.open(user)
  if uev then
    ev, name = uev, evbase.user_name(name)
    notes[#notes + 1] = ("kernel-mode sampling is not permitted here (perf_event_paranoid %s): user space only")
      :format(tostring(capabilities.get().paranoid))
  end
  if not ev and modes.timer_replaces(attr, errno, opts) then
    return handle(modes.timer(freq or math.max(1, 1000000000 // period),
      ("%s refused (%s): a CPU-time timer samples instead"):format(name, msg:match("%((E%u+)%)") or errno)))
  end
  if not ev then return nil, (msg:gsub("^perf%.open", "perf.profile")), errno end
  local ok
  ok, msg, errno = ev:notify()
  if ok and unsigreturn then ok, msg, errno = ev:set_filter(("id != %d && id != -1"):format(core.SYS_rt_sigreturn)) end
  if not ok then ev:close() return nil, msg, errno end
  local p = setmetatable({ event = ev, name = name, freq = freq, note = notes[1] and table.concat(notes, "; "),
    period = period, native = opts.native and true or false, restarts = restarts }, Profiler)
  if cattrs then
    p.counters, msg, errno = modes.join(ev, cattrs, cnames)
    if not p.counters then ev:close() return nil, msg, errno end
  end
  if opts.native or cattrs then
    p.ring, msg, errno = ev:mmap(RING_PAGES)
    if not p.ring then p:close_events() return nil, msg, errno end
  end
  p.state = core.profile_state(ev, p.ring)      -- made last: finalized first
  return p
end

local function check_open(p)
  if not p.state then error("attempt to use a closed perf profiler", 3) end
end

-- Stops what start started, in the reverse order (sampling first); never
-- raises.
local function stop_parts(self)
  -- before the disable: the handler must not re-enable the event after it
  if self.restarts then core.signal_restarts(self.event, nil) end
  self.state:stop()
  if self.extra then self.extra:stop() end
  if self.counters then self.counters:stop() end
end

-- Counters whose values ride in the samples take their base before the
-- sampling event (their leader) is enabled, and stop after it. Sampling
-- starts last and stops first: the profiler's own code runs outside it.
-- A start that fails (out of memory) leaves nothing running.
local function start_parts(self, level, extra)
  if self.counters then self.counters:start() end
  if self.restarts then core.signal_restarts(self.event, self.restarts) end
  if self.extra then self.extra:start() end
  local _, why = self.state:start(level, extra)
  self.followed = why
end

-- level, extra: frames not charged, as st:start counts them with this
-- function as level 1 (start_parts is two levels deeper: pcall, it)
local function start(self, level, extra)
  local ok, err = pcall(start_parts, self, level and level + 2, extra)
  if not ok then
    stop_parts(self)
    error(err, 0)
  end
end

function Profiler:start()
  check_open(self)
  start(self)
  return true
end

-- The profile of every sample so far.
function Profiler:profile()
  check_open(self)
  local samples, lost, stacks = self.state:result()
  local copy = {}
  for k, v in pairs(stacks) do copy[k] = v end
  local meta = { samples = samples, lost = lost, event = self.name,
    freq = self.freq, period = self.period, native = self.native,
    mode = self.mode, unit = self.unit,
    note = self.note and self.followed and (self.note .. "; " .. self.followed) or self.note or self.followed }
  if self.extra and self.extra.annotate then self.extra:annotate(meta) end
  if self.counters then self.counters:annotate(meta) end
  return M.new(copy, meta)
end

function Profiler:stop()
  check_open(self)
  stop_parts(self)
  return self:profile()
end

-- Closes the events, members before their leader.
function Profiler:close_events()
  if self.counters then self.counters:close() end
  if self.ring then self.ring:close() end
  if self.event then self.event:close() end
end

function Profiler:close()
  if not self.state then self:close_events() return true end
  self.state:close()
  if self.extra then self.extra:close() end
  self:close_events()
  self.state = nil
  return true
end
Profiler.__close = Profiler.close
Profiler.__gc = Profiler.close

function Profiler:__tostring()
  if not self.state then return ("perf.profiler %q (closed)"):format(self.name) end
  local samples = self.state:result()
  local running = tostring(self.state):match("%((%a+),")
  return ("perf.profiler %q (%s, %s, %d samples)"):format(self.name,
    self.freq and (self.freq .. " Hz") or ("period " .. self.period), running, samples)
end

--- Profiles one call of a function: each sample of the event is charged to
-- the Lua stack that was running (functions, current lines, coroutines).
--
-- The sample is taken at the Lua VM's next step after the overflow: the
-- overflow signal only arms a count hook (as lua.c does for ^C). Time in a
-- C function called from Lua is charged to the Lua line that called it
-- (its self there) and counts in the C function's Total, as the time of
-- the Lua functions it calls back does (`table.sort`'s comparator).
-- A tracepoint or software event sampled at every hit (`period = 1`, their
-- default) is charged exactly: 30 `io.open` calls in a function are 30
-- `syscalls:sys_enter_openat` samples at the line of the call.
--
-- The profile has `samples`, `lost`, `event`, `freq` or `period`, and
-- `prof:functions()`, `prof:lines()`, `prof:folded()`, `prof:write(path
-- [, format])` (`"folded"`, `"svg"`, `"speedscope"`, `"pprof"`: pprof's
-- profile.proto, gzip-compressed; by default from the extension, `.pb.gz`
-- and `.pprof` for pprof) and `tostring(prof)`, a report like perf report's.
-- @tparam function fn the function to profile
-- @tparam[opt] table opts `event` (any event `perf.open` takes; default
-- `"cpu-clock"`; `"timer"`: no perf event, a POSIX timer on the thread's
-- CPU time, which cpu-clock and task-clock also fall back to where
-- perf_event_open is refused, saying so in `prof.note`), `freq` (Hz) or
-- `period` (events per sample); the default
-- is 999 Hz for cpu-clock, task-clock and hardware events, every hit for
-- the others; `native = true` joins each sample's native call chain under
-- the Lua frame; `mode`: `"alloc"` charges the bytes the Lua state
-- allocates (its allocator wrapped while profiling, a sample every `period`
-- bytes, default 524288), `"off-cpu"` the nanoseconds off the CPU to the
-- line that blocked (each context switch weighed until the thread runs
-- again), `"wall"` cpu-clock samples weighed by the time they stand for
-- plus the off-CPU time; the profile's `unit` says what its counts are
-- (`"samples"`, `"bytes"`, `"nanoseconds"`); `counters = { "page-faults",
-- ... }`: events counted alongside, their deltas charged with each sample:
-- members of the sampling event's group, whose values each sample record
-- carries (with the timer and the alloc, off-cpu and wall modes, a group of
-- their own read when each sample is charged); `functions()` and `lines()`
-- entries gain `counters`, `prof.counters` holds the totals charged, the
-- report shows them per line, with IPC and misses per 1000 instructions
-- where those are counted
-- @param ... fn's arguments
-- @treturn[1] perf.profile the profile
-- @return[1] ... fn's results
-- @return[2] nil, message, errno when the event cannot be opened
-- @raise fn's error, after the profiler stopped; misuse; a profiler already
-- running (profilers do not nest)
-- @usage
-- local prof = perf.profile(function()
--   for i = 1, 30 do io.open("/dev/null"):close() end
-- end, { event = "syscalls:sys_enter_openat" })
-- print(prof.samples)   --> 30
-- print(prof)
-- print(perf.profile(function() os.execute "sleep 0.2" end, { mode = "wall" }))
-- @function profile

-- pcall(fn, ...)'s results, packed (under perf.profile's pcall: packing
-- may fail too); fn is called by pcall so that it keeps no name of ours
function M.profile(fn, opts, ...)
  local mt = getmetatable(fn)
  if type(fn) == "table" and not (type(mt) == "table" and mt.__call) then
    -- required here: perf.profiling.attach builds on this module (a cycle)
    return require("perf.profiling.attach").profile(fn, opts)    -- { pid = P } or { tid = T }
  end
  if type(fn) ~= "function" and not (type(mt) == "table" and mt.__call) then
    error(("perf.profile: function expected, got %s"):format(type(fn)), 3)
  end
  if core.profile_running() then
    error("perf.profile: another profiler is running: profilers do not nest (stop it first)", 3)
  end
  -- misuse in opts raises at the caller's line, as perf.profiler's does
  local ok, p, msg, errno = pcall(M.profiler, opts)
  if not ok then error(evbase.strip_position(p), 2) end
  if not p then return nil, msg, errno end
  local ran, prof, results = pcall(M.run, p, nil, fn, ...)
  p:close()
  if not ran then error(prof, 0) end
  if not results[1] then error(results[2], 0) end
  return prof, table.unpack(results, 2, results.n)
end

-- M.run(p, handler, fn, ...) -> profile, results: one call of fn under the
-- stopped profiler p, as perf.profile makes it (xpcall with the message
-- handler `handler`, pcall without); results as table.pack gives pcall's.
-- For perf-lua profile, which keeps p to stop it where the script exits.
-- Stops p before anything else runs (table.pack's allocation would be
-- charged in mode alloc), then packs the results.
local function stop_with(p, ...)
  local prof = p:stop()
  return prof, table.pack(...)
end

function M.run(p, handler, fn, ...)
  -- frames from the root up to this one (level 3 of start: start, pcall,
  -- this), and the pcall or xpcall above fn, are not charged
  local started, err = pcall(start, p, 3, 1)
  if not started then error(err, 0) end
  if handler then return stop_with(p, xpcall(fn, handler, ...)) end
  return stop_with(p, pcall(fn, ...))
end

-- ---- the profile ----

local Profile = { __name = "perf.profile" }
Profile.__index = Profile

-- Frames as the C side keys them, leaf first: "L" name TAB source TAB
-- linedefined TAB line, "C" name, "c" name (a C function the sample is
-- in), "N" hex address, or "E" n (n frames of a deep stack's middle left
-- out: the leaf's 224 and the root's 32 are kept).
local function parse_frame(token)
  local kind, rest = token:sub(1, 1), token:sub(2)
  if kind == "L" then
    local name, source, defined, line = rest:match("^(.-)\t(.-)\t(%-?%d+)\t(%-?%d+)$")
    return { kind = "lua", name = name ~= "" and name or nil, source = source,
      linedefined = math.tointeger(tonumber(defined)), line = math.tointeger(tonumber(line)) }
  elseif kind == "C" or kind == "c" then
    return { kind = "c", name = rest, source = "[C]", linedefined = -1, running = kind == "c" }
  elseif kind == "N" then
    return { kind = "native", address = math.tointeger(tonumber(rest, 16)) }
  elseif kind == "E" then                         -- the middle of a deep stack
    return { kind = "elided", name = ("[%s frames elided]"):format(rest), source = "[elided]",
      linedefined = -1, elided = math.tointeger(tonumber(rest)) }
  end
end

-- Names native frames: "symbol", or "[file]" where the file has no symbol
-- for the address. Frames of the Lua VM itself where the chain joins the
-- Lua frame are left out: the Lua frame stands for them.
local function native_names(stacks)
  local locate = elf.locator()
  local vm = core.profile_vm()
  local cache = {}
  local function name_of(addr)
    local n = cache[addr]
    if n == nil then
      local w = locate(addr)
      if not w then
        n = { name = ("0x%x"):format(addr), file = "?" }
      else
        local base = w.file:match("[^/]+$") or w.file
        n = { name = w.symbol or ("[" .. base .. "]"), file = w.file, vm = w.file == vm }
      end
      cache[addr] = n
    end
    return n
  end
  for _, s in ipairs(stacks) do
    local natives = s.natives
    if natives then
      -- natives are leaf first; the join with Lua is at the end
      local last = #natives
      while last > 0 and name_of(natives[last]).vm do last = last - 1 end
      local list = {}
      for i = last, 1, -1 do
        local n = name_of(natives[i])
        local prev = list[#list]
        -- frames of a file without symbols say no more than the file once
        if not (prev and prev.name == n.name and n.name:sub(1, 1) == "[") then
          list[#list + 1] = { kind = "native", name = n.name, source = n.file, linedefined = -1 }
        end
      end
      s.native_frames = list
    end
  end
end

-- The key of a function: its source and the line that defines it.
local function function_key(f)
  if f.kind == "lua" then return f.source .. ":" .. f.linedefined end
  return f.kind .. ":" .. (f.source or "") .. ":" .. f.name
end

-- The sources of the profiler's own code (as the stack keys name them:
-- debug.getinfo's short_src): a sample taken while it ran (starting,
-- stopping, a wrapper of perf-lua profile) is the program's below it.
local OWN = {}

-- Marks the file of `fn` (default: of the function calling it) as the
-- profiler's own code.
function M.own_code(fn)
  OWN[debug.getinfo(fn or 2, "S").short_src] = true
end
M.own_code()

-- M.new(stacks, meta) -> profile: stacks maps the C side's keys to counts
function M.new(raw, meta)
  local prof = setmetatable({ samples = meta.samples, lost = meta.lost, event = meta.event,
    freq = meta.freq, period = meta.period, native = meta.native,
    mode = meta.mode, unit = meta.unit or "samples", note = meta.note,
    counter_names = meta.counter_names, counters = meta.counters }, Profile)
  local stacks, deep = {}, 0
  for key, count in pairs(raw) do
    local frames, natives, running = {}, nil, nil
    for token in key:gmatch("[^\n]+") do
      local f = parse_frame(token)
      if f and f.kind == "native" then
        natives = natives or {}
        natives[#natives + 1] = f.address
      elseif f and f.running then                   -- in functions()' Totals only
        running = running or {}
        running[#running + 1] = f
      elseif f and not (f.kind == "lua" and OWN[f.source]) then
        table.insert(frames, 1, f)                  -- root first
      end
    end
    -- the C function that entered Lua at the root (lua.c's pmain) says nothing
    while frames[1] and frames[1].kind == "c" do table.remove(frames, 1) end
    for _, f in ipairs(frames) do
      if f.kind == "elided" then deep = deep + count end
    end
    stacks[#stacks + 1] = { frames = frames, natives = natives, running = running, count = count,
      counters = meta.counters_by_key and meta.counters_by_key[key] }
  end
  if deep > 0 then
    local note = ("%d samples had stacks deeper than 256 frames: their middle frames are elided (the leaf's 224 and the root's 32 kept)"):format(deep)
    prof.note = prof.note and (prof.note .. "; " .. note) or note
  end
  if prof.native then native_names(stacks) end
  -- one name per function: the name it was called by most often
  local votes = {}
  for _, s in ipairs(stacks) do
    for _, f in ipairs(s.frames) do
      if f.name then
        local k = function_key(f)
        local v = votes[k] or {}
        votes[k] = v
        v[f.name] = (v[f.name] or 0) + s.count
      end
    end
  end
  local names = {}
  for k, v in pairs(votes) do
    local best, n = nil, -1
    for name, c in pairs(v) do
      if c > n or (c == n and name < best) then best, n = name, c end
    end
    names[k] = best
  end
  for _, s in ipairs(stacks) do
    for _, f in ipairs(s.frames) do
      local k = function_key(f)
      f.name = names[k] or ("<%s:%d>"):format(f.source, f.linedefined)
    end
    if s.native_frames then
      for _, f in ipairs(s.native_frames) do s.frames[#s.frames + 1] = f end
    end
    s.native_frames, s.natives = nil, nil
  end
  prof.stacks = stacks
  return prof
end

local frame_label = stack_tree.label
M.frame_label = frame_label

-- Adds a stack's counter deltas to an entry's `counters` (self).
local function add_counters(e, counters)
  local c = e.counters or {}
  e.counters = c
  for name, n in pairs(counters) do c[name] = (c[name] or 0) + n end
end

-- prof:functions() -> { {name, source, line, self, total}, ... }
function Profile:functions()
  local t = stack_tree.of(self)
  local by, list = {}, {}
  local function entry(f)
    local k = function_key(f)
    local e = by[k]
    if not e then
      e = { name = f.name, source = f.source, line = f.linedefined, self = 0, total = 0 }
      by[k] = e
      list[#list + 1] = e
    end
    return e, k
  end
  for _, st in ipairs(t.stacks) do
    local seen = {}
    local leaf = stack_tree.leaf(t, st)
    for j, id in ipairs(st.ids) do
      local f = t.frames[id]
      if f.kind ~= "native" and f.kind ~= "elided" then
        local e, k = entry(f)
        if not seen[k] then seen[k] = true; e.total = e.total + st.count end
        if j == leaf then
          e.self = e.self + st.count
          if st.counters then add_counters(e, st.counters) end
        end
      end
    end
    -- the C functions the sample was in: their caller's line has the self
    for _, f in ipairs(st.running or {}) do
      local e, k = entry(f)
      if not seen[k] then seen[k] = true; e.total = e.total + st.count end
    end
  end
  table.sort(list, function(a, b)
    if a.self ~= b.self then return a.self > b.self end
    if a.total ~= b.total then return a.total > b.total end
    if a.source ~= b.source then return a.source < b.source end
    return a.line < b.line
  end)
  return list
end

-- prof:lines() -> { {source, line, count, name}, ... }
function Profile:lines()
  local t = stack_tree.of(self)
  local by, list = {}, {}
  for _, st in ipairs(t.stacks) do
    local leaf = stack_tree.leaf(t, st)
    if leaf then
      local f = t.frames[st.ids[leaf]]
      local k = f.source .. ":" .. f.line
      local e = by[k]
      if not e then
        e = { source = f.source, line = f.line, count = 0, name = f.name }
        by[k] = e
        list[#list + 1] = e
      end
      e.count = e.count + st.count
      if st.counters then add_counters(e, st.counters) end
    end
  end
  table.sort(list, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    if a.source ~= b.source then return a.source < b.source end
    return a.line < b.line
  end)
  return list
end

-- prof:folded() -> FlameGraph's folded stacks, "root;...;leaf N" lines
function Profile:folded()
  return stack_tree.folded(stack_tree.of(self))
end

-- prof:svg() -> an interactive flame graph (perf.flamegraph)
function Profile:svg()
  return flamegraph.svg_tree(stack_tree.of(self).root, {
    title = "Flame graph: " .. self:sampling(),
    subtitle = ("%d samples, %d lost; click a frame to zoom"):format(self.samples, self.lost),
    unit = self.unit ~= "samples" and self.unit or nil,
  })
end

-- speedscope's unit of a profile's weights
local SPEEDSCOPE_UNIT = { nanoseconds = "nanoseconds", bytes = "bytes" }

-- speedscope's frame of a frame: a Lua function is its name, file and
-- the line defining it
local function speedscope_frame(f)
  if f.kind == "lua" then return { name = f.name, file = f.source, line = f.linedefined } end
  return { name = frame_label(f), file = f.kind ~= "c" and f.source or nil }
end

-- prof:speedscope() -> speedscope's JSON file format. A Lua function is
-- one frame (its name, file and the line defining it), so its samples at
-- different lines stay one function in the sandwich view; the line a
-- sample ran comes as a frame of its own under the innermost function.
function Profile:speedscope()
  local t = stack_tree.of(self)
  local made, stacks = {}, {}
  for i, st in ipairs(t.stacks) do
    local frames = {}
    for j, id in ipairs(st.ids) do
      made[id] = made[id] or speedscope_frame(t.frames[id])
      frames[j] = made[id]
    end
    local leaf = stack_tree.leaf(t, st)
    if leaf then
      local f = t.frames[st.ids[leaf]]
      frames[#frames + 1] = { name = ("%s:%d"):format(f.source, f.line), file = f.source, line = f.line }
    end
    if #frames == 0 then frames[1] = { name = "[unknown]" } end
    stacks[i] = { frames = frames, count = st.count }
  end
  return flamegraph.speedscope(stacks, { name = self:sampling(),
    unit = SPEEDSCOPE_UNIT[self.unit] })
end

local FORMATS = { folded = true, svg = true, speedscope = true, pprof = true }
local BY_EXTENSION = { folded = "folded", txt = "folded", svg = "svg", json = "speedscope",
  pprof = "pprof", ["pb.gz"] = "pprof" }

-- M.format_of(path) -> the format prof:write gives `path` by its
-- extension, or nil and why not.
function M.format_of(path)
  local ext = path:match("%.(pb%.gz)$") or path:match("%.([%w]+)$")
  local format = ext and BY_EXTENSION[ext:lower()]
  if format then return format end
  return nil, ("cannot tell the format from '%s': name it (\"folded\", \"svg\", \"speedscope\" or \"pprof\") or use .folded, .svg, .json or .pb.gz"):format(path)
end

-- prof:write(path [, format]) -> true | nil, message, errno
function Profile:write(path, format)
  if type(path) ~= "string" then
    error(("prof:write: path expected, got %s"):format(type(path)), 2)
  end
  if format == nil then
    local why
    format, why = M.format_of(path)
    if not format then error("prof:write: " .. why, 2) end
  elseif not FORMATS[format] then
    local names = { "folded", "svg", "speedscope", "pprof" }
    error(("prof:write: unknown format '%s'%s"):format(tostring(format), nearest.hint(tostring(format), names)), 2)
  end
  local text
  if format == "folded" then text = self:folded()
  elseif format == "svg" then text = self:svg()
  elseif format == "pprof" then text = pprof.file(self)
  else text = self:speedscope() end
  local ok, msg, errno = fs.write_atomic(path, text)
  if not ok then return nil, "prof:write: " .. msg, errno end
  return true
end

-- prof:diff(base) -> the differential profile (perf.profile_diff)
function Profile:diff(base)
  return profile_diff.new(base, self)
end

-- "cpu-clock at 999 Hz" or "syscalls:sys_enter_openat, every 1"
function Profile:sampling()
  if self.mode and self.mode ~= "cpu" then return modes.sampling(self) end
  if self.freq then return ("%s at %d Hz"):format(self.event, self.freq) end
  return ("%s, period %d"):format(self.event, self.period or 0)
end

local function percent(n, total)
  if total == 0 then return "     -" end
  return ("%6.2f%%"):format(100 * n / total)
end

-- prof:report([max]) -> text: the top functions and lines
function Profile:report(max)
  max = max or 10
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  add("# perf.profile: %s", self:sampling())
  add("# %d samples, %d lost%s", self.samples, self.lost, self.native and ", native frames" or "")
  if self.note then add("# %s", self.note) end
  -- percentages of the weight charged (samples, or the mode's unit)
  local total = stack_tree.of(self).total
  if self.unit ~= "samples" then
    add("# %s charged", modes.amount(total, self.unit))
  end
  add("#")
  add("#    Self    Total  Function")
  local fns = self:functions()
  for i = 1, math.min(max, #fns) do
    local f = fns[i]
    local where = f.source == "[C]" and "[C]" or ("%s:%d"):format(f.source, f.line)
    add("  %s  %s  %s  (%s)", percent(f.self, total), percent(f.total, total), f.name, where)
  end
  if #fns > max then add("  ... %d more function%s", #fns - max, #fns - max == 1 and "" or "s") end
  add("#")
  add("#    Self  Line")
  local lines = self:lines()
  for i = 1, math.min(max, #lines) do
    local l = lines[i]
    add("  %s  %s:%d  %s", percent(l.count, total), l.source, l.line, l.name)
  end
  if #lines > max then add("  ... %d more line%s", #lines - max, #lines - max == 1 and "" or "s") end
  if self.counter_names then out[#out + 1] = modes.counter_report(self, lines, max) end
  return table.concat(out, "\n") .. "\n"
end

function Profile:__tostring()
  return self:report()
end

--- The profile `perf.profile` and `p:stop()` return: `samples`, `lost`,
-- `event`, `period` or `freq`, `unit` (`"samples"`, `"bytes"`,
-- `"nanoseconds"`), `counters` (with `opts.counters`), `note`; prints as
-- a report like perf report's.
-- @type Profile

--- The functions charged, most `self` first, then `total`.
-- @treturn table a list of `{ name =, source =, line =, self =, total =, counters = }`
-- @usage for _, f in ipairs(prof:functions()) do print(f.name, f.self, f.total) end
-- @function Profile:functions

--- The source lines charged (self samples), most first.
-- @treturn table a list of `{ source =, line =, count =, name =, counters = }`
-- @usage print(prof:lines()[1].line)
-- @function Profile:lines

--- The stacks in FlameGraph's folded format, root first, one line per
-- distinct stack (`a (src:1);b (src:7) 12`); the counts add up to `samples`.
-- @treturn string the folded stacks
-- @usage io.write(prof:folded())
-- @function Profile:folded

--- Writes the profile to a file.
-- @string path the file
-- @string[opt] format `"folded"`, `"svg"` (an interactive flame graph),
-- `"speedscope"` (speedscope's JSON) or `"pprof"` (gzipped profile.proto);
-- by default from the extension (`.folded`/`.txt`, `.svg`, `.json`,
-- `.pb.gz`/`.pprof`)
-- @treturn[1] boolean true
-- @return[2] nil, message, errno when the file cannot be written
-- @raise an unknown format
-- @usage assert(prof:write "profile.svg")
-- @function Profile:write

--- A differential profile against `base` (FlameGraph's difffolded form,
-- a red/blue flame graph with `d:write "d.svg"`).
-- @tparam Profile base the profile to compare with
-- @return the diff: `d:folded()`, `d:lines()`, `d:write(path)`, `tostring(d)`
-- @usage print(prof:diff(before))
-- @function Profile:diff

--- The report `tostring(prof)` prints: the event, samples, lost, then the
-- top functions and lines with percentages.
-- @int[opt=10] max rows per table
-- @treturn string the report
-- @usage print(prof:report(5))
-- @function Profile:report

-- whether an attr is sampled by frequency by default (perf.record too)
M.by_frequency = by_frequency

return M
