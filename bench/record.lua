-- bench/record.lua: recording every CPU at a high rate, perf.record
-- against perf record -a, in one run on the same load.
--
--   lua5.4 bench/record.lua [seconds] [rounds]      (root; make bench-record)
--
-- The load: one `yes >/dev/null` pinned to each of the first two CPUs.
-- Each round records `sleep SECONDS` (default 1) with cpu-clock on every
-- CPU, at -F 50000 and at the kernel's maximum rate, once with perf
-- record -a and once with perf.record { all_cpus = true }, in alternating
-- order, each into a perf.data file. Both files are read back the same
-- way: samples kept, the kernel's lost count (PERF_RECORD_LOST_SAMPLES,
-- which both write; PERF_RECORD_LOST where it is larger), and the span
-- from the first sample to the last. Kept samples per second of span are
-- compared. Targets: at least 0.95x perf record's rate, at -F 50000 with
-- nothing lost, and at the maximum rate.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local seconds = arg[1] or "1"
local rounds = math.tointeger(tonumber(arg[2] or "3"))
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out
end

-- kept, lost, span (ns) of a perf.data file
local function read_back(path)
  local f = assert(perf.data.open(path))
  local kept, lost_samples, lost_records, first, last = 0, 0, 0, math.maxinteger, 0
  for r in f:records() do
    local t = r.type
    if t == "sample" then
      kept = kept + 1
      if r.time < first then first = r.time end
      if r.time > last then last = r.time end
    elseif t == "lost_samples" then
      lost_samples = lost_samples + r.lost
    elseif t == "lost" then
      lost_records = lost_records + r.lost
    end
  end
  f:close()
  return kept, math.max(lost_samples, lost_records), kept > 0 and last - first or 0
end

local function with_perf(freq, path)
  assert(os.execute(("perf record -q -a -F %d -e cpu-clock -o %s -- sleep %s 2>/dev/null")
    :format(freq, path, seconds)))
  return read_back(path)
end

local function with_lua(freq, path)
  assert(perf.record({ "sleep", seconds }, "cpu-clock",
    { all_cpus = true, freq = freq, output = path }))
  return read_back(path)
end

local ncpus = math.tointeger(tonumber(sh("nproc")))
if ncpus < 2 then
  io.stderr:write("bench/record.lua: needs 2 CPUs for its two pinned loads\n")
  os.exit(1)
end
local loads = {}
for cpu = 0, 1 do
  loads[#loads + 1] = sh(("taskset -c %d yes >/dev/null 2>&1 & echo $!"):format(cpu)):match("%d+")
end

local max = perf.capabilities().max_sample_rate
local rates = { 50000 }
if max and max ~= 50000 then rates[2] = max end
local rows = {}
for _, freq in ipairs(rates) do
  local sum = { perf = { 0, 0, 0 }, lua = { 0, 0, 0 } }
  for round = 1, rounds do
    local order = round % 2 == 1 and { "perf", "lua" } or { "lua", "perf" }
    for _, who in ipairs(order) do
      local path = ("%s/%s-%d-%d.data"):format(dir, who, freq, round)
      local kept, lost, span = (who == "perf" and with_perf or with_lua)(freq, path)
      local s = sum[who]
      s[1], s[2], s[3] = s[1] + kept, s[2] + lost, s[3] + span
      os.remove(path)
    end
  end
  rows[#rows + 1] = { freq = freq, perf = sum.perf, lua = sum.lua }
end
for _, pid in ipairs(loads) do os.execute("kill " .. pid) end
os.execute("rm -rf " .. dir)

print(("recording every CPU (%d) under two pinned `yes` loads: cpu-clock, `sleep %s`, %d rounds each, "
  .. "alternating; totals"):format(ncpus, seconds, rounds))
print(("%-8s %-26s %10s %9s %8s %13s %7s"):format("-F", "", "kept", "lost", "span s", "kept/s", "ratio"))
local verdicts = {}
for _, row in ipairs(rows) do
  local base = row.perf[1] / (row.perf[3] / 1e9)
  for _, who in ipairs { "perf", "lua" } do
    local s = row[who]
    local rate = s[1] / (s[3] / 1e9)
    print(("%-8d %-26s %10d %9d %8.3f %13.0f %6.3fx"):format(row.freq,
      who == "perf" and "perf record -a" or "perf.record { all_cpus }", s[1], s[2], s[3] / 1e9,
      rate, rate / base))
  end
  local ratio = (row.lua[1] / (row.lua[3] / 1e9)) / base
  if row.freq == 50000 then
    verdicts[#verdicts + 1] = ("target at -F 50000: >= 0.95x perf record's kept samples per second, 0 lost: "
      .. "%.3fx, %d lost (%s)"):format(ratio, row.lua[2], (ratio >= 0.95 and row.lua[2] == 0) and "met" or "MISSED")
  else
    verdicts[#verdicts + 1] = ("target at -F %d: >= 0.95x perf record's kept samples per second: "
      .. "%.3fx, %d lost (perf record: %d) (%s)"):format(row.freq, ratio, row.lua[2], row.perf[2],
      ratio >= 0.95 and "met" or "MISSED")
  end
end
print(table.concat(verdicts, "\n"))
