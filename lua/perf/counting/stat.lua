-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

--- Documented on the perf page.
-- @submodule perf

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
-- counted as a group. A tracepoint pattern ("syscalls:sys_enter_open*",
-- "sched:sched_process_*") stands for every tracepoint it matches, each
-- counted and named on its own, as perf stat -e expands it (perf.glob).
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
--
-- opts.all_cpus counts everything on every online CPU while the command
-- runs, as perf stat -a; opts.cpus (a list, or "0-3,5") on those CPUs, as
-- perf stat -C. The counts are then summed over the CPUs, and
-- events[i].cpus[c] is the count on CPU c. With them, opts.aggregate =
-- "core", "die", "socket" or "cpu" also gives the counts per core (die,
-- socket, CPU) as perf stat --per-core (--per-die, --per-socket, -A) prints
-- them: r.per (r.per.kind = "core") lists the places in perf's order, each
-- { key = "S0-D0-C1" (perf's name), nr = (its CPUs counted), cpus = {...},
-- socket =, die =, core = (or cpu =), events = (as r.events, summed over
-- its CPUs then scaled), [i] and [name] = its counts }; the topology is
-- sysfs's (perf.topology).
--
-- opts.per_thread = true also gives the counts of each thread (each task)
-- of the command, as perf stat --per-thread prints them for a process:
-- r.per (r.per.kind = "thread") lists the command's first task, then the
-- others by tid, each { key = "ls-1234", comm =, tid =, pid =, events =,
-- [i] =, [name] = }; the rows add up to the totals (perf.threads). The
-- command is then counted on each CPU, its counts unscaled, and the events
-- of a {group} each on its own.
--
-- perf.stat(target, events, opts) counts a running process instead:
-- target { pid = P } (its threads, and what they start), { tid = T } or
-- { cgroup = G } (on every CPU, or those of opts.cpus), as perf stat -p,
-- -t and -G, for opts.duration seconds or while opts.command (an argv
-- list) runs; results as for a command, without status (perf.processes).
-- { cgroup = { G1, false, G3 } } counts event i in cgroup Gi, and
-- everything on the CPUs where false or past the list's end (perf stat
-- -G G1,,G3); each event's details name its cgroup (events[i].cgroup).
--
-- With opts.per_thread, a process (or thread) target's counts are also
-- given per thread: r.per (kind "thread", by_event = true) lists its
-- threads as they were when counting began, each { key = "comm-tid",
-- comm, tid, events, [i], [name] }; a task a thread starts is counted in
-- its row (inherit), as perf stat -p --per-thread counts it.
--
-- opts.interval (ms) with opts.on_interval(r) calls on_interval while the
-- command runs, every interval, with the counts of that interval, as perf
-- stat -I prints them: r[i], r[name] and r.events as in the results,
-- r.interval (1, 2, ...) and r.time (ns since the exec); the last call is
-- for the part of an interval before the command ended.
local core = require "perf.core"
local glob = require "perf.event.glob"
local group = require "perf.counting.group"
local processes = require "perf.counting.processes"
local threads = require "perf.counting.threads"
local topology = require "perf.counting.topology"
local measure = require "perf.counting.measure"
local tool = require "perf.counting.stat_tool"
local base = require "perf.event.base"
local capabilities = require "perf.event.capabilities"
local percpu = require "perf.counting.cpus"
local nearest = require "perf.util.nearest"

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

local OPTS = { stdin = true, stdout = true, stderr = true, inherit = true,
  all_cpus = true, cpus = true, interval = true, on_interval = true, aggregate = true,
  per_thread = true, duration = true, command = true }

-- the longest interval: about 24 days, so interval counts stay exact in ns
local MAX_INTERVAL = 0x7fffffff

-- A target table ({ pid = P }, ...) and its options: the target and the
-- command to run while counting (opts.command, or a sleep of
-- opts.duration seconds).
local function check_target(t, opts)
  processes.check(t)
  opts = opts or {}
  local cmd, dur = opts.command, opts.duration
  if (cmd == nil) == (dur == nil) then
    error("perf.stat: counting a process, thread or cgroup needs one of opts.duration "
      .. "(seconds) and opts.command (a command to run meanwhile, as perf stat -p P -- sleep 2)", 0)
  end
  if dur ~= nil and (type(dur) ~= "number" or not (dur > 0 and dur <= 1e6)) then
    error("perf.stat: duration must be a number of seconds, more than 0", 0)
  end
  if cmd ~= nil and type(cmd) ~= "table" then
    error(("perf.stat: command must be a list (argv), got %s"):format(type(cmd)), 0)
  end
  for _, k in ipairs(t.cgroup and { "per_thread" } or { "all_cpus", "cpus" }) do
    if opts[k] ~= nil and opts[k] ~= false then
      error(("perf.stat: %s does not go with a target table (count a cgroup for every CPU)"):format(k), 0)
    end
  end
  if opts.aggregate ~= nil and not t.cgroup then
    error("perf.stat: aggregate counts per CPU: it goes with a cgroup, not a process or thread", 0)
  end
  return cmd or { "sleep", ("%.9g"):format(dur) }
end

local function check_args(argv, events, opts)
  local target
  if processes.is_target(argv) then
    target = argv
    argv = check_target(argv, opts)
  elseif opts ~= nil and type(opts) == "table" and (opts.duration ~= nil or opts.command ~= nil) then
    error("perf.stat: duration and command go with a target table ({ pid = P }, { tid = T }, "
      .. "{ cgroup = G }), not with a command", 0)
  end
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
    nearest.check_keys(opts, OPTS, "perf.stat: unknown option", 0,
      "; options: stdin, stdout, stderr, inherit, all_cpus, cpus, interval, on_interval, "
      .. "aggregate, per_thread, duration, command")
  end
  if opts ~= nil and (opts.interval ~= nil or opts.on_interval ~= nil) then
    if math.type(opts.interval) ~= "integer" or opts.interval < 1 or opts.interval > MAX_INTERVAL then
      error(("perf.stat: interval must be a whole number of milliseconds, 1 to %d"):format(MAX_INTERVAL), 0)
    end
    if type(opts.on_interval) ~= "function" then
      error("perf.stat: interval needs on_interval, a function to call with each interval's counts", 0)
    end
  end
  if opts ~= nil and opts.aggregate ~= nil then
    if not topology.is_kind(opts.aggregate) then
      error(("perf.stat: aggregate must be one of %s, got %s"):format(
        table.concat(topology.kinds, ", "), tostring(opts.aggregate)), 0)
    end
    if not opts.all_cpus and opts.cpus == nil and not (target and target.cgroup) then
      error(("perf.stat: aggregate = %q counts per %s: it needs all_cpus or cpus, "
        .. "as perf stat --per-%s needs -a"):format(opts.aggregate, opts.aggregate,
        opts.aggregate), 0)
    end
  end
  if opts ~= nil and opts.per_thread ~= nil and opts.per_thread ~= false then
    if opts.per_thread ~= true then
      error(("perf.stat: per_thread must be true or false, got %s"):format(type(opts.per_thread)), 0)
    end
    for _, k in ipairs { "all_cpus", "cpus", "aggregate", "interval" } do
      if opts[k] ~= nil and opts[k] ~= false then
        error(("perf.stat: per_thread counts the command's threads; it does not go with %s"):format(k), 0)
      end
    end
  end
  if type(events) == "string" then events = M.split(events) end
  if type(events) ~= "table" or #events == 0 then
    error("perf.stat: a list of events expected", 0)
  end
  return events, argv, target
end

-- The events with their patterns expanded, one unit each, the index of
-- the event each unit comes from, and with `cgroups` (the cgroup of each
-- event) the cgroup of each unit; or nil, message, errno.
local function expand(events, cgroups)
  local expanded, from, of = {}, {}, {}
  for i, ev in ipairs(events) do                       -- one at a time, to know whose
    local one, msg, errno = glob.specs({ ev })
    if not one then return nil, msg, errno end
    for _, item in ipairs(one) do
      expanded[#expanded + 1] = item
      from[#expanded], of[#expanded] = i, cgroups and cgroups[i]
    end
  end
  return expanded, from, of
end

-- The index of the given event each result entry comes from (a group or
-- a pattern gives several entries), for the tool events' places.
local given_of = setmetatable({}, { __mode = "k" })

-- The events as units to open: each one a list from group.attrs. Counting
-- a task, the leader counts from the exec and all inherit unless
-- opts.inherit is false; counting CPUs, they are enabled just before the
-- exec (enable_on_exec is for tasks). Returns the units, or nil, message,
-- errno.
-- With `cgroups`, each unit is given its event's as list.cgroup.
local function units_of(events, opts, cpu_wide, attach, cgroups)
  local units = {}
  local per_task = opts.per_thread and not attach      -- a command's tasks, tracked
  local expanded, from, of = expand(events, cgroups)
  if not expanded then return nil, "perf.stat " .. from, of end
  for k, item in ipairs(expanded) do
    local specs = is_group_string(item) and item or { item }
    local list, msg, errno = group.resolve(specs, "perf.stat")
    if not list then return nil, msg, errno end
    measure.counting(list)
    for _, e in ipairs(list) do
      e.attr.inherit = not cpu_wide and opts.inherit ~= false
      e.attr.enable_on_exec = nil
    end
    list[1].attr.enable_on_exec = not (cpu_wide or attach) or nil
    list[1].attr.disabled = true
    if per_task then                     -- each on its own: one count per READ record
      for _, e in ipairs(list) do
        e.attr.enable_on_exec, e.attr.disabled = true, true
        units[#units + 1] = { e }
      end
    else
      list.cgroup, list.given = of[k], from[k]
      units[#units + 1] = list
    end
  end
  if per_task then threads.prepare(units) end
  return units
end

-- The CPUs to count on (opts.cpus, a list or "0-3,5"; opts.all_cpus: every
-- online one), or nil to count the command's tasks. Raises on a bad list.
local function cpus_of(opts)
  local list = opts.cpus
  if type(list) == "string" then list = percpu.parse_list(list) end
  if list ~= nil then
    local bad = type(list) ~= "table" or #list == 0
    for _, x in ipairs(bad and {} or list) do bad = bad or math.type(x) ~= "integer" or x < 0 end
    if bad then
      error(("perf.stat: cpus must be a list of CPU numbers or a string such as \"0-3,5\", got %s")
        :format(type(opts.cpus) == "string" and ("%q"):format(opts.cpus) or type(opts.cpus)), 0)
    end
  end
  if list == nil and opts.all_cpus then list = percpu.online() end
  if list == nil then return nil end
  local seen, unique = {}, {}                  -- "0,0" counts CPU 0 once
  for _, c in ipairs(list) do
    if not seen[c] then seen[c], unique[#unique + 1] = true, c end
  end
  return unique
end

-- Errors that mean "this machine cannot count that event" (no such PMU or
-- event, or a configuration the PMU refuses): perf stat prints the event as
-- <not supported> and counts the others, and so does perf.stat.
local NOT_SUPPORTED = { [2] = true, [6] = true, [22] = true, [38] = true, [95] = true }
-- ENOENT, ENXIO, EINVAL, ENOSYS, EOPNOTSUPP

-- opened[u]: the groups of unit u, one per target (the task, or each CPU)
local function close_all(opened, n)
  for u = n, 1, -1 do
    for k = #(opened[u] or {}), 1, -1 do opened[u][k]:close() end
  end
  -- inherited uprobes were made in tracefs: remove them now they are closed
  local uprobe = package.loaded["perf.event.uprobe"]
  if uprobe then uprobe.sweep() end
end

local function each_group(opened, n, method)
  for u = 1, n do
    for _, g in ipairs(opened[u] or {}) do
      local ok, msg, errno = g[method](g)
      if not ok then return nil, msg, errno end
    end
  end
  return true
end

local function note(r, text)
  r.notes = r.notes or {}
  r.notes[#r.notes + 1] = text
end

-- Unit u that could not open: each member false, with why.
local function add_skipped(r, n, u, list, why)
  local msg, errno = why[1], why[2]
  for _, e in ipairs(list) do
    n = n + 1
    r.events[n] = { name = e.name, supported = false, error = msg, errno = errno,
      type = e.attr.type, config = e.attr.config, group = #list > 1 and u or nil, cgroup = list.cgroup }
    given_of[r.events[n]] = list.given
    r[n] = false
    if r[e.name] == nil then r[e.name] = false end
  end
  note(r, ("%s: not supported here, not counted (%s)"):format(
    #list > 1 and "the group of " .. list[1].name or list[1].name, msg))
  return n
end

-- Member i of the groups gs (one per target) summed, as perf stat adds up
-- the CPUs: the counts and times summed, then scaled; less `prev` (the sums
-- of an earlier read, for an interval). cpus[k] names the target of gs[k]
-- (nil for a task). Returns the event's details, the sums to pass as
-- prev, and each CPU's { count, enabled, running } (less prev's).
local function add_up(gs, i, cpus, prev)
  local sum, en_sum, run_sum, per_cpu = 0, 0, 0, cpus and {} or nil
  local reads, raw = {}, {}
  for k, g in ipairs(gs) do
    local v, en, run = g[i]:read()
    if not v then return nil, en, run end
    sum, en_sum, run_sum = sum + v, en_sum + en, run_sum + run
    if cpus then
      local c, p = cpus[k], prev and prev.cpus[cpus[k]] or { 0, 0, 0 }
      reads[c] = { v, en, run }
      raw[c] = { v - p[1], en - p[2], run - p[3] }
      per_cpu[c] = (core.scale(raw[c][1], raw[c][2], raw[c][3]))
    end
  end
  local e = { raw = sum, time_enabled = en_sum, time_running = run_sum, cpus = per_cpu }
  if prev then
    e.raw, e.time_enabled, e.time_running = sum - prev.raw, en_sum - prev.time_enabled,
      run_sum - prev.time_running
  end
  e.value, e.fraction = core.scale(e.raw, e.time_enabled, e.time_running)
  return e, { raw = sum, time_enabled = en_sum, time_running = run_sum, cpus = reads }, raw
end

local DETAILS = { "name", "unit", "scale", "type", "config", "group", "supported", "cgroup" }

-- r.per: the counts of every event per place (core, socket, ... as
-- topology.aggregate gathers the CPUs, or a process's threads), each
-- summed over its CPUs then scaled; raw[n][c] is event n's { count,
-- enabled, running } on CPU c (or thread c).
local function aggregate(r, raw, kind, places)
  r.per = { kind = kind }
  for p, place in ipairs(places) do
    local row = { events = {} }
    for k, v in pairs(place) do row[k] = v end
    if kind == "thread" then row.cpus = nil end
    for n, total in ipairs(r.events) do
      local e = {}
      for _, k in ipairs(DETAILS) do e[k] = total[k] end
      if total.supported then
        local v, en, run = 0, 0, 0
        for _, c in ipairs(place.cpus) do
          local t = raw[n][c]
          v, en, run = v + t[1], en + t[2], run + t[3]
        end
        e.raw, e.time_enabled, e.time_running = v, en, run
        e.value, e.fraction = core.scale(v, en, run)
      else
        e.value, e.error, e.errno = false, total.error, total.errno
      end
      row.events[n], row[n] = e, e.value
      if row[e.name] == nil then row[e.name] = e.value end
    end
    r.per[p] = row
  end
end

-- The results table: the counts of every event now (since prev, the sums
-- an earlier call returned, for an interval), and the sums to pass as prev
-- next time. units[u] that could not open have skipped[u] = { message,
-- errno } instead of groups.
-- With `unscaled` (a task counted on each CPU, for per_thread) the counts
-- are not scaled: the kernel's times then say how long the task ran on
-- each CPU, not how long each counter was multiplexed; time_enabled is
-- then the time the task ran, as time_running.
local function collect(opened, skipped, units, cpus, prev, kind, unscaled, places)
  local r, sums, raw = { events = {}, notes = nil }, {}, {}
  local n = 0
  for u, list in ipairs(units) do
    local gs = opened[u]
    if not gs then
      n = add_skipped(r, n, u, list, skipped[u])
      goto next_unit
    end
    for _, text in ipairs(gs[1]:notes()) do note(r, text) end
    for i = 1, #gs[1] do
      local e, sum, errno = add_up(gs, i, cpus, prev and prev[n + 1])
      if not e then return nil, sum, errno end
      raw[n + 1] = errno
      if unscaled then
        e.value, e.fraction, e.time_enabled = e.raw, 1, e.time_running
        for c in pairs(e.cpus or {}) do e.cpus[c] = errno[c][1] end
      end
      local extra = list[i].extra or {}
      local attr = gs[1][i]:attr()                 -- integer type and config
      e.name, e.unit, e.scale, e.supported = gs[1][i]:name(), extra.unit, extra.scale, true
      e.type, e.config, e.group = attr.type, attr.config, #list > 1 and u or nil
      e.cgroup = list.cgroup
      n = n + 1
      r.events[n], sums[n] = e, sum
      given_of[e] = list.given
      r[n] = e.value
      if r[e.name] == nil then r[e.name] = e.value end
    end
    ::next_unit::
  end
  if places then                         -- a process's threads: cpus named them
    for _, e in ipairs(r.events) do e.cpus = nil end
    aggregate(r, raw, "thread", places)
    r.per.by_event = true                -- printed as perf stat -p --per-thread prints them
  elseif kind then
    aggregate(r, raw, kind, topology.aggregate(kind, cpus))
  end
  return r, sums
end

-- Waits for the child, calling opts.on_interval every opts.interval ms
-- with the counts of that interval (and once more for the part before the
-- exit, as perf stat -I prints it). Returns what child:wait returned; an
-- error in on_interval is raised once the counters are closed.
local function watch(child, opened, skipped, units, opts, stop, cpus)
  local period, k, prev = opts.interval * 1000000, 0, nil
  while true do
    local left = ((k + 1) * period - child:elapsed() + 999999) // 1000000
    local w, msg, errno = child:wait(left > 0 and left or 0)
    if w == nil then return nil, msg, errno end
    if w then
      local ok
      ok, msg, errno = stop()
      if not ok then return nil, msg, errno end
    end
    k = k + 1
    local r, sums
    r, sums, errno = collect(opened, skipped, units, cpus, prev, opts.aggregate)
    if not r then return nil, sums, errno end
    r.notes, r.interval, r.time = nil, k, w and w.elapsed or child:elapsed()
    prev = sums
    local ok, err = pcall(opts.on_interval, r)
    if not ok then
      close_all(opened, #units)
      error(err, 0)
    end
    if w then return w end
  end
end

-- Opens unit `list` on every target: its groups, or nil, message, errno
-- (what is open then closed).
local function open_unit(list, targets)
  local gs = {}
  for k, target in ipairs(targets) do
    local g, msg, errno = group.open_list(list, target, { user_fallback = true })
    if not g then
      close_all({ gs }, 1)
      return nil, msg, errno
    end
    gs[k] = g
  end
  return gs
end

-- The targets of each cgroup named in `units` on `cpus`: { [name] =
-- targets }, or nil, message, errno when one does not exist.
local function cgroup_targets(units, cpus)
  local by_name = {}
  for _, list in ipairs(units) do
    local name = list.cgroup
    if name and not by_name[name] then
      local t, msg, errno = processes.cgroup_targets(name, cpus)
      if not t then return nil, "perf.stat: " .. msg, errno end
      by_name[name] = t
    end
  end
  return by_name
end

-- What a run counts and where: the CPUs, the process or thread targets
-- (and their places, per thread), the cgroups, the units and the targets
-- of each cgroup; nil, message, errno when a target is missing.
local function plan_of(events, opts, target)
  local p = { cpus = cpus_of(opts) }
  local msg, errno
  if target and target.cgroup then       -- on every CPU (or those of opts.cpus)
    p.cpus = p.cpus or capabilities.online_cpus()
    p.cgroups = processes.cgroups(target, #events)
  elseif target then                     -- a process or thread
    p.tlist, msg, errno = processes.targets(target)
    if not p.tlist then return nil, "perf.stat: " .. msg, errno end
    if opts.per_thread then p.places = processes.thread_places(p.tlist) end  -- named as they start
  end
  p.units, msg, errno = units_of(events, opts, p.cpus ~= nil, target ~= nil, p.cgroups)
  if not p.units then return nil, msg, errno end
  p.in_cgroup, msg, errno = cgroup_targets(p.units, p.cpus)
  if not p.in_cgroup then return nil, msg, errno end
  return p
end

-- Where the counters open: on the command (pid), on each CPU, or on the
-- targets; and the CPUs the values are per (nil: none).
local function targets_of(p, opts, target, pid)
  local targets = { { pid = pid } }
  if p.cpus then
    targets = {}
    for k, c in ipairs(p.cpus) do targets[k] = { pid = -1, cpu = c } end
  end
  if p.tlist then targets = p.tlist end
  -- per thread: the command on each CPU, so that each counter has a ring
  local on_cpus = p.cpus
  if opts.per_thread and not target then
    on_cpus, targets = capabilities.online_cpus(), {}
    for k, c in ipairs(on_cpus) do targets[k] = { pid = pid, cpu = c } end
  end
  return targets, on_cpus
end

-- A run that cannot go on: what it opened (st.opened, st.tracker) closed.
local function fail(st, m, e)
  if st.tracker then st.tracker:close() end
  close_all(st.opened, st.n)
  return nil, "perf.stat: " .. m, e
end

-- Each unit opened on `targets` (or on its cgroup's) into st.opened; a
-- unit this machine cannot count goes to st.skipped with its reason.
local function open_units(st, p, targets)
  local counted = 0
  for u, list in ipairs(p.units) do
    local gs, msg, errno = open_unit(list, p.in_cgroup[list.cgroup] or targets)
    if gs then
      st.opened[u], counted = gs, counted + 1
    elseif NOT_SUPPORTED[errno] then
      st.skipped[u] = { msg, errno }
    else
      return fail(st, msg, errno)
    end
  end
  if counted == 0 then                   -- nothing to count: the first reason
    return fail(st, st.skipped[1][1], st.skipped[1][2])
  end
  return true
end

-- The command waited for: intervals printed as it runs (opts.interval),
-- the rings drained as it runs (per thread), or a plain wait; its status.
local function wait_for(st, child, p, opts, stop)
  local w, ok, msg, errno
  if opts.interval then
    w, msg, errno = watch(child, st.opened, st.skipped, p.units, opts, stop, p.cpus)
    if not w then return fail(st, msg, errno) end
  elseif st.tracker then                 -- the rings drained as the command runs
    repeat
      w, msg, errno = child:wait(100)
      if w == nil then return fail(st, msg, errno) end
      if not w then st.tracker:drain() end
    until w
  else
    w, msg, errno = child:wait()
    if not w then return fail(st, msg, errno) end
    ok, msg, errno = stop()
    if not ok then return fail(st, msg, errno) end
  end
  return w
end

local function run(argv, events, opts, target)
  local p, msg, errno = plan_of(events, opts, target)
  if not p then return nil, msg, errno end
  local units = p.units
  local child
  child, msg, errno = core.spawn(argv, { stdin = opts.stdin, stdout = opts.stdout, stderr = opts.stderr })
  if not child then return nil, "perf.stat: " .. msg, errno end
  local child_ <close> = child
  -- every failure from here on closes what was opened (fail)
  local st = { opened = {}, skipped = {}, n = #units }
  local opened = st.opened
  local pid = child:pid()
  local targets, on_cpus = targets_of(p, opts, target, pid)
  local ok
  ok, msg, errno = open_units(st, p, targets)
  if not ok then return nil, msg, errno end
  if opts.per_thread and not target then
    local tracker
    tracker, msg, errno = threads.track(opened, #units, pid)
    if not tracker then return fail(st, msg, errno) end
    st.tracker = tracker
  end
  local early = p.cpus or target          -- counting from here, as perf stat -a and -p
  if early then
    ok, msg, errno = each_group(opened, #units, "enable")
    if not ok then return fail(st, msg, errno) end
  end
  ok, msg, errno = child:start()
  if not ok then return fail(st, msg, errno) end
  -- counting on CPUs, they stop with the command
  local function stop()
    if not early then return true end
    return each_group(opened, #units, "disable")
  end
  local w
  w, msg, errno = wait_for(st, child, p, opts, stop)
  if not w then return nil, msg, errno end
  local tracker = st.tracker
  if p.places then                       -- the targets are threads
    on_cpus = {}
    for k, t in ipairs(p.tlist) do on_cpus[k] = t.pid end
  end
  local r
  r, msg, errno = collect(opened, st.skipped, units, on_cpus, nil, opts.aggregate, tracker ~= nil, p.places)
  if not r then return fail(st, msg, errno) end
  if tracker then
    tracker:rows(r, units, pid, argv[1]:match("[^/]*$"):sub(1, 15))
    if tracker.lost > 0 then
      note(r, ("per thread: %d records lost; some threads' counts are left in their parent's row")
        :format(tracker.lost))
    end
    tracker:close()
  end
  if target then                         -- the command only marked the time
    r.elapsed = w.elapsed
  else
    for k, v in pairs(w) do r[k] = v end
  end
  close_all(opened, #units)
  return r
end

--- Runs a command and counts events on it and its children, as `perf stat`.
--
-- The command is forked and waits until the counters are attached; they
-- count from its exec (`enable_on_exec`) in it and the tasks it starts
-- (inherit). Each event is counted on its own; a `"{a,b}"` string is a
-- group. An event this machine cannot count (perf stat's
-- `<not supported>`) is `false` in the results, with `supported = false`
-- and the kernel's error in its details; the others are counted.
-- @tparam {string,...} argv the command (argv[1] looked up in PATH)
-- @param events a list of events (strings or attr tables, as
-- `perf.open` takes them), or one comma-separated string
-- @tparam[opt] table opts `inherit` (default true), `all_cpus` (as perf
-- stat -a), `cpus` (a list or `"0-3,5"`, as -C), `interval` (ms) with
-- `on_interval(r)` (as -I), `stdin`/`stdout`/`stderr` (a path or file)
-- @treturn[1] table results: `results[i]` and `results[name]` the counts
-- (scaled for multiplexing), `events[i]` the details (`name`, `value`,
-- `raw`, `time_enabled`, `time_running`, `fraction`, `unit`, `supported`,
-- `cpus`), `status` (exit code or signal name), `signal`, `elapsed`,
-- `user`, `sys` (ns), `notes`
-- @return[2] nil, message, errno when no event can be counted (the
-- command is not run) or the command cannot run (`ENOENT`: not in PATH)
-- @raise on misuse: an empty argv, a malformed event, an unknown option
-- @usage
-- local r = assert(perf.stat({ "ls", "/" }, { "task-clock", "syscalls:sys_enter_openat" }))
-- print(r["syscalls:sys_enter_openat"], r.status, r.elapsed)
-- @function stat
function M.stat(argv, events, opts)
  local ok, list, command, target = pcall(check_args, argv, events, opts)
  if not ok then error(base.strip_position(list), 2) end
  local kernel, tools = tool.split(list)
  local placeholder = tools and #kernel == 0 and "dummy" or nil
  local r, msg, errno
  if tools then
    ok, msg = pcall(tool.check, opts)
    if not ok then error(msg, 2) end
    list = placeholder and { placeholder } or kernel
  end
  ok, r, msg, errno = pcall(run, command, list, opts or {}, target)
  if not ok then error(base.strip_position(r), 2) end
  if not r then return nil, msg, errno end
  if tools then
    tool.merge(r, tools, placeholder, function(e) return given_of[e] end)
  end
  if getmetatable(r) == nil then core.show(r, "perf.stat") end
  return r
end

return M
