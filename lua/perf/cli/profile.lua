-- perf-lua profile: which Lua functions and lines cause an event.
--
--   perf-lua profile [-e EVENT] [-F HZ | -c PERIOD] [-n N] [--native] [-o FILE] script.lua [args...]
--   perf-lua profile [--timer | --mode off-cpu|wall|alloc] [--counters EV,EV...] [--diff BASE] ...
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
-- The options are checked before the script runs: -o needs a name whose
-- format is known, in a directory that takes files, and is written whole
-- or not at all (a full disk leaves what was there); --diff needs folded
-- stacks; -F above the kernel's maximum rate samples at the maximum, with
-- perf's warning (and perf.profile samples at 20000 Hz at most). Where
-- perf_event_paranoid refuses sampling the kernel too, the events count
-- user space only (cpu-clock:u, page-faults:u), as perf does.
-- What was measured is reported (and -o written) however the script
-- ends: returning, calling os.exit, raising an error or by ^C (also ^C
-- while os.execute waits for a command). Exits with the script's status
-- (os.exit's code; 1 for an error, printed with its traceback as lua5.4
-- prints it; by SIGINT, 130, for ^C), 1 when the profile cannot be taken
-- or written, 129 for a usage error.
-- -p profiles running processes that run Lua 5.4 (-t one thread) without
-- restarting or changing them, for --duration seconds, while the command
-- after -- runs, or until ^C, which still writes the report and -o file.
local arg = ...
local perf = require "perf"
local cli = require "perf.cli"
local core = require "perf.core"
local fs = require "perf.util.fs"
local profile = require "perf.profiling.profile"
local profile_diff = require "perf.profiling.profile_diff"

-- the wrappers of os.exit and os.execute, the message handler: not the script's
profile.own_code()

local function usage(msg) cli.usage("profile", msg) end

-- The interpreter running perf-lua: the lowest index of its `arg`, as
-- lua.c fills it ("lua5.4").
local function interpreter()
  local argv, first = _G.arg or {}, 0
  while argv[first - 1] ~= nil do first = first - 1 end
  return first < 0 and argv[first] or "lua5.4"
end

-- ---- the command line ----

local MODES = { ["off-cpu"] = true, wall = true, alloc = true, cpu = true }

-- The options and the script: { opts = perf.profile's options, top, out,
-- base (the --diff file), script, args (the script's arguments) }.
local function parse(argv)
  local o = { opts = {}, top = 10 }
  local opts = o.opts
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local function value() local v v, i = cli.value("profile", argv, i) return v end
    local function count() local n n, i = cli.count("profile", argv, i) return n end
    if a == "-e" then opts.event = value()
    elseif a == "-F" then opts.freq = count()
    elseif a == "-c" then opts.period = count()
    elseif a == "-n" then o.top = count()
    elseif a == "--native" then opts.native = true
    elseif a == "--timer" then opts.event = "timer"
    elseif a == "--mode" then opts.mode = value()
    elseif a == "--counters" then
      opts.counters = {}
      for name in value():gmatch("[^,]+") do opts.counters[#opts.counters + 1] = name end
    elseif a == "--diff" then o.base = value()
    elseif a == "-o" then o.out = value()
    elseif a == "-p" or a == "-t" then
      o.attach = o.attach or {}
      o.attach[a == "-p" and "pid" or "tid"] = value()
    elseif a == "--duration" then o.attach = o.attach or {} o.attach.duration = value()
    elseif a == "--" and o.attach then i = i + 1 break
    elseif a == "-h" or a == "--help" then usage()
    elseif a:sub(1, 1) == "-" and a ~= "-" then cli.unknown_option("profile", a)
    else break end
    i = i + 1
  end
  if opts.freq and opts.period then usage("give -F or -c, not both") end
  if opts.event and opts.mode then usage("give -e, --timer or --mode, not two of them") end
  if opts.mode and not MODES[opts.mode] then usage("--mode is off-cpu, wall or alloc, not '" .. opts.mode .. "'") end
  if opts.counters and #opts.counters == 0 then usage("--counters needs event names, separated by commas") end
  if o.attach then                    -- the rest is a command to run, not a script
    o.args = table.move(argv, i, #argv, 1, {})
    return o
  end
  o.script = argv[i]
  if not o.script then usage("no script given") end
  o.args = table.move(argv, i + 1, #argv, 1, {})
  return o
end

-- ---- what is checked before the run ----

local function fail(msg)
  io.stderr:write(msg, "\n")
  os.exit(1)
end

-- -o: a name whose format is known, where a file can be made.
local function check_output(o)
  if not o.out then return end
  local lib = o.base and profile_diff or profile
  if not lib.format_of(o.out) then
    usage(("-o %s: cannot tell the format from the name: use %s"):format(o.out,
      o.base and ".svg or .folded (with --diff)" or ".svg, .pb.gz, .json or .folded"))
  end
  local ok, msg = fs.can_create(o.out)
  if not ok then fail("perf-lua profile: -o " .. msg) end
end

-- The --diff base's text: folded stacks, as -o x.folded writes them.
local function read_base(path)
  local f, msg = io.open(path, "rb")
  if not f then fail("perf-lua profile: --diff: " .. msg) end
  local text
  text, msg = f:read("a")
  f:close()
  if not text then fail(("perf-lua profile: --diff: %s: %s"):format(path, msg)) end
  local ok, why = profile_diff.check_folded(text)
  if not ok then
    fail(("perf-lua profile: --diff %s: %s; give the folded stacks of an earlier run (its -o base.folded)")
      :format(path, why))
  end
  return text
end

-- ---- the run ----

-- The script's arg table, as lua5.4 gives it: arg[0] the script, arg[-1]
-- the interpreter, arg[1..n] its arguments.
local function script_arg(o)
  local args = { [-1] = interpreter(), [0] = o.script }
  for j, v in ipairs(o.args) do args[j] = v end
  return args
end

-- lua.c's ^C: its SIGINT handler makes the running code raise
-- "interrupted!" (at a position when a Lua function called it).
local function is_interrupt(msg)
  return type(msg) == "string" and (msg == "interrupted!" or msg:find(":%d+: interrupted!$") ~= nil)
end

-- lua.c's message handler: a message (a non-string error object through
-- its __tostring, or named by its type) with the traceback of the stack
-- that raised it.
local function traceback(msg)
  if type(msg) ~= "string" and type(msg) ~= "number" then
    local mt = getmetatable(msg)
    if type(mt) == "table" and mt.__tostring then
      local s = tostring(msg)
      if type(s) == "string" then return s end
    end
    msg = ("(error object is a %s value)"):format(type(msg))
  end
  return debug.traceback(tostring(msg), 2)
end

-- The traceback as lua5.4 prints it: the frames under the script (the
-- profiler's, perf-lua's) are lua.c's "[C]: in ?".
local function script_traceback(text)
  local cut
  for at in text:gmatch("()\n\t%[C%]: in function 'xpcall'") do cut = at end
  if cut then text = text:sub(1, cut - 1) .. "\n\t[C]: in ?" end
  return text
end

local SIGINT, SIGQUIT = 2, 3
local finish

-- Runs the script under the profiler p; never returns: finish reports and
-- exits. While it runs, os.exit reports first, and a command that
-- os.execute ran and ^C ended (system(3) ignores SIGINT meanwhile, so
-- only the command gets it) interrupts the script as ^C would.
local function run(o, p, chunk)
  local oslib = package.loaded.os       -- the library table the script sees
  local real = { exit = oslib.exit, execute = oslib.execute }
  -- the wrappers go and the profiler closes however the run ends
  local function release()
    oslib.exit, oslib.execute = real.exit, real.execute
    p:close()
  end
  o.release = release
  local interrupted = false
  local function exit(code, close)
    if code == nil or code == true then code = 0 elseif code == false then code = 1 end
    local ok, prof = pcall(p.stop, p)
    release()                           -- before anything allocates
    if not ok then error(prof, 0) end
    finish(o, prof, { status = code, close = close })
  end
  local function execute(...)
    local ok, how, n = real.execute(...)
    if how == "signal" and (n == SIGINT or n == SIGQUIT) then
      interrupted = true
      error("interrupted!", 2)
    end
    return ok, how, n
  end
  local function handler(m)
    if is_interrupt(m) then interrupted = true end
    return traceback(m)
  end
  local args = script_arg(o)
  local ok, prof, results = pcall(function()
    -- set where a failure (out of memory) still releases them
    oslib.exit, oslib.execute = exit, execute
    _G.arg = args
    return profile.run(p, handler, chunk, table.unpack(args, 1, #args))
  end)
  -- released first: building the outcome below allocates, and may fail
  release()
  if not ok then error(prof, 0) end                  -- the profiler's own failure
  if results[1] then return finish(o, prof, { status = 0 }) end
  if interrupted then
    return finish(o, prof, { signo = SIGINT })
  end
  return finish(o, prof, { status = 1,
    error = ("%s: %s"):format(interpreter(), script_traceback(tostring(results[2]))) })
end

-- ---- the end: the report, the file, the status ----

-- Prints the report, writes -o, and exits as the script ended: with its
-- status, or by the signal that interrupted it.
function finish(o, prof, outcome)
  o.release()
  if outcome.error then io.stderr:write(outcome.error, "\n") end
  io.stdout:write(prof:report(o.top))
  local result = prof
  if o.base_text then
    result = prof:diff(profile_diff.folded(o.base_text, prof.unit))
    io.stdout:write(result:report(o.top))
  end
  local status = outcome.status
  if o.out then
    local done, werr = result:write(o.out)
    if done then
      io.stdout:write(("# written to %s\n"):format(o.out))
    else
      io.stderr:write(werr, "\n")
      status, outcome.signo = 1, nil
    end
  end
  io.stdout:flush()
  io.stderr:flush()
  if outcome.signo then
    core.reraise(outcome.signo)
    status = 128 + outcome.signo
  end
  os.exit(status, outcome.close)
end

local o = parse(arg)
check_output(o)
if o.attach then
  os.exit(require("perf.cli.profile_attach")(o.attach, o.opts, o.args, o.out, o.top, o.base))
end
if o.base then o.base_text = read_base(o.base) end
if o.opts.freq and o.opts.event ~= "timer" then o.opts.freq = cli.max_freq(o.opts.freq) end
local chunk, msg = loadfile(o.script)
if not chunk then fail(msg) end
local ok, p, err = pcall(perf.profiler, o.opts)
if not ok then fail((tostring(p):gsub("^[^%s]-%.lua:%d+: ", ""))) end   -- misuse: a bad event, ...
if not p then fail(err) end                         -- the event cannot be opened
run(o, p, chunk)
