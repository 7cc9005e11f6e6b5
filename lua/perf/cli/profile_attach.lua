-- perf-lua profile -p PID[,PID...] | -t TID [--duration S | -- command...]:
-- the profile of running processes (perf.profile with a target table).
-- Returns the exit code: 0, 1 when the profile cannot be taken, 129 for a
-- usage error.
local perf = require "perf"
local cli = require "perf.cli"

local function usage(msg) cli.usage("profile", msg) end

return function(attach, opts, rest, out, top, base)
  if attach.pid and attach.tid then usage("give -p or -t, not both") end
  if not (attach.pid or attach.tid) then usage("--duration goes with -p or -t") end
  if base then usage("--diff does not go with -p or -t") end
  if opts.mode or opts.counters or opts.native then
    usage("--mode, --counters, --native and --timer do not go with -p or -t yet")
  end
  local ids = {}
  for id in (attach.pid or attach.tid):gmatch("[^,]+") do
    local n = math.tointeger(tonumber(id))
    if not n or n < 1 then usage(("%s takes process ids, not '%s'"):format(attach.pid and "-p" or "-t", id)) end
    ids[#ids + 1] = n
  end
  if attach.tid and #ids > 1 then usage("-t takes one thread id") end
  local target = attach.pid and { pid = ids } or { tid = ids[1] }
  if attach.duration then
    local d = tonumber(attach.duration)
    if not d or d <= 0 then usage(("--duration takes seconds, not '%s'"):format(attach.duration)) end
    opts.duration = d
  end
  if #rest > 0 then
    if opts.duration then usage("give --duration or a command, not both") end
    opts.command = rest
  elseif not opts.duration then
    opts.duration = math.huge                 -- until ^C, as perf record -p
  end
  local prof, msg = perf.profile(target, opts)
  if not prof then
    io.stderr:write(msg, "\n")
    return 1
  end
  if prof.interrupted then io.stderr:write("perf-lua profile: stopped by a signal; the profile so far:\n") end
  io.stdout:write(prof:report(top))
  if out then
    local done, werr = prof:write(out)
    if not done then
      io.stderr:write(werr, "\n")
      return 1
    end
    io.stdout:write(("# written to %s\n"):format(out))
  end
  return 0
end
