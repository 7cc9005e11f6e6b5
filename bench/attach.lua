-- bench/attach.lua: what profiling a running process costs it.
--
--   lua5.4 bench/attach.lua [rounds] [seconds]     (make bench-attach; root)
--
-- A Lua 5.4 target (Debian's lua5.4, a child of this script) does fixed
-- work in a loop — calls and arithmetic, and an io.open of /dev/null per
-- small step, about 10,000 a second here — and writes a byte per round.
-- Its throughput (rounds per wall second, as its users see it) is taken
-- alone, and with perf.profile({ pid = P }) attached: cpu-clock at 99 Hz
-- and at 999 Hz, and syscalls:sys_enter_openat at period 1 (a sample at
-- every open). Windows of `seconds` (default 2) per setting, `rounds`
-- (default 3) of each in rotating order, medians. Also the mean time the
-- target is held per sample, as the tracer measures it (from its stop
-- seen to its resume). Targets: at most 1% slower at 99 Hz, 5% at 999 Hz.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath

local perf = require "perf"
local core = require "perf.core"

local ROUNDS = math.tointeger(tonumber(arg[1] or "")) or 3
local SECONDS = tonumber(arg[2] or "") or 2

local TARGET = [[
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local out = io.stdout
out:setvbuf("no")
while true do
  for _ = 1, 20 do
    fib(14)
    io.open("/dev/null"):close()
  end
  out:write(".")
end
]]

local script = os.tmpname()
do
  local f = assert(io.open(script, "w"))
  f:write(TARGET)
  f:close()
end
local pidfile = os.tmpname()
local pipe = io.popen(("lua5.4 %s & echo $! > %s"):format(script, pidfile))
local pid
repeat                                        -- its output is the rounds: the pid comes apart
  local f = io.open(pidfile)
  pid = f and math.tointeger(tonumber(f:read("l") or ""))
  if f then f:close() end
until pid
os.remove(pidfile)

-- rounds the target completes in `seconds` of wall time, read as they come
local function window(seconds)
  local t0 = core.profile_now()
  local n = 0
  while core.profile_now() - t0 < seconds * 1e9 do
    local s = pipe:read(1)
    if not s then error("the target ended") end
    n = n + 1
  end
  return n / ((core.profile_now() - t0) / 1e9)
end

local SETTINGS = {
  { name = "alone" },
  { name = "cpu-clock 99 Hz", opts = { freq = 99 } },
  { name = "cpu-clock 999 Hz", opts = { freq = 999 } },
  { name = "openat, period 1", opts = { event = "syscalls:sys_enter_openat" } },
}

local rates, stops, samples = {}, {}, {}
window(0.5)                                   -- warm up
for r = 1, ROUNDS do
  for k = 0, #SETTINGS - 1 do
    local s = SETTINGS[(r + k - 1) % #SETTINGS + 1]
    local p
    if s.opts then
      local o = { pid = pid }
      for key, v in pairs(s.opts) do o[key] = v end
      p = assert(perf.profiler(o))
      assert(p:start())
    end
    local rate = window(SECONDS)
    rates[s.name] = rates[s.name] or {}
    table.insert(rates[s.name], rate)
    if p then
      local prof = assert(p:stop())
      p:close()
      stops[s.name] = stops[s.name] or {}
      table.insert(stops[s.name], prof.attached.stop_ns_mean / 1000)
      samples[s.name] = (samples[s.name] or 0) + prof.samples + prof.attached.outside
    end
  end
end
os.execute("kill " .. pid)
pipe:close()
os.remove(script)

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  local n = #c
  if n % 2 == 1 then return c[(n + 1) // 2] end
  return (c[n // 2] + c[n // 2 + 1]) / 2
end

local TARGETS = { ["cpu-clock 99 Hz"] = 1, ["cpu-clock 999 Hz"] = 5 }
local base = median(rates.alone)
print(("perf.profile({ pid = P }) on lua5.4 (%s), %d x %.1f s windows, %s UTC"):format(_VERSION, ROUNDS,
  SECONDS, os.date("!%Y-%m-%d %H:%M")))
print(("  %-18s %12s %9s %14s %10s"):format("setting", "rounds/s", "slower", "held/sample", "samples/s"))
for _, s in ipairs(SETTINGS) do
  local rate = median(rates[s.name])
  local slower = (base - rate) / base * 100
  local held = stops[s.name] and ("%.1f us"):format(median(stops[s.name])) or "-"
  local per_s = samples[s.name] and ("%.0f"):format(samples[s.name] / (ROUNDS * SECONDS)) or "-"
  local verdict = ""
  if TARGETS[s.name] then
    verdict = slower <= TARGETS[s.name] and ("  (target <= %d%%: met)"):format(TARGETS[s.name])
      or ("  (target <= %d%%: MISSED)"):format(TARGETS[s.name])
  end
  print(("  %-18s %12.1f %8.2f%% %14s %10s%s"):format(s.name, rate, s.opts and slower or 0, held, per_s, verdict))
end
print(("  openat alone: %.0f a second"):format(base * 20))
