-- perf-lua stat: run a command and print what it cost, as perf stat does.
--
--   perf-lua stat [-e EVENTS]... [-r N] [-x SEP | -j] [-i] [-a] [-C LIST] [-A | --per-core | --per-die | --per-socket | --per-thread] [-I MS] [-o FILE] [--] COMMAND [ARG]...
--
--   -e, --event EVENTS     events, comma-separated, in perf's syntax ("{a,b}" a
--                          group); default: task-clock,context-switches,
--                          cpu-migrations,page-faults
--   -r, --repeat N         run the command N times; print means and their variation
--   -x, --field-separator SEP
--                          print CSV with this separator (and no notes)
--   -j, --json             print a JSON object per line, with perf stat -j's keys
--   -i, --no-inherit       do not count the command's children
--   -a, --all-cpus         count everything on every CPU while the command runs
--   -C, --cpu LIST         count everything on these CPUs ("0-3,5") while it runs
--   -p, --pid PID          count process PID (all its threads) while COMMAND runs
--                          (e.g. -- sleep 2), instead of counting COMMAND;
--                          several: PID,PID
--   -t, --tid TID          count thread TID (or TID,TID) while COMMAND runs
--   -G, --cgroup NAMES     count the events given before it in these cgroups
--                          (names or directories, comma-separated: the n-th
--                          name of all the -G options for the n-th event, as
--                          perf pairs them; one name: every event before it)
--                          on every CPU (or -C's) while COMMAND runs, with or
--                          without -a; -A etc. as with -a
--   -A, --no-aggr          with -a or -C: the counts of each CPU
--       --per-core         with -a or -C: the counts of each core ("S0-D0-C1")
--       --per-die          with -a or -C: the counts of each die ("S0-D0")
--       --per-socket       with -a or -C: the counts of each socket ("S0")
--       --per-thread       the counts of each thread of the command ("ls-1234"),
--                          or with -p of each thread of the process
--   -I, --interval-print MS
--                          print the counts of every MS milliseconds while it
--                          runs, instead of the totals at the end
--   -o, --output FILE      print to FILE instead of standard error
--
-- Exits with the command's exit status (128 + the signal's number if a
-- signal ended it; 127 or 126 if it could not run; 129 for a usage error,
-- a cgroup that does not exist included; as perf stat, 255 if the -o file
-- cannot be created or the -t thread does not exist, 234 if the -p
-- process does not exist).
local arg = ...
local perf = require "perf"
local F = require "perf.counting.stat_format"
local split = require("perf.counting.stat").split

local ESRCH = require("perf.core").errno.ESRCH
local cli = require "perf.cli"

local function usage(msg)
  cli.usage("stat", msg)
end

-- perf stat's long option names
local LONG = { ["--event"] = "-e", ["--repeat"] = "-r", ["--field-separator"] = "-x",
  ["--no-inherit"] = "-i", ["--all-cpus"] = "-a", ["--cpu"] = "-C",
  ["--interval-print"] = "-I", ["--output"] = "-o", ["--help"] = "-h", ["--json"] = "-j",
  ["--no-aggr"] = "-A", ["--pid"] = "-p", ["--tid"] = "-t", ["--cgroup"] = "-G" }

-- perf stat's aggregation options: opts.aggregate
local AGGREGATE = { ["-A"] = "cpu", ["--per-core"] = "core", ["--per-die"] = "die",
  ["--per-socket"] = "socket" }

local events, runs, sep, inherit, outfile, all_cpus, cpus = {}, 1, nil, true, nil, false, nil
local interval, json, aggregate, per_thread, target
local in_order = {}                                  -- -e and -G in order, for -G's pairing
local argv = cli.each_option("stat", arg, { long = LONG, equals = true, joined = "^(%-[erxoCIptG])(.+)$",
  short_names = true }, function(opt, value)
  if opt == "-e" then
    in_order[#in_order + 1] = { e = value() }
    for _, e in ipairs(split(in_order[#in_order].e)) do events[#events + 1] = e end
  elseif opt == "-r" then
    runs = math.tointeger(tonumber(value()))
    if not runs or runs < 1 then usage("-r needs a positive count") end
  elseif opt == "-x" then
    sep = value()
  elseif opt == "-j" then
    json = true
  elseif AGGREGATE[opt] then
    aggregate = AGGREGATE[opt]
  elseif opt == "--per-thread" then
    per_thread = true
  elseif opt == "-p" or opt == "-t" then             -- an id, or a list: 12,34
    local ids = {}
    for id in (value() .. ","):gmatch("([^,]*),") do
      ids[#ids + 1] = math.tointeger(tonumber(id))
      if not ids[#ids] or ids[#ids] < 1 then usage(opt .. " needs a process or thread id, or a list: 12,34") end
    end
    target = { [opt == "-p" and "pid" or "tid"] = #ids == 1 and ids[1] or ids }
  elseif opt == "-G" then
    in_order[#in_order + 1] = { G = value() }
    target = { cgroup = true }
  elseif opt == "-i" then
    inherit = false
  elseif opt == "-a" then
    all_cpus = true
  elseif opt == "-C" then
    cpus = value()
  elseif opt == "-I" then
    interval = math.tointeger(tonumber(value()))
    if not interval or interval < 1 then usage("-I needs a positive number of milliseconds") end
  elseif opt == "-o" then
    outfile = value()
  else
    return false
  end
  return true
end)
if #argv == 0 then
  usage(target and "give a command to count for, such as -- sleep 2" or "no command given")
end
if target and target.cgroup then                  -- on every CPU (-a), or those of -C
  if per_thread then usage("-G counts cgroups on the CPUs: not with --per-thread") end
  local cgroups
  events, cgroups = require("perf.cli.stat_cgroups")(in_order)
  if not events then usage(cgroups) end
  local dirs = require "perf.event.cgroup"
  for _, name in ipairs(cgroups) do
    if name and not require("perf.util.fs").isdir(dirs.dir(name)) then
      usage("no access to cgroup " .. dirs.dir(name))
    end
  end
  target, all_cpus = { cgroup = cgroups }, nil
elseif target and (all_cpus or cpus) then
  usage("-p and -t count a process or thread: not with -a or -C")
end
if json and sep then usage("-j and -x do not go together") end
if per_thread and (all_cpus or cpus or aggregate or interval) then
  usage("--per-thread counts the command's threads: not with -a, -C, -A, --per-core, ... or -I")
end
if aggregate and not (all_cpus or cpus or (target and target.cgroup)) then
  usage(("%s counts per CPU: use it with -a or -C"):format(aggregate == "cpu" and "-A" or "--per-" .. aggregate))
end
if #events == 0 then events = { "task-clock", "context-switches", "cpu-migrations", "page-faults" } end

local out = io.stderr
if outfile then                                      -- before the command runs, as perf stat
  local f, msg = io.open(outfile, "w")
  if not f then
    io.stderr:write(("perf-lua stat: cannot create the output file %s\n"):format(msg))
    os.exit(255)
  end
  out = f
end

-- with -I, each interval is printed as it ends
local on_interval, since
if interval then
  if not sep and not json then out:write(F.interval_header(aggregate)) end
  on_interval = function(r)
    out:write(F.interval(r, since, json and "json" or sep, interval))
    out:flush()
    since = r.time
  end
end

local results = {}
for run = 1, runs do
  since = 0
  local ok, r, msg, errno = pcall(perf.stat, target or argv, events, { inherit = inherit,
    all_cpus = all_cpus, cpus = cpus, interval = interval, on_interval = on_interval,
    aggregate = aggregate, per_thread = per_thread, command = target and argv or nil })
  if not ok then usage(r) end                      -- a malformed event, ...
  if not r then
    local gone = target and not target.cgroup and errno == ESRCH
    if gone and target.pid then                     -- perf stat -p's words
      msg = "perf-lua stat: Problems finding threads of monitor: " .. msg:gsub("^perf%.stat: ", "")
    end
    io.stderr:write(msg, "\n")
    local cannot_run = msg:find('^perf%.stat: cannot run "') ~= nil
    os.exit(gone and (target.pid and 234 or 255)
      or cannot_run and (errno == require("perf.core").errno.ENOENT and 127 or 126) or 1)
  end
  for _, note in ipairs(r.notes or {}) do           -- CSV output is only the rows
    if run == 1 and not sep and not json then io.stderr:write("note: ", note, "\n") end
  end
  results[run] = r
end

if not interval then                                 -- perf stat -I prints no totals
  local summary = F.summary(results)
  local what = target and not target.cgroup and { title = require("perf.counting.processes").describe(target) }
    or cpus and "CPU(s) " .. cpus or (all_cpus or target) and "system wide" or argv
  out:write(json and F.json(summary) or sep and F.csv(summary, sep) or F.text(summary, what))
end
if outfile then out:close() end

local last = results[#results]
if last.signo then os.exit(128 + last.signo) end
os.exit(last.status or 0)                              -- a target: no status
