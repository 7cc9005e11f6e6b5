-- bench/soak.lua: a long mixed workload, watching for slow leaks.
--
--   lua5.4 bench/soak.lua [MINUTES [REPORT_SECONDS]]    (root; default 10, 60)
--
-- Round after round, for MINUTES: single events opened, read and closed
-- (some left to the collector); groups read into a fresh and a reused
-- table; rings of one page that overflow (a tracepoint sampled at every
-- hit, many more hits than the ring holds), drained after the losses;
-- a profiler started and stopped, and perf.profile of a function; perf.stat
-- of `true`; perf.parse of good and malformed strings; then a 100 ms wait
-- in rb:poll on a ring that stays empty.
--
-- At the start, every REPORT_SECONDS and at the end it prints the open fds
-- (/proc/self/fd), the resident set (VmRSS), the perf mappings
-- (/proc/self/maps lines of [perf_event]) and the Lua heap, each taken after
-- a full collection. The first report after a warm-up of one report period
-- is the base: at the end fds and perf mappings must equal it, and RSS and
-- the Lua heap may not have grown by more than SLACK.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"
local fs = require "perf.util.fs"

local MINUTES = tonumber(arg[1] or "10")
local EVERY = tonumber(arg[2] or "60")
local SLACK = { rss_kb = 1024, heap_kb = 256 }   -- allowed growth after the warm-up
local PAUSE_MS = 100                             -- between rounds

local now = os.time                              -- whole seconds are enough here

-- ---- what is measured ----
local function vm_rss_kb()
  return math.tointeger(tonumber((fs.read("/proc/self/status") or ""):match("VmRSS:%s*(%d+)")))
end

local function perf_maps()
  local n = 0
  for line in (fs.read("/proc/self/maps") or ""):gmatch("[^\n]+") do
    if line:find("perf_event", 1, true) then n = n + 1 end
  end
  return n
end

local function sample()
  collectgarbage("collect")
  collectgarbage("collect")
  return { fds = #fs.listdir("/proc/self/fd"), rss_kb = vm_rss_kb(), maps = perf_maps(),
           heap_kb = math.floor(collectgarbage("count")) }
end

local function show(label, s, rounds)
  print(("%-8s %s  fds %4d  rss %7d kB  perf maps %3d  lua heap %6d kB  rounds %d")
    :format(label, os.date("!%H:%M:%S"), s.fds, s.rss_kb, s.maps, s.heap_kb, rounds))
  io.stdout:flush()
end

-- ---- the workload ----
local function opens(n)
  for _ = 1, n do io.open("/dev/null"):close() end
end

local names = { "task-clock", "page-faults", "context-switches", "cpu-clock",
                "syscalls:sys_enter_openat", "sched:sched_switch" }

local function singles()
  for i, name in ipairs(names) do
    local ev = assert(perf.open(name))
    ev:enable()
    opens(3)
    assert(ev:read())
    if i % 2 == 0 then ev:close() end        -- the others go to the collector
  end
end

local reused = {}
local function groups()
  local g <close> = assert(perf.group { "task-clock", "page-faults", "syscalls:sys_enter_openat" })
  g:enable()
  opens(5)
  g:disable()
  local t = assert(g:read())
  assert(t["syscalls:sys_enter_openat"] == 5)
  assert(g:read(reused) == reused)
  local h = assert(perf.group "{cs,faults,syscalls:sys_enter_close}")
  h:enable()
  opens(2)
  assert(h:read(reused))
  -- h is dropped open: the collector closes it
end

local function overflowing_ring()
  local ev <close> = assert(perf.open { "syscalls:sys_enter_openat", sample_period = 1,
                                        sample_type = { "tid", "time" } })
  local rb = assert(ev:mmap(1))
  ev:enable()
  opens(500)                                 -- 24 bytes each: 3 pages' worth
  local n = 0
  for _ in rb:records() do n = n + 1 end
  opens(5)                                   -- the LOST record comes with the next hit
  ev:disable()
  for _ in rb:records() do n = n + 1 end
  assert(n > 0 and rb:lost() > 0, "the ring should have overflowed")
  rb:close()
end

local function profiling()
  local p <close> = assert(perf.profiler { event = "syscalls:sys_enter_openat" })
  p:start()
  opens(20)
  local prof = p:stop()
  assert(prof.samples == 20)
  prof = perf.profile(function() opens(10) end, { event = "cpu-clock" })
  assert(prof.samples >= 0)
end

local function stat()
  local r = assert(perf.stat({ "true" }, { "task-clock", "page-faults" }))
  assert(r.status == 0)
end

local function parse()
  for _, s in ipairs { "cycles:ukppp", "{cycles,instructions}:S", "sched:sched_switch",
                       "mem:0x1000/8:rw", "cpu-clock/period=1000/u" } do
    assert(perf.parse(s))
  end
  for _, s in ipairs { "cycles:z", "sched:sched_swich", "mem:", "cpu/event=/" } do
    assert(not pcall(perf.parse, s))
  end
end

-- Between rounds, a wait on a ring that stays empty (nothing here execs),
-- which times out: the soak shares the machine, and poll's timeout is
-- exercised too.
local idle = assert(perf.open { "sched:sched_process_exec", sample_period = 1 })
local idle_ring = assert(idle:mmap(1))
idle:enable()
local function pause()
  assert(idle_ring:poll(PAUSE_MS) == false)
end

local workload = { singles, groups, overflowing_ring, profiling, stat, parse, pause }

-- ---- the run ----
print(("bench/soak.lua: %g minutes of open/read/close, group reads, overflowing rings, " ..
  "profiler start/stop, perf.stat, perf.parse; a report every %g s (%s UTC)")
  :format(MINUTES, EVERY, os.date("!%Y-%m-%d %H:%M")))
local t0 = now()
local rounds = 0
local first = sample()
show("start", first, rounds)
local base
local next_report = t0 + EVERY
while now() - t0 < MINUTES * 60 do
  for _, step in ipairs(workload) do step() end
  rounds = rounds + 1
  if now() >= next_report then
    next_report = next_report + EVERY
    local s = sample()
    if not base then
      base = s
      show("base", s, rounds)
    else
      show("", s, rounds)
    end
  end
end
local last = sample()
show("end", last, rounds)
base = base or first

local growth = {}
if last.fds ~= base.fds then growth[#growth + 1] = ("fds %d -> %d"):format(base.fds, last.fds) end
if last.maps ~= base.maps then growth[#growth + 1] = ("perf maps %d -> %d"):format(base.maps, last.maps) end
for _, k in ipairs { "rss_kb", "heap_kb" } do
  if last[k] - base[k] > SLACK[k] then
    growth[#growth + 1] = ("%s %d -> %d kB (more than %d kB)"):format(k:gsub("_kb", ""), base[k], last[k], SLACK[k])
  end
end
if #growth == 0 then
  print(("flat: after the warm-up, fds and perf mappings unchanged, RSS %+d kB, Lua heap %+d kB over %d rounds")
    :format(last.rss_kb - base.rss_kb, last.heap_kb - base.heap_kb, rounds))
else
  print("NOT flat: " .. table.concat(growth, "; "))
  os.exit(1)
end
