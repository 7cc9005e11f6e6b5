-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.attach: profiling a running Lua 5.4 process by pid, for
-- perf.profile({ pid = P } | { tid = T }, opts) and perf.profiler{ pid = P }.
--
-- The target is found out (perf.attach_target: its Lua release from
-- lua_ident), a tracer is started on it (csrc/attach*.c: ptrace, a sigtrap
-- event on each thread, the Lua stack read at each overflow while the
-- thread is stopped), and its samples by stack become the same profile
-- object the in-process profiler returns (perf.profile.new), with the
-- target's functions named from its own sources.
local core = require "perf.core"
local target_info = require "perf.profiling.attach_target"
local nearest = require "perf.util.nearest"
local elf = require "perf.util.elf"
local profile = require "perf.profiling.profile"

local M = {}

local OPTION_KEYS = { event = true, freq = true, period = true, duration = true, command = true,
  pid = true, tid = true, native = true, mode = true, counters = true }

local function option_error(msg, level) error("perf.profile: " .. msg, level or 4) end

-- { pid = P | {P...} } or { tid = T } -> list of { pid =, tid = }
local function targets_of(t, level)
  nearest.check_keys(t, { pid = true, tid = true }, "perf.profile: unknown target field", level,
    "; a target is { pid = P } or { tid = T }")
  if (t.pid ~= nil) == (t.tid ~= nil) then option_error("a target is { pid = P } or { tid = T }", level) end
  local ids = t.pid or t.tid
  ids = type(ids) == "table" and ids or { ids }
  local list = {}
  for i, id in ipairs(ids) do
    if math.type(id) ~= "integer" or id <= 0 then
      option_error(("%s must be a positive integer, got %s"):format(t.pid and "pid" or "tid", tostring(id)), level)
    end
    if t.tid then
      local st = target_info.status_of(id)
      list[i] = { pid = st and tonumber(st.Tgid) or id, tid = id }
    else
      list[i] = { pid = id }
    end
  end
  if #list == 0 then option_error("no pid given", level) end
  return list
end

local function check_options(opts, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then option_error(("options must be a table, not %s"):format(type(opts)), level) end
  nearest.check_keys(opts, OPTION_KEYS, "perf.profile: unknown option", level)
  for _, k in ipairs { "native", "mode", "counters" } do
    if opts[k] ~= nil and not (k == "mode" and opts[k] == "cpu") then
      option_error(("%s is not supported for a running process yet (event, freq, period, duration "
        .. "and command are)"):format(k), level)
    end
  end
  if opts.duration ~= nil and (type(opts.duration) ~= "number" or opts.duration <= 0) then
    option_error("duration must be a number of seconds, more than 0", level)
  end
  if opts.command ~= nil and (type(opts.command) ~= "table" or type(opts.command[1]) ~= "string") then
    option_error("command must be an argv list ({ \"sleep\", \"1\" })", level)
  end
  if opts.duration and opts.command then option_error("give duration or command, not both", level) end
  return opts
end

-- ---- naming frames from the target's sources ----

-- A Lua function's name from the line that defines it.
local function name_from_line(line)
  if not line then return nil end
  return line:match("^%s*local%s+function%s+([%w_]+)")
    or line:match("^%s*function%s+([%w_%.:]+)%s*%(")
    or line:match("([%w_%.]+)%s*=%s*function%s*%(")
    or line:match("^%s*local%s+([%w_]+)%s*=%s*function")
end

local function source_lines(pid, src, cache)
  if cache[src] ~= nil then return cache[src] end
  local lines = false
  -- a chunk loaded from a string named by its file, as lighttpd's mod_magnet names them
  local path = src:match('^%[string "(/[^"]*)"%]$') or src
  if not path:match("^%[") and not path:match("^%.%.%.") then
    local tries = path:sub(1, 1) == "/" and { ("/proc/%d/root%s"):format(pid, path), path }
      or { ("/proc/%d/cwd/%s"):format(pid, path) }
    for _, try in ipairs(tries) do
      local f = io.open(try, "r")
      if f then
        lines = {}
        for l in f:lines() do lines[#lines + 1] = l end
        f:close()
        break
      end
    end
  end
  cache[src] = lines
  return lines
end

-- The tracer's keys with names: Lua functions from their sources, C
-- functions from the target's symbols.
local function named(stacks, pid, locate, into)
  local src_cache, c_names = {}, {}
  for key, count in pairs(stacks) do
    local out = {}
    for token in key:gmatch("[^\n]+") do
      if token:sub(1, 2) == "C@" then
        local addr = math.tointeger(tonumber(token:sub(3), 16)) or 0
        local n = c_names[addr]
        if not n then
          local w = addr ~= 0 and locate and locate(addr)
          n = w and w.symbol or "?"
          c_names[addr] = n
        end
        out[#out + 1] = "C" .. n
      elseif token:sub(1, 2) == "L\t" then
        local src, defined, rest = token:match("^L\t(.-)\t(%-?%d+)(\t.*)$")
        local lines = src and source_lines(pid, src, src_cache)
        local name = lines and name_from_line(lines[tonumber(defined)]) or ""
        out[#out + 1] = "L" .. name .. "\t" .. (src or "?") .. "\t" .. (defined or "0") .. (rest or "\t0")
      else
        out[#out + 1] = token
      end
    end
    local k = table.concat(out, "\n") .. "\n"
    into[k] = (into[k] or 0) + count
  end
end

-- ---- the profiler of a running process ----

local Attached = { __name = "perf.profiler" }
Attached.__index = Attached

-- Starts the tracers: one per process (each traces its threads).
local function start_tracers(self)
  local running = {}
  for i, t in ipairs(self.targets) do
    local info = self.infos[i]
    local a, what, errno = core.attach_start { pid = t.pid, tid = t.tid, attr = self.attr,
      release = info.release }
    if not a then
      for _, r in ipairs(running) do r.handle:close() end
      return nil, "perf.profile: " .. target_info.why(info, what, errno), errno
    end
    running[#running + 1] = { handle = a, info = info }
  end
  self.running = running
  return true
end

-- Stops the tracers and adds what they collected.
local function stop_tracers(self)
  local running = self.running or {}
  self.running = nil
  local err
  for _, r in ipairs(running) do
    local res, msg, errno = r.handle:stop()
    r.handle:close()
    if not res then
      err = err or { msg, errno }
    else
      local acc = self.acc
      for _, k in ipairs { "samples", "outside", "signals", "stop_ns", "reads" } do
        acc[k] = acc[k] + res[k]
      end
      acc.threads = acc.threads + res.threads
      acc.open_failed = (acc.open_failed or 0) + res.open_failed
      acc.stop_max_ns = math.max(acc.stop_max_ns, res.stop_max_ns)
      acc.execed = acc.execed or res.execed ~= 0
      named(res.stacks, r.info.pid, r.info.locate, self.stacks)
    end
  end
  if err then return nil, err[1], err[2] end
  return true
end

--- attach.profiler(perf, target, opts) -> a stopped profiler of target
function M.profiler(target, opts, level)
  level = level or 3
  opts = check_options(opts, level + 1)
  local targets = targets_of(target, level + 1)
  local attr, name, freq, period = profile.sampling_attr(opts, level + 1)
  if not attr then return nil, name, freq end
  -- as perf record does for a user the kernel keeps out: user space only
  local user_only = not target_info.may_see_kernel()
  if user_only then attr.exclude_kernel, attr.exclude_hv = true, true end
  local infos = {}
  for i, t in ipairs(targets) do
    local info, msg, errno = target_info.inspect(t.pid, t.tid)
    if not info then return nil, "perf.profile: " .. msg, errno end
    info.locate = elf.locator(t.pid)
    infos[i] = info
  end
  return setmetatable({ targets = targets, infos = infos, attr = attr, name = name,
    freq = freq, period = period, stacks = {}, open = true, user_only = user_only,
    acc = { samples = 0, outside = 0, signals = 0, stop_ns = 0, reads = 0, threads = 0,
            stop_max_ns = 0 } }, Attached)
end

local function check_open(p)
  if not p.open then error("attempt to use a closed perf profiler", 3) end
end

function Attached:start()
  check_open(self)
  if self.running then error("perf.profiler: already started", 2) end
  return start_tracers(self)
end

-- The note a profile of a running process carries.
local function note_of(self)
  local parts = {}
  for _, info in ipairs(self.infos) do
    parts[#parts + 1] = ("pid %d (%s), Lua %s by %s in %s"):format(info.pid, info.comm,
      info.release, info.how, info.file)
  end
  local a = self.acc
  local s = "attached to " .. table.concat(parts, "; ") .. " (layouts of the 5.4.x releases; no DWARF read)"
  if a.samples > 0 then
    s = s .. ("; stopped %.1f us per sample on average (max %.1f us)"):format(a.stop_ns / a.samples / 1000,
      a.stop_max_ns / 1000)
  end
  if a.outside > 0 then s = s .. ("; %d samples outside Lua code not charged"):format(a.outside) end
  if a.execed then s = s .. "; the target exec'd: sampling ended there" end
  if (a.open_failed or 0) > 0 then
    s = s .. ("; the event could not be opened on %d threads (not sampled)"):format(a.open_failed)
  end
  if self.user_only then
    s = s .. "; user space only (exclude_kernel: perf_event_paranoid 2 without CAP_PERFMON)"
  end
  return s
end

function Attached:profile()
  check_open(self)
  local copy = {}
  for k, v in pairs(self.stacks) do copy[k] = v end
  local a = self.acc
  local prof = profile.new(copy, { samples = a.samples - a.outside, lost = 0,
    event = self.name, freq = self.freq, period = self.period, native = false, note = note_of(self) })
  prof.attached = { pids = {}, threads = a.threads, outside = a.outside, signals = a.signals,
    stop_ns_mean = a.samples > 0 and a.stop_ns // a.samples or 0, stop_ns_max = a.stop_max_ns }
  for i, info in ipairs(self.infos) do prof.attached.pids[i] = info.pid end
  return prof
end

function Attached:stop()
  check_open(self)
  local ok, msg, errno = stop_tracers(self)
  if not ok then return nil, msg, errno end
  return self:profile()
end

-- Whether every tracer is done: its target gone.
function Attached:finished()
  for _, r in ipairs(self.running or {}) do
    if not r.handle:finished() then return false end
  end
  return true
end

function Attached:close()
  if self.running then
    for _, r in ipairs(self.running) do r.handle:close() end
    self.running = nil
  end
  self.open = false
  return true
end
Attached.__close = Attached.close
Attached.__gc = Attached.close

function Attached:__tostring()
  local pids = {}
  for _, t in ipairs(self.targets) do pids[#pids + 1] = tostring(t.tid or t.pid) end
  return ("perf.profiler %q (%s %s, %s)"):format(self.name, self.targets[1].tid and "tid" or "pid",
    table.concat(pids, ","), not self.open and "closed" or self.running and "running" or "stopped")
end

-- Waits for opts.duration seconds (or until the targets are gone), or
-- while opts.command runs; a SIGINT or SIGTERM ends the wait early (the
-- waiter has blocked them since before the tracers started). Returns the
-- signal that ended it, if one did.
local function wait(p, opts, waiter)
  if opts.command then
    local child, msg, errno = core.spawn(opts.command)
    if not child then return nil, "perf.profile: " .. msg, errno end
    local ok
    ok, msg, errno = child:start()
    if not ok then child:close() return nil, "perf.profile: " .. msg, errno end
    local res
    res, msg, errno = child:wait()
    if not res then return nil, "perf.profile: " .. msg, errno end
    return true, nil, res
  end
  local deadline = core.profile_now() + math.floor(opts.duration * 1e9)
  while not p:finished() do
    local left = (deadline - core.profile_now()) // 1000000
    if left <= 0 then break end
    local what, signo = waiter:wait({}, math.min(left, 100))
    if what == "signal" then return true, signo end
  end
  return true
end

--- attach.profile(perf, target, opts) -> prof | nil, msg, errno
function M.profile(target, opts)
  if opts == nil or (type(opts) == "table" and opts.duration == nil and opts.command == nil) then
    option_error("profiling a running process needs opts.duration (seconds) or opts.command (an argv list)", 3)
  end
  local p, msg, errno = M.profiler(target, opts, 3)
  if not p then return nil, msg, errno end
  local p_ <close> = p
  -- SIGINT and SIGTERM are taken from here on (a waiter on this process,
  -- which never sees itself exit): they end the wait, not the profiler
  local waiter
  if not opts.command then
    waiter, msg, errno = core.waiter(target_info.my_pid())
    if not waiter then return nil, msg, errno end
  end
  local waiter_ <close> = waiter
  local ok
  ok, msg, errno = p:start()
  if not ok then return nil, msg, errno end
  local signo, status
  ok, signo, status = wait(p, opts, waiter)
  if not ok then
    p:close()
    return nil, signo, status
  end
  local prof
  prof, msg, errno = p:stop()
  if not prof then return nil, msg, errno end
  prof.interrupted = signo
  return prof, status
end

return M
