-- perf-lua serve: counters for Prometheus and profiles for pprof, over HTTP.
--
--   perf-lua serve [--listen ADDR:PORT] [-e EVENTS]... [-a | -C CPUS | -p PID | -G CGROUP] [--max-seconds N] [--timeout S]
--
--   --listen ADDR:PORT   where to listen (default 127.0.0.1:9464, loopback
--                        only; any other address is reachable from the
--                        network, and the start line says so; port 0 picks
--                        a free port)
--   -e, --event EVENTS   events, comma-separated, in perf's syntax; default
--                        perf stat's: task-clock,context-switches,
--                        cpu-migrations,page-faults
--   -a, --all-cpus       count everything on every CPU, a cpu label each
--                        (the default)
--   -C, --cpu CPUS       count everything on these CPUs ("0-3,5")
--   -p, --pid PID        count process PID (all its threads, and what they
--                        start), a pid label; PID,PID for several; its
--                        profile is the attach of perf-lua profile -p
--   -G, --cgroup NAMES   count these cgroups (names or directories,
--                        comma-separated) on every CPU, a cgroup label each
--       --max-seconds N  the longest profile a client may ask for (60)
--       --timeout S      seconds a client has to send its request and read
--                        the response (10)
--
-- GET /metrics answers in Prometheus's text format (0.0.4): one counter
-- perf_EVENT_total per event (scaled for multiplexing),
-- perf_enabled_seconds_total, perf_running_seconds_total, and the gauge
-- perf_target_up (0 once the process exited or the cgroup is gone).
-- GET /debug/pprof/profile?seconds=N[&event=E][&frequency=HZ] answers a
-- gzipped pprof profile of N seconds, as Go's net/http/pprof does:
-- `go tool pprof http://127.0.0.1:9464/debug/pprof/profile?seconds=5`.
-- Without -p it profiles the server's own Lua code.
-- Logs one line per start, refusal and error to standard error; ^C or
-- SIGTERM stops it (exit 0). Needs LuaSocket (Debian: lua-socket). Exits 1
-- when it cannot start, 129 for a usage error.
local arg = ...
local cli = require "perf.cli"

local function usage(msg)
  cli.usage("serve", msg)
end

local LONG = { ["--event"] = "-e", ["--all-cpus"] = "-a", ["--cpu"] = "-C", ["--pid"] = "-p",
  ["--cgroup"] = "-G", ["--help"] = "-h" }

local opts, events, targets = { name = "perf-lua serve" }, {}, 0
local i = 1
while i <= #arg do
  local a = arg[i]
  local long, joined = a:match("^(%-%-[%w-]+)=(.*)$")   -- --listen=ADDR
  if long then a = long end
  a = LONG[a] or a
  local function value()
    if joined then return joined end
    local v
    v, i = cli.value("serve", arg, i)
    return v
  end
  if a == "-h" then
    usage()
  elseif a == "--listen" then
    opts.listen = value()
    local ok, why = require("perf.serving.serve").listen_address(opts.listen)
    if not ok then usage("--listen: " .. why) end
  elseif a == "-e" then
    for _, e in ipairs(require("perf.counting.stat").split(value())) do events[#events + 1] = e end
  elseif a == "-a" then
    opts.all_cpus, targets = true, targets + 1
  elseif a == "-C" then
    opts.cpus, targets = value(), targets + 1
  elseif a == "-p" then
    local pids = {}
    for id in (value() .. ","):gmatch("([^,]*),") do
      pids[#pids + 1] = math.tointeger(tonumber(id))
      if not pids[#pids] or pids[#pids] < 1 then usage("-p needs a process id, or a list: 12,34") end
    end
    opts.pid, targets = #pids == 1 and pids[1] or pids, targets + 1
  elseif a == "-G" then
    local names = {}
    for name in value():gmatch("[^,]+") do names[#names + 1] = name end
    if #names == 0 then usage("-G needs a cgroup name or directory") end
    opts.cgroup, targets = #names == 1 and names[1] or names, targets + 1
  elseif a == "--max-seconds" then
    local n = math.tointeger(tonumber(value()))
    if not n or n < 1 then usage("--max-seconds takes a positive whole number of seconds") end
    opts.max_seconds = n
  elseif a == "--timeout" then
    local n = tonumber(value())
    if not n or n <= 0 then usage("--timeout takes a positive number of seconds") end
    opts.timeout = n
  elseif a:sub(1, 1) == "-" then
    cli.unknown_option("serve", a)
  else
    usage(("serve takes no command ('%s'): it counts until stopped"):format(a))
  end
  i = i + 1
end
if targets > 1 then usage("one target: -a, -C, -p or -G") end
if targets == 0 then opts.all_cpus = true end
if #events > 0 then opts.events = events end

if not pcall(require, "socket") then
  io.stderr:write("perf-lua serve: ", require("perf.serving.serve").NO_SOCKET, "\n")
  return 1
end

local perf = require "perf"
local ok, srv, msg = pcall(perf.server, opts)
if not ok then usage(tostring(srv):gsub("^perf%.serve: ", "")) end
if not srv then
  io.stderr:write("perf-lua serve: ", cli.as_command(tostring(msg):gsub("^perf%.[%w_]+:? ", "")), "\n")
  return 1
end
srv:run()
srv:close()
return 0
