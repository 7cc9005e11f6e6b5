-- perf-lua profile: which Lua functions and lines cause an event.
--
--   perf-lua profile [-e EVENT] [-F HZ | -c PERIOD] [-n N] [--native] [-o FILE] script.lua [args...]
--   perf-lua profile [--timer | --mode off-cpu|wall|alloc] [--counters EV,EV...] [--diff BASE] ...
--   perf-lua profile -p PID[,PID...] | -t TID [-e EVENT] [-F HZ | -c N] [--duration S | -- command...] [-o FILE]
--
-- Runs a Lua script under perf.profile and prints a report like perf
-- report's: the event, the samples, then the top functions and lines.
-- -e names any event perf.open takes (default cpu-clock); -F samples at a
-- frequency, -c every PERIOD events (tracepoints and software events
-- default to every hit); --native joins the C frames under the Lua lines;
-- --timer samples with a POSIX timer on the thread's CPU time instead of
-- a perf event; --mode off-cpu charges the time off the CPU to the line
-- that blocked, wall the time on and off it, alloc the bytes allocated;
-- --counters counts these events alongside and charges them per line;
-- -o writes the profile too: a flame graph (.svg), pprof (.pb.gz),
-- speedscope JSON (.json) or folded stacks (.folded, .txt). --diff BASE
-- compares the run with BASE, the folded stacks of an earlier run (its
-- -o x.folded), and prints which lines grew and shrank; with --diff, -o
-- writes the differential flame graph (.svg) or the difffolded stacks
-- (.folded). The script sees its own arguments in `arg` and `...`, as
-- lua5.4 gives them. -n shows the top N functions and lines (default 10).
-- -p profiles running processes that run Lua 5.4 (-t one thread) without
-- restarting or changing them, for --duration seconds, while the command
-- after -- runs, or until ^C, which still writes the report and -o file.
-- Exits 1 when the script fails, 129 for a usage error.
local arg = ...
local perf = require "perf"

local function usage(msg)
  require("perf.cli").usage("profile", msg)
end

local cli = require "perf.cli"
local opts, out, top, base, attach = {}, nil, 10, nil, nil
local i = 1
while i <= #arg do
  local a = arg[i]
  local function value() local v v, i = cli.value("profile", arg, i) return v end
  local function count() local n n, i = cli.count("profile", arg, i) return n end
  if a == "-e" then opts.event = value()
  elseif a == "-F" then opts.freq = count()
  elseif a == "-c" then opts.period = count()
  elseif a == "-n" then top = count()
  elseif a == "--native" then opts.native = true
  elseif a == "--timer" then opts.event = "timer"
  elseif a == "--mode" then opts.mode = value()
  elseif a == "--counters" then
    opts.counters = {}
    for name in value():gmatch("[^,]+") do opts.counters[#opts.counters + 1] = name end
  elseif a == "--diff" then base = value()
  elseif a == "-o" then out = value()
  elseif a == "-p" or a == "-t" then attach = attach or {} attach[a == "-p" and "pid" or "tid"] = value()
  elseif a == "--duration" then attach = attach or {} attach.duration = value()
  elseif a == "--" and attach then i = i + 1 break
  elseif a == "-h" or a == "--help" then usage()
  elseif a:sub(1, 1) == "-" and a ~= "-" then require("perf.cli").unknown_option("profile", a)
  else break end
  i = i + 1
end
if opts.freq and opts.period then usage("give -F or -c, not both") end
if opts.event and opts.mode then usage("give -e, --timer or --mode, not two of them") end
local MODES = { ["off-cpu"] = true, wall = true, alloc = true, cpu = true }
if opts.mode and not MODES[opts.mode] then usage("--mode is off-cpu, wall or alloc, not '" .. opts.mode .. "'") end
if opts.counters and #opts.counters == 0 then usage("--counters needs event names, separated by commas") end
if attach then
  os.exit(require("perf.cli.profile_attach")(perf, attach, opts, table.move(arg, i, #arg, 1, {}), out, top, base))
end
local base_text
if base then
  local f, msg = io.open(base, "rb")
  if not f then
    io.stderr:write("perf-lua profile: --diff: ", msg, "\n")
    os.exit(1)
  end
  base_text = f:read("a")
  f:close()
end
local script = arg[i]
if not script then usage("no script given") end

local chunk, msg = loadfile(script)
if not chunk then
  io.stderr:write(msg, "\n")
  os.exit(1)
end
-- the script's arg table, as lua5.4 would give it
local args = { [0] = script }
for j = i + 1, #arg do args[#args + 1] = arg[j] end
_G.arg = args

local ok, prof, err = pcall(perf.profile, chunk, opts, table.unpack(args))
if not ok then
  io.stderr:write(tostring(prof), "\n")           -- the script's error
  os.exit(1)
elseif not prof then
  io.stderr:write(err, "\n")                      -- the event cannot be opened
  os.exit(1)
end
io.stdout:write(prof:report(top))
local result = prof
if base_text then
  result = prof:diff(require("perf.profile_diff").folded(base_text, prof.unit))
  io.stdout:write(result:report(top))
end
if out then
  local done, werr = result:write(out)
  if not done then
    io.stderr:write(werr, "\n")
    os.exit(1)
  end
  io.stdout:write(("# written to %s\n"):format(out))
end
