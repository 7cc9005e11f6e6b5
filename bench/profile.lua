-- bench/profile.lua: what profiling costs a CPU-bound Lua workload.
--
--   lua5.4 bench/profile.lua [rounds]        (make bench-profile)
--
-- Side by side, in one run, the same workload:
--   plain     unprofiled;
--   perf      under perf.profile, cpu-clock at 999 Hz (the overflow signal
--             arms a count hook; the hook walks the stack once per sample);
--   counters  the same with counters = { "page-faults", "context-switches" }
--             (their values ride in each sample record);
--   wall      mode = "wall" at 999 Hz (cpu-clock plus every context switch);
--   sethook   under a plain debug.sethook count-hook profiler, as the usual
--             Lua profilers work: a hook every N VM instructions, N chosen
--             so that it samples at 999 Hz of the unprofiled run; each hook
--             walks the stack with debug.getinfo and counts it;
--   perf tool the workload in a child lua5.4 under `perf record -F 999 -e
--             cpu-clock` (when the perf tool is installed), against the
--             same child unprofiled: the kernel's share of sampling.
-- Times are the process's CPU time (os.clock: user + system, so signal
-- delivery counts), medians over the rounds, run in rotating order.
-- Then an allocation-heavy workload (small tables and strings made and
-- dropped) unprofiled and under mode = "alloc" at its default period.
-- Then four real programs (bench/programs/: the benchmarks game's
-- binary-trees, n-body and fannkuch-redux, and ldoc building this
-- project's reference), each unprofiled, under perf.profile at 999 Hz and
-- under the timer at 999 Hz, in rotating order, medians of CPU time.
-- Targets: perf.profile under 3% slowdown, and at least 10x less overhead
-- than the sethook profiler; counters and wall under 5%; alloc under 5%;
-- on each of the four programs, perf.profile under 2%.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath

-- ---- the workload: calls, table reads and writes, string scanning,
-- arithmetic; little garbage, so the collector does not blur the times ----
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local ARRAY = {}
for i = 1, 4096 do ARRAY[i] = i end

local function shuffle(rounds)
  local t, s = ARRAY, 0
  for r = 1, rounds do
    for i = 1, #t do
      local j = (i * 7 + r) % #t + 1
      t[i], t[j] = t[j], t[i]
      s = s + t[i]
    end
  end
  return s
end

local TEXT = ("the quick brown fox jumps over the lazy dog "):rep(64)

local function scan(rounds)
  local n = 0
  for _ = 1, rounds do
    for i = 1, #TEXT do
      if TEXT:byte(i) == 32 then n = n + 1 end
    end
  end
  return n
end

local function workload()
  return fib(29) + shuffle(1200) + scan(1200)
end

-- allocation-heavy: short-lived tables and strings
local function allocating()
  local n, keep = 0, {}
  for i = 1, 300000 do
    local t = { i, i + 1, tostring(i) }
    keep[i % 512 + 1] = t
    n = n + #t[3]
  end
  return n + #keep
end

local function cpu(fn, ...)
  collectgarbage()
  collectgarbage()
  local t0 = os.clock()
  local r = fn(...)
  return os.clock() - t0, r
end

-- the child of the perf tool comparison: run the workload, print its time
if arg[1] == "--child" then
  local t = cpu(workload)
  io.write(("%.6f\n"):format(t))
  return
end

local perf = require "perf"
local ROUNDS = math.tointeger(tonumber(arg[1] or "")) or 7

-- ---- the debug.sethook profiler ----
local function sethook_profile(fn, count)
  local stacks, samples = {}, 0
  local getinfo = debug.getinfo
  local function hook()
    local parts, level = {}, 2
    while true do
      local info = getinfo(level, "Sl")
      if not info then break end
      parts[#parts + 1] = info.short_src .. ":" .. info.currentline
      level = level + 1
    end
    local key = table.concat(parts, ";")
    stacks[key] = (stacks[key] or 0) + 1
    samples = samples + 1
  end
  debug.sethook(hook, "", count)
  local r = fn()
  debug.sethook()
  return samples, r
end

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  local n = #c
  if n % 2 == 1 then return c[(n + 1) // 2] end
  return (c[n // 2] + c[n // 2 + 1]) / 2
end

-- instructions per run, to give the sethook profiler 999 Hz
local plain0 = cpu(workload)
local instructions = 0
debug.sethook(function() instructions = instructions + 1 end, "", 1000)
workload()
debug.sethook()
instructions = instructions * 1000
local count = math.max(1, math.floor(instructions / (plain0 * 999)))

local order = { "plain", "perf", "counters", "wall", "sethook", "alloc_plain", "alloc" }
local times, samples = {}, {}

local function profiled(name, fn, opts)
  return function()
    collectgarbage()
    collectgarbage()
    local t0 = os.clock()
    local prof = assert(perf.profile(fn, opts))
    local t = os.clock() - t0
    local s = samples[name]
    s[#s + 1] = prof.samples
    return t
  end
end

for _, name in ipairs(order) do times[name], samples[name] = {}, {} end
local runs = {
  plain = function() return cpu(workload) end,
  perf = profiled("perf", workload),
  counters = profiled("counters", workload, { counters = { "page-faults", "context-switches" } }),
  wall = profiled("wall", workload, { mode = "wall" }),
  sethook = function()
    collectgarbage()
    collectgarbage()
    local t0 = os.clock()
    local n = sethook_profile(workload, count)
    local t = os.clock() - t0
    samples.sethook[#samples.sethook + 1] = n
    return t
  end,
  alloc_plain = function() return cpu(allocating) end,
  alloc = profiled("alloc", allocating, { mode = "alloc" }),
}
for round = 1, ROUNDS do
  for k = 0, #order - 1 do
    local name = order[(round + k) % #order + 1]
    local t = runs[name]()
    times[name][#times[name] + 1] = t
  end
end

local plain, alloc_plain = median(times.plain), median(times.alloc_plain)
local function overhead(name) return median(times[name]) / (name == "alloc" and alloc_plain or plain) - 1 end
local perf_over, hook_over = overhead("perf"), overhead("sethook")

print(os.date("!%Y-%m-%d %H:%M UTC"))
print(("bench/profile.lua: %d rounds of a CPU-bound Lua workload (%.0f ms, %.1f M VM instructions), medians of CPU time")
  :format(ROUNDS, plain * 1000, instructions / 1e6))
print(("%-40s %10s %10s %10s"):format("", "time (ms)", "slowdown", "samples"))
print(("%-40s %10.1f %10s %10s"):format("unprofiled", plain * 1000, "-", "-"))
local function row(label, name)
  print(("%-40s %10.1f %9.2f%% %10d"):format(label, median(times[name]) * 1000,
    overhead(name) * 100, median(samples[name])))
end
row("perf.profile, cpu-clock 999 Hz", "perf")
row("  + counters page-faults, context-sw.", "counters")
row("perf.profile, mode wall, 999 Hz", "wall")
row(("debug.sethook, every %d instr."):format(count), "sethook")
print(("%-40s %10.1f %10s %10s"):format("allocating workload, unprofiled", alloc_plain * 1000, "-", "-"))
row("perf.profile, mode alloc, 512 KiB", "alloc")

-- the perf tool, on the same workload in a child process
local function child(prefix)
  local p = io.popen(("%s %s bench/profile.lua --child 2>/dev/null"):format(prefix, arg[-1] or "lua5.4"))
  local t = tonumber(p:read("l") or "")
  p:close()
  return t
end
local have_perf = io.popen("command -v perf 2>/dev/null"):read("l")
if have_perf then
  local data = os.tmpname()
  local base, tool = {}, {}
  for _ = 1, ROUNDS do
    base[#base + 1] = child("env -u LD_PRELOAD")
    tool[#tool + 1] = child(("env -u LD_PRELOAD perf record -q -F 999 -e cpu-clock -o %s --"):format(data))
  end
  os.remove(data)
  if #base > 0 and #tool == #base then
    local b, t = median(base), median(tool)
    print(("%-40s %10.1f %9.2f%% %10s"):format("perf record -F 999 (child, C side)", t * 1000,
      (t / b - 1) * 100, "-"))
  end
end

-- ---- four real programs ----
local PROGRAMS = {
  { "binary-trees 13", "binary_trees", 13 },
  { "n-body 100000", "nbody", 100000 },
  { "fannkuch-redux 9", "fannkuch", 9 },
  { "ldoc on this project", "ldoc" },
}
local MODES = { "plain", "perf", "timer" }
local program_over = {}
print()
print(("%-40s %10s %10s %10s"):format("programs, medians of CPU time", "time (ms)", "slowdown", "samples"))
for _, p in ipairs(PROGRAMS) do
  local run = dofile("bench/programs/" .. p[2] .. ".lua")
  local t, n = {}, {}
  for _, m in ipairs(MODES) do t[m], n[m] = {}, {} end
  for round = 1, ROUNDS do
    for k = 0, #MODES - 1 do
      local m = MODES[(round + k) % #MODES + 1]
      collectgarbage()
      collectgarbage()
      local t0 = os.clock()
      if m == "plain" then
        run(p[3])
      else
        local prof = assert(perf.profile(run, m == "timer" and { event = "timer" } or nil, p[3]))
        n[m][#n[m] + 1] = prof.samples
      end
      t[m][#t[m] + 1] = os.clock() - t0
    end
  end
  local base = median(t.plain)
  print(("%-40s %10.1f %10s %10s"):format(p[1] .. ", unprofiled", base * 1000, "-", "-"))
  for _, m in ipairs { "perf", "timer" } do
    local o = median(t[m]) / base - 1
    if m == "perf" then program_over[#program_over + 1] = { p[1], o } end
    print(("%-40s %10.1f %9.2f%% %10d"):format(m == "perf" and "  perf.profile, cpu-clock 999 Hz" or
      "  perf.profile, timer 999 Hz", median(t[m]) * 1000, o * 100, median(n[m])))
  end
end

local function verdict(ok) return ok and "met" or "MISSED" end
for _, po in ipairs(program_over) do
  print(("target: perf.profile slowdown under 2%% on %s: %.2f%% (%s)"):format(po[1], po[2] * 100, verdict(po[2] < 0.02)))
end
print()
print(("target: perf.profile slowdown under 3%%: %.2f%% (%s)"):format(perf_over * 100, verdict(perf_over < 0.03)))
for _, t in ipairs { { "counters", 0.05 }, { "wall", 0.05 }, { "alloc", 0.05 } } do
  local o = overhead(t[1])
  print(("target: %s slowdown under %d%%: %.2f%% (%s)"):format(t[1], math.floor(t[2] * 100 + 0.5), o * 100,
    verdict(o < t[2])))
end
if perf_over > 0 then
  local ratio = hook_over / perf_over
  print(("target: at least 10x less overhead than debug.sethook: %.1fx (%s)"):format(ratio, verdict(ratio >= 10)))
else
  print(("target: at least 10x less overhead than debug.sethook: perf.profile's overhead is within the noise "
    .. "(%.2f%%) against %.1f%% (met)"):format(perf_over * 100, hook_over * 100))
end
