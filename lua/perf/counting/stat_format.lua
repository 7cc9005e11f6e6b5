-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

--- perf.stat_format: perf.stat results printed the way `perf stat` prints
-- them. Pure functions over result tables, so they can be checked on
-- synthetic values (multiplexed counts, several runs).
--
--     local F = require "perf.stat_format"
--     local s = F.summary { r1, r2, r3 }     -- results of perf.stat, one per run
--     io.stderr:write(F.text(s, argv))        -- perf stat's table
--     io.stderr:write(F.csv(s, ","))          -- perf stat -x,
--     io.stderr:write(F.json(s))              -- perf stat -j
--
-- Clock events (task-clock, cpu-clock) print in msec with "CPUs utilized";
-- other counts print grouped by the locale's separator and a rate per second of
-- the clock event's time, when one was counted (as perf stat does). A
-- count that ran part of the time it was enabled (multiplexing) is scaled
-- and shows the percentage it ran. With several runs each count is their
-- mean, with the relative standard deviation of the mean, as perf stat -r.
-- @module perf.stat_format
local core = require "perf.core"

local F = {}

--- The digit-group separator `F.text` uses: the user's locale's, as perf
-- stat uses it ("" in the C locale, so 1097 prints as 1097; "," under
-- en_US.UTF-8, 1,097).
F.separator = core.thousands_sep()

--- 1234567 -> "1,234,567"; with `decimals`, 1234.5 -> "1,234.50".
-- @number x the number
-- @int[opt] decimals digits after the point (default: an integer)
-- @string[opt] sep the separator of groups of three digits (default ",")
-- @treturn string
-- @usage assert(F.thousands(1234567) == "1,234,567")
-- @usage assert(F.thousands(1234567, nil, "") == "1234567")
-- @function thousands
function F.thousands(x, decimals, sep)
  local s = decimals and ("%." .. decimals .. "f"):format(x) or ("%d"):format(math.floor(x + 0.5))
  local sign, int, frac = s:match("^(%-?)(%d+)(.*)$")
  sep = (sep or ","):gsub("%%", "%%%%")
  if sep ~= "" then
    int = int:reverse():gsub("(%d%d%d)", "%1\0"):reverse():gsub("^%z", ""):gsub("%z", sep)
  end
  return sign .. int .. frac
end

--- perf's rate units: the value per second scaled to K, M or G.
-- @number per_sec a rate
-- @treturn number the scaled value
-- @treturn string its unit ("K/sec", ...)
-- @function rate_unit
function F.rate_unit(per_sec)
  if per_sec > 1e9 then return per_sec / 1e9, "G/sec" end
  if per_sec > 1e6 then return per_sec / 1e6, "M/sec" end
  if per_sec > 1e3 then return per_sec / 1e3, "K/sec" end
  return per_sec, "/sec"
end

-- what perf stat prints for an event it could not count, and for one that
-- never ran (not scheduled in the time it was enabled)
local NOT_SUPPORTED = "<not supported>"
local NOT_COUNTED = "<not counted>"

local is_clock = require("perf.event.events").is_clock

--- mean and relative standard deviation of the mean, in percent (0 for one
-- value or a zero mean)
-- @tparam {number,...} values the values of the runs
-- @treturn number the mean
-- @treturn number the noise, in percent
-- @function mean_noise
function F.mean_noise(values)
  local n, sum = #values, 0
  for _, v in ipairs(values) do sum = sum + v end
  local mean = sum / n
  if n < 2 or mean == 0 then return mean, 0 end
  local sq = 0
  for _, v in ipairs(values) do sq = sq + (v - mean) ^ 2 end
  local stddev_mean = math.sqrt(sq / (n - 1) / n)
  return mean, 100 * stddev_mean / math.abs(mean)
end

-- Results of one or more runs of the same command and events to one
-- summary: { runs, events = { { name, value, noise, fraction, running,
-- clock, unit, scale } ... }, elapsed, elapsed_noise, user, sys, status }.
-- An event perf.stat could not count is { name, supported = false }.
-- lists[k] is the events of run k (r.events, or a row's events): their
-- summary.
local function summarize(lists)
  local out = {}
  for i, e in ipairs(lists[1]) do
    if e.supported == false then
      out[i] = { name = e.name, supported = false, cgroup = e.cgroup }
      goto next_event
    end
    local values, fractions, running = {}, {}, {}
    for k, list in ipairs(lists) do
      local ek = list[i]
      values[k], fractions[k], running[k] = ek.value, ek.fraction, ek.time_running
    end
    local mean, noise = F.mean_noise(values)
    out[i] = {
      name = e.name, value = mean, noise = noise,
      fraction = (F.mean_noise(fractions)), running = (F.mean_noise(running)),
      clock = is_clock(e), unit = e.unit, scale = e.scale, cgroup = e.cgroup,
    }
    ::next_event::
  end
  return out
end

-- The rows of r.per (counts per core, socket, CPU or thread) summarised
-- over the runs that have each row, in the first run's order then the rows
-- only later runs have. Places are matched by key; threads, whose ids
-- change from run to run, by position (the command's n-th task), named
-- as in the last run that has them.
local function summarize_per(runs)
  local kind = runs[1].per.kind
  local order, lists, rows = {}, {}, {}
  for _, r in ipairs(runs) do
    for n, row in ipairs(r.per or {}) do
      local key = kind == "thread" and n or row.key
      if not lists[key] then order[#order + 1], lists[key] = key, {} end
      rows[key] = row
      local l = lists[key]
      l[#l + 1] = row.events
    end
  end
  local per = { kind = kind, by_event = runs[1].per.by_event }
  for k, key in ipairs(order) do
    local row = {}
    for f, v in pairs(rows[key]) do
      if math.type(f) ~= "integer" and f ~= "events" and type(v) ~= "table" then row[f] = v end
    end
    row.events = summarize(lists[key])
    per[k] = row
  end
  return per
end

--- The runs of a command summed up as perf stat -r prints them: each
-- event's mean, its noise and its running share.
-- @tparam {table,...} runs perf.stat results, one per run
-- @treturn table the summary the printers take
-- @function summary
function F.summary(runs)
  assert(#runs >= 1, "no runs")
  local s = { runs = #runs, status = runs[#runs].status, signal = runs[#runs].signal }
  local lists = {}
  for k, r in ipairs(runs) do lists[k] = r.events end
  s.events = summarize(lists)
  for _, e in ipairs(s.events) do s.cgroups = s.cgroups or e.cgroup ~= nil end
  if runs[1].per then s.per = summarize_per(runs) end
  local el, us, sy = {}, {}, {}
  for k, r in ipairs(runs) do el[k], us[k], sy[k] = r.elapsed, r.user, r.sys end
  s.elapsed, s.elapsed_noise = F.mean_noise(el)
  s.user, s.sys = F.mean_noise(us), F.mean_noise(sy)
  return s
end

-- The clock event's mean, in ns, or nil (of a summary or one of its rows),
-- for the rates of event e: perf divides by the clock of e's cgroup.
local function clock_ns(s, e)
  for _, c in ipairs(s.events) do
    if c.clock and c.cgroup == e.cgroup then return c.value end
  end
end

-- What is printed: the totals, or with s.per a row per place or thread.
local function rows(s)
  return s.per or { s }
end

-- perf's prefixes of an aggregated row, per output: text columns, CSV
-- fields, JSON members. perf stat --per-core prints "S0-D0-C0" and the
-- number of CPUs in it, -A "CPU0", --per-thread "comm-tid".
local TEXT_WIDTH = { core = 15, die = 12, socket = 6 }
local JSON_NAME = { core = "core", die = "die", socket = "socket" }

local function text_prefix(kind, row)
  if kind == "cpu" then return ("CPU%-7d "):format(row.cpu) end
  if kind == "thread" then return ("%16s-%-8d "):format(row.comm or "", row.tid) end
  return ("%-" .. TEXT_WIDTH[kind] .. "s %4d "):format(row.key, row.nr)
end

local function csv_prefix(kind, row, sep)
  if kind == "cpu" or kind == "thread" then return row.key .. sep end
  return row.key .. sep .. row.nr .. sep
end

local function json_string(v)
  return '"' .. tostring(v):gsub('[%c"\\]', function(c)
    if c == '"' or c == "\\" then return "\\" .. c end
    return ("\\u%04x"):format(c:byte())
  end) .. '"'
end

local function json_prefix(kind, row)
  if kind == "cpu" then return ('"cpu" : "%d", '):format(row.cpu) end
  if kind == "thread" then return ('"thread" : %s, '):format(json_string(row.key)) end
  return ('"%s" : %s, "aggregate-number" : %d, '):format(JSON_NAME[kind], json_string(row.key), row.nr)
end

-- The rows in the order perf prints them for event i: a process's
-- threads (per.by_event) the largest count first, as perf stat -p
-- --per-thread sorts them; else as they are.
local function ordered(list, i, by_event)
  if not by_event then return list end
  local sorted = table.move(list, 1, #list, 1, {})
  local at = {}
  for k, row in ipairs(list) do at[row] = k end
  local function value(row)
    local e = row.events[i]
    return e.supported ~= false and e.running ~= 0 and e.value or 0
  end
  table.sort(sorted, function(a, b)
    local va, vb = value(a), value(b)
    if va ~= vb then return va > vb end
    return at[a] < at[b]
  end)
  return sorted
end

-- Each printed line: line(e, s, clock, prefix) for every event of every
-- row, prefix(kind, row) leading the rows of s.per. perf prints a place's
-- events together, but per CPU (-A) and a process's threads each event's
-- rows together.
local function each_line(s, line, prefix)
  local out = {}
  local kind = s.per and s.per.kind
  local list = rows(s)
  local function add(row, i)
    local e = row.events[i]
    out[#out + 1] = line(e, s, clock_ns(row, e), kind and prefix(kind, row) or "") .. "\n"
  end
  if kind == "cpu" or s.per and s.per.by_event then
    for i = 1, #s.events do
      for _, row in ipairs(ordered(list, i, s.per.by_event)) do add(row, i) end
    end
  else
    for _, row in ipairs(list) do
      for i = 1, #row.events do add(row, i) end
    end
  end
  return table.concat(out)
end

-- The value as perf prints it, its unit column, and the metric (value,
-- unit) or nil.
local function columns(e, s, clock)
  if e.clock then
    local cpus = s.elapsed > 0 and e.value / s.elapsed or 0
    return e.value / 1e6, "msec", cpus, "CPUs utilized", 2
  end
  if e.scale then
    return e.value * e.scale, e.unit or "", nil, nil, 2
  end
  if clock and clock > 0 then
    local rate, unit = F.rate_unit(e.value * 1e9 / clock)
    return e.value, e.unit or "", rate, unit, nil
  end
  return e.value, e.unit or "", nil, nil, nil
end

local function quote(argv)
  local parts = {}
  for i, a in ipairs(argv) do parts[i] = a end
  return table.concat(parts, " ")
end

-- One event's row of the table (without its newline).
local function text_row(e, s, clock)
  -- with cgroups, perf follows each name with its cgroup's ("" for none)
  local cg = s.cgroups and " " .. (e.cgroup or "") or ""
  if e.supported == false then
    return (("%18s %-4s %-25s%s"):format(NOT_SUPPORTED, "", e.name, cg):gsub("%s+$", ""))
  end
  local v, unit, metric, munit, decimals = columns(e, s, clock)
  if e.running == 0 then
    return (("%18s %-4s %-25s%s"):format(NOT_COUNTED, unit, e.name, cg):gsub("%s+$", ""))
  end
  local line = ("%18s %-4s %-32s%s"):format(F.thousands(v, decimals, F.separator), unit, e.name, cg)
  if metric then
    line = line .. (" # %8.3f %-23s"):format(metric, munit)
  elseif s.runs > 1 or e.fraction < 1 then
    line = line .. (" "):rep(35)
  end
  if s.runs > 1 and e.noise > 0 then line = line .. ("  ( +-%6.2f%% )"):format(e.noise) end
  if e.fraction < 1 then line = line .. ("  (%.2f%%)"):format(100 * e.fraction) end
  return (line:gsub("%s+$", ""))
end

--- The human-readable table, as perf stat prints it. `what` is the command
-- (argv), or for counting on CPUs what perf names it ("system wide",
-- "CPU(s) 0-1"), or { title = "process id '12'" } for what perf names
-- without quotes; then there are no user and sys lines, as perf prints none
-- (nor after several runs).
-- @tparam table s a summary
-- @param what the command (argv), or what was counted
-- @treturn string the table
-- @usage io.stderr:write(F.text(F.summary { r }, argv))
-- @function text
function F.text(s, what)
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  local title = type(what) == "table" and what.title
  add("\n Performance counter stats for %s%s:\n\n",
    title or ("'%s'"):format(type(what) == "string" and what or quote(what)),
    s.runs > 1 and (" (%d runs)"):format(s.runs) or "")
  out[#out + 1] = each_line(s, function(e, _, clock, lead) return lead .. text_row(e, s, clock) end,
    text_prefix)
  if s.runs > 1 then                   -- perf's digits: two past the deviation's first
    local sd = s.elapsed * s.elapsed_noise / 100 / 1e9
    local digits = sd > 1 and 2 or sd > 0 and math.ceil(-math.log(sd, 10)) + 2 or 9
    add("\n%18." .. digits .. "f +- %." .. digits .. "f seconds time elapsed  ( +-%6.2f%% )\n",
      s.elapsed / 1e9, sd, s.elapsed_noise)
  else
    add("\n%18.9f seconds time elapsed\n", s.elapsed / 1e9)
  end
  if type(what) == "string" or title or s.runs > 1 then   -- perf stat -r prints no user, sys
    add("\n")
  else
    add("\n%18.9f seconds user\n%18.9f seconds sys\n\n", s.user / 1e9, s.sys / 1e9)
  end
  return table.concat(out)
end

-- One event's CSV row (without its newline).
local function csv_row(e, s, clock, sep)
  local fields
  if e.supported == false then
    fields = { NOT_SUPPORTED, "", e.name }
    if s.cgroups then fields[#fields + 1] = e.cgroup or "" end
    if s.runs > 1 then fields[#fields + 1] = "0.00%" end
    fields[#fields + 1] = "0"
    fields[#fields + 1] = "100.00"
    fields[#fields + 1] = ""
    fields[#fields + 1] = ""
    return table.concat(fields, sep)
  end
  local v, unit, metric, munit, decimals = columns(e, s, clock)
  local counted = e.running ~= 0
  fields = { not counted and NOT_COUNTED
    or decimals and ("%." .. decimals .. "f"):format(v) or ("%d"):format(math.floor(v + 0.5)),
    unit, e.name }
  if s.cgroups then fields[#fields + 1] = e.cgroup or "" end
  if s.runs > 1 then fields[#fields + 1] = ("%.2f%%"):format(e.noise) end
  fields[#fields + 1] = ("%d"):format(math.floor(e.running + 0.5))
  fields[#fields + 1] = ("%.2f"):format(counted and 100 * e.fraction or 100)
  fields[#fields + 1] = counted and metric and ("%.3f"):format(metric) or ""
  fields[#fields + 1] = counted and munit or ""
  return table.concat(fields, sep)
end

--- perf stat -x SEP: value, unit, event, [noise%,] running ns, % running,
-- metric, metric unit.
-- Rows per place or thread lead with perf's key (and the number of CPUs
-- in a core, die or socket).
-- @tparam table s a summary
-- @string sep the separator
-- @treturn string the rows
-- @function csv
function F.csv(s, sep)
  return each_line(s, function(e, _, clock, lead) return lead .. csv_row(e, s, clock, sep) end,
    function(kind, row) return csv_prefix(kind, row, sep) end)
end

-- One event as perf stat -j writes it (without the braces): the value a
-- string ("%f", msec for clocks, or <not supported>/<not counted>), the
-- noise of several runs as "variance", the running time and its percentage,
-- the metric. Where perf 6.1 writes "(null)" for a metric it has no unit
-- for, this writes "".
local function json_row(e, s, clock)
  local value, unit, metric, munit, runtime, pcnt
  if e.supported == false then
    value, unit, runtime, pcnt = NOT_SUPPORTED, "", 0, 100
  else
    local v
    v, unit, metric, munit = columns(e, s, clock)
    if e.running == 0 then
      value, runtime, pcnt, metric, munit = NOT_COUNTED, 0, 100, nil, nil
    else
      value = ("%f"):format(v)
      runtime, pcnt = math.floor(e.running + 0.5), 100 * e.fraction
    end
  end
  local f = { ('"counter-value" : %s, "unit" : %s, "event" : %s, '):format(
    json_string(value), json_string(unit), json_string(e.name)) }
  if s.cgroups then f[#f + 1] = ('"cgroup" : %s, '):format(json_string(e.cgroup or "")) end
  if s.runs > 1 then f[#f + 1] = ('"variance" : %.2f, '):format(e.noise or 0) end
  f[#f + 1] = ('"event-runtime" : %d, "pcnt-running" : %.2f, "metric-value" : %f, "metric-unit" : %s')
    :format(runtime, pcnt, metric or 0, json_string(munit or ""))
  return table.concat(f)
end

--- perf stat -j: one JSON object a line per event (per row with s.per),
-- with perf's keys: counter-value, unit, event, [variance,] event-runtime,
-- pcnt-running, metric-value, metric-unit; aggregated rows lead with
-- "core"/"die"/"socket" and "aggregate-number", "cpu" or "thread".
-- @tparam table s a summary
-- @treturn string one JSON object a line
-- @function json
function F.json(s)
  return each_line(s, function(e, _, clock, lead) return "{" .. lead .. json_row(e, s, clock) .. "}" end,
    json_prefix)
end

-- perf stat -I's header, per aggregation (opts.aggregate, "thread")
local HEADERS = {
  core = "#           time core            cpus             counts unit events\n",
  die = "#           time die          cpus             counts unit events\n",
  socket = "#           time socket cpus             counts unit events\n",
  cpu = "#           time CPU                    counts unit events\n",
  thread = "#           time             comm-pid                  counts unit events\n",
}

--- The header perf stat -I prints above its intervals (not with -x or
-- -j); `kind` is the aggregation, if any.
-- @string[opt] kind the aggregation
-- @treturn string the header
-- @function interval_header
function F.interval_header(kind)
  return HEADERS[kind] or "#           time             counts unit events\n"
end

--- One interval (what perf.stat passes to on_interval) as perf stat -I
-- prints it: each row led by the time in seconds, as text or, with `sep`,
-- as CSV, or with sep == "json" as perf stat -j -I writes it (an
-- "interval" member first). `since` is when the interval began (ns since
-- the exec; 0 for the first), so rates are of the interval; CPUs utilized
-- is of `ms`, the interval asked for, as perf divides by it (the last,
-- shorter interval too), or else of the interval's own length.
-- @tparam table r an interval's counts (perf.stat's on_interval)
-- @int since when the interval began (ns since the exec)
-- @string[opt] sep a CSV separator, or "json"
-- @int[opt] ms the interval asked for (perf stat -I's)
-- @treturn string the rows
-- @function interval
function F.interval(r, since, sep, ms)
  local s = F.summary { setmetatable({ elapsed = ms and ms * 1000000 or r.time - since, user = 0, sys = 0 },
    { __index = r }) }
  local time = ("%16.9f"):format(r.time / 1e9)
  if sep == "json" then
    local lead = ('"interval" : %.9f, '):format(r.time / 1e9)
    return each_line(s, function(e, _, clock, prefix)
      return "{" .. lead .. prefix .. json_row(e, s, clock) .. "}"
    end, json_prefix)
  elseif sep then
    return each_line(s, function(e, _, clock, lead)
      return time .. sep .. lead .. csv_row(e, s, clock, sep)
    end, function(kind, row) return csv_prefix(kind, row, sep) end)
  end
  return each_line(s, function(e, _, clock, lead)
    return time .. " " .. lead .. text_row(e, s, clock)
  end, text_prefix)
end

return F
