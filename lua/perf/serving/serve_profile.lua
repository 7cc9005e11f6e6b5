-- Layer lua/perf/serving/: the Prometheus exporter and the HTTP server; it requires perf.core
-- and the layers below it (util, event, counting, profiling, recording) only.

-- perf.serve_profile: one profile of the exporter's target for
-- /debug/pprof/profile and e:profile: started, left to run while the
-- server keeps answering, finished into pprof's gzipped bytes.
--
--   local s, msg, status = M.start(exporter, seconds, { event =, freq = })
--   ... seconds later ...
--   local gz = s:finish()
--
-- In-process (the exporter counts this process, or CPUs or cgroups) it is
-- perf.profiler's handle: the samples are of the Lua code this process
-- runs meanwhile. For another process (the exporter's pid) it is the
-- attach of perf.profiler { pid = P }; where this build has none, or it
-- refuses, start returns nil, a message saying why, and 501 or 503.
local core = require "perf.core"
local profile = require "perf.profiling.profile"
local base = require "perf.event.base"
local nearest = require "perf.util.nearest"
local pprof = require "perf.profiling.pprof"

local M = {}

local OPTS = { event = true, freq = true, wait = true }

local Session = {}
Session.__index = Session

local function check(e, secs, opts)
  if math.type(secs) ~= "integer" or secs < 1 or secs > e.max_seconds then
    error(("perf.exporter: seconds must be a whole number from 1 to %d (the cap), got %s")
      :format(e.max_seconds, tostring(secs)), 0)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error(("perf.exporter: profile options must be a table, got %s"):format(type(opts)), 0)
  end
  opts = opts or {}
  nearest.check_keys(opts, OPTS, "perf.exporter: unknown profile option", 0,
    "; options: event, freq, wait")
  if opts.freq ~= nil and (math.type(opts.freq) ~= "integer" or opts.freq < 1) then
    error("perf.exporter: freq must be a whole number of samples per second, at least 1", 0)
  end
  return opts
end

-- The profiler's options: the request's, else the exporter's defaults.
local function profiler_opts(e, opts)
  local d = e.profile_defaults
  return { event = opts.event or d.event, freq = opts.freq or d.freq }
end

-- Another process: perf.profiler { pid = P } where the build has it.
local function attach(e, popts)
  local pid = type(e.pid) == "table" and e.pid[1] or e.pid
  popts.pid = pid
  local ok, p, msg = pcall(profile.profiler, popts)
  if not ok then
    if tostring(p):find("unknown option 'pid'", 1, true) then
      return nil, ("profiling process %d needs the attach-by-pid profiler "
        .. "(perf.profiler { pid = P }), which this build of perf for Lua does not have yet; "
        .. "/metrics works"):format(pid), 501
    end
    return nil, base.strip_position(p), 400
  end
  if not p then
    return nil, ("cannot profile process %d: %s"):format(pid, tostring(msg)), 503
  end
  return p
end

--- start(exporter, seconds, opts) -> session | nil, message, status
function M.start(e, secs, opts)
  opts = check(e, secs, opts)
  local popts = profiler_opts(e, opts)
  local p, msg, status
  if e.pid then
    p, msg, status = attach(e, popts)
    if not p then return nil, msg, status end
  else
    if core.profile_running() then
      return nil, "another profiler is running in this process: profiles do not nest", 503
    end
    local ok
    ok, p, msg = pcall(profile.profiler, popts)
    if not ok then return nil, base.strip_position(p), 400 end
    if not p then return nil, "cannot profile: " .. tostring(msg), 503 end
  end
  local started, smsg = p:start()
  if started == nil and smsg then
    p:close()
    return nil, "cannot start the profiler: " .. tostring(smsg), 503
  end
  return setmetatable({ profiler = p }, Session)
end

--- s:finish() -> the gzipped pprof bytes | nil, message, 500
function Session:finish()
  local p = self.profiler
  self.profiler = nil
  if not p then return nil, "the profile was already finished", 500 end
  local ok, prof, msg = pcall(p.stop, p)
  p:close()
  if not ok or not prof then return nil, "the profiler failed: " .. tostring(ok and msg or prof), 500 end
  return pprof.file(prof)
end

--- s:cancel(): stops and drops it (a client that went away)
function Session:cancel()
  local p = self.profiler
  self.profiler = nil
  if p then
    pcall(p.stop, p)
    p:close()
  end
end

-- A plain sleep of `secs` seconds: LuaSocket's where it is loaded, else sleep(1).
function M.sleep(secs)
  -- optional, so required here: LuaSocket may be missing
  local ok, socket = pcall(require, "socket")
  if ok then
    socket.sleep(secs)
  else
    os.execute(("sleep %d"):format(secs))
  end
end

return M
