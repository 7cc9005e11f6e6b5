-- perf-lua profile: which Lua functions and lines cause an event.
--
--   perf-lua profile [-e EVENT] [-F HZ | -c PERIOD] [-n N] [--native] [-o FILE] script.lua [args...]
--
-- Runs a Lua script under perf.profile and prints a report like perf
-- report's: the event, the samples, then the top functions and lines.
-- -e names any event perf.open takes (default cpu-clock); -F samples at a
-- frequency, -c every PERIOD events (tracepoints and software events
-- default to every hit); --native joins the C frames under the Lua lines;
-- -o writes the profile too: a flame graph (.svg), speedscope JSON (.json)
-- or folded stacks (.folded, .txt). The script sees its own arguments in
-- `arg` and `...`, as lua5.4 gives them. -n shows the top N functions and
-- lines (default 10). Exits 1 when the script fails, 129 for a usage error.
local arg = ...
local perf = require "perf"

local function usage(msg)
  require("perf.cli").usage("profile", msg)
end

local cli = require "perf.cli"
local opts, out, top = {}, nil, 10
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
  elseif a == "-o" then out = value()
  elseif a == "-h" or a == "--help" then usage()
  elseif a:sub(1, 1) == "-" and a ~= "-" then usage("unknown option " .. a)
  else break end
  i = i + 1
end
if opts.freq and opts.period then usage("give -F or -c, not both") end
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
if out then
  local done, werr = prof:write(out)
  if not done then
    io.stderr:write(werr, "\n")
    os.exit(1)
  end
  io.stdout:write(("# written to %s\n"):format(out))
end
