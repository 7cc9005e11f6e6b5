-- perf.stat_format: perf.stat results printed the way `perf stat` prints
-- them. Pure functions over result tables, so they can be checked on
-- synthetic values (multiplexed counts, several runs).
--
--   local F = require "perf.stat_format"
--   local s = F.summary { r1, r2, r3 }     -- results of perf.stat, one per run
--   io.stderr:write(F.text(s, argv))        -- perf stat's table
--   io.stderr:write(F.csv(s, ","))          -- perf stat -x,
--
-- Clock events (task-clock, cpu-clock) print in msec with "CPUs utilized";
-- other counts print with thousands separators and a rate per second of
-- the clock event's time, when one was counted (as perf stat does). A
-- count that ran part of the time it was enabled (multiplexing) is scaled
-- and shows the percentage it ran. With several runs each count is their
-- mean, with the relative standard deviation of the mean, as perf stat -r.
local F = {}

-- 1234567 -> "1,234,567"; with `decimals`, 1234.5 -> "1,234.50".
function F.thousands(x, decimals)
  local s = decimals and ("%." .. decimals .. "f"):format(x) or ("%d"):format(math.floor(x + 0.5))
  local sign, int, frac = s:match("^(%-?)(%d+)(.*)$")
  int = int:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return sign .. int .. frac
end

-- perf's rate units: the value per second scaled to K, M or G.
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

local function is_clock(e)
  return e.type == 1 and (e.config == 0 or e.config == 1)
end

-- mean and relative standard deviation of the mean, in percent (0 for one
-- value or a zero mean)
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
function F.summary(runs)
  assert(#runs >= 1, "no runs")
  local first = runs[1]
  local s = { runs = #runs, events = {}, status = runs[#runs].status, signal = runs[#runs].signal }
  for i, e in ipairs(first.events) do
    if e.supported == false then
      s.events[i] = { name = e.name, supported = false }
      goto next_event
    end
    local values, fractions, running = {}, {}, {}
    for k, r in ipairs(runs) do
      local ek = r.events[i]
      values[k], fractions[k], running[k] = ek.value, ek.fraction, ek.time_running
    end
    local mean, noise = F.mean_noise(values)
    s.events[i] = {
      name = e.name, value = mean, noise = noise,
      fraction = (F.mean_noise(fractions)), running = (F.mean_noise(running)),
      clock = is_clock(e), unit = e.unit, scale = e.scale,
    }
    ::next_event::
  end
  local el, us, sy = {}, {}, {}
  for k, r in ipairs(runs) do el[k], us[k], sy[k] = r.elapsed, r.user, r.sys end
  s.elapsed, s.elapsed_noise = F.mean_noise(el)
  s.user, s.sys = F.mean_noise(us), F.mean_noise(sy)
  return s
end

-- The clock event's mean, in ns, or nil.
local function clock_ns(s)
  for _, e in ipairs(s.events) do
    if e.clock then return e.value end
  end
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
  if e.supported == false then
    return ("%18s %-4s %s"):format(NOT_SUPPORTED, "", e.name)
  end
  local v, unit, metric, munit, decimals = columns(e, s, clock)
  if e.running == 0 then
    return ("%18s %-4s %s"):format(NOT_COUNTED, unit, e.name)
  end
  local line = ("%18s %-4s %-32s"):format(F.thousands(v, decimals), unit, e.name)
  if metric then
    line = line .. (" # %8.3f %-22s"):format(metric, munit)
  elseif s.runs > 1 or e.fraction < 1 then
    line = line .. (" "):rep(35)
  end
  if s.runs > 1 and e.noise > 0 then line = line .. ("  ( +-%6.2f%% )"):format(e.noise) end
  if e.fraction < 1 then line = line .. ("  (%.2f%%)"):format(100 * e.fraction) end
  return (line:gsub("%s+$", ""))
end

--- The human-readable table, as perf stat prints it. `what` is the command
-- (argv), or for counting on CPUs what perf names it ("system wide",
-- "CPU(s) 0-1"); then there are no user and sys lines, as perf prints none.
function F.text(s, what)
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  add("\n Performance counter stats for '%s'%s:\n\n", type(what) == "string" and what or quote(what),
    s.runs > 1 and (" (%d runs)"):format(s.runs) or "")
  local clock = clock_ns(s)
  for _, e in ipairs(s.events) do add("%s\n", text_row(e, s, clock)) end
  if s.runs > 1 then
    add("\n%18.9f +- %.9f seconds time elapsed  ( +-%6.2f%% )\n",
      s.elapsed / 1e9, s.elapsed * s.elapsed_noise / 100 / 1e9, s.elapsed_noise)
  else
    add("\n%18.9f seconds time elapsed\n", s.elapsed / 1e9)
  end
  if type(what) == "string" then
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
  if s.runs > 1 then fields[#fields + 1] = ("%.2f%%"):format(e.noise) end
  fields[#fields + 1] = ("%d"):format(math.floor(e.running + 0.5))
  fields[#fields + 1] = ("%.2f"):format(counted and 100 * e.fraction or 100)
  fields[#fields + 1] = counted and metric and ("%.3f"):format(metric) or ""
  fields[#fields + 1] = counted and munit or ""
  return table.concat(fields, sep)
end

--- perf stat -x SEP: value, unit, event, [noise%,] running ns, % running,
-- metric, metric unit.
function F.csv(s, sep)
  local out = {}
  local clock = clock_ns(s)
  for _, e in ipairs(s.events) do out[#out + 1] = csv_row(e, s, clock, sep) .. "\n" end
  return table.concat(out)
end

--- The header perf stat -I prints above its intervals (not with -x).
function F.interval_header()
  return "#           time             counts unit events\n"
end

--- One interval (what perf.stat passes to on_interval) as perf stat -I
-- prints it: each row led by the time in seconds, as text or, with `sep`,
-- as CSV. `since` is when the interval began (ns since the exec; 0 for the
-- first), so rates and CPUs utilized are of the interval.
function F.interval(r, since, sep)
  local s = F.summary { setmetatable({ elapsed = r.time - since, user = 0, sys = 0 }, { __index = r }) }
  local clock = clock_ns(s)
  local time = ("%16.9f"):format(r.time / 1e9)
  local out = {}
  for _, e in ipairs(s.events) do
    out[#out + 1] = sep and time .. sep .. csv_row(e, s, clock, sep) .. "\n"
      or time .. " " .. text_row(e, s, clock) .. "\n"
  end
  return table.concat(out)
end

return F
