-- bench/ring.lua: how fast records come out of the ring, four ways, and
-- whether cpu-clock at the kernel's maximum sample rate loses any.
--
--   lua5.4 bench/ring.lua [N]        (root; run by `make bench`)
--
-- 1. N samples (ip, tid, time, cpu, period) of syscalls:sys_enter_openat
--    are captured into one large ring, and its bytes copied out once.
-- 2. The same bytes are then consumed by the plain C decoder
--    (build/ring_decode), by the Lua fast path (rb:samples(fields...), plain
--    values), by a reused table (rb:records(t)) and by the Lua table path
--    (rb:records(), a table per record), each through a perf.ring over a
--    copy of the bytes (perf.core.stream).
-- 3. `perf record` records the same workload in a child and
--    `perf script -F ip,tid,time,cpu,period` prints it.
-- Times are CPU seconds of the consuming code (perf script: user + system
-- of its process), the best of REPEAT runs each, since other work on the
-- machine only ever adds time. Then cpu-clock samples a busy child at
-- perf_event_max_sample_rate with the default 8-page ring (32 KiB, about
-- 10 ms of samples; woken at every page, wakeup_watermark = 4096), consumed
-- by the table path for a few seconds; lost must be 0. The child runs at
-- nice 19 so that, when both want a CPU, the consumer gets it: what is
-- measured is whether the consumer keeps up, not the scheduler.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local N = math.tointeger(tonumber(arg[1] or "1000000"))
local REPEAT = math.tointeger(tonumber(arg[2] or "5"))
local OUT = "bench/out"
os.execute("mkdir -p " .. OUT)

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local s = p:read("a")
  p:close()
  return s
end

local function rate(n, secs) return n / secs end
local function fmt(n) return ("%.2fM"):format(n / 1e6) end

local FIELDS = { "ip", "tid", "time", "cpu", "period" }
local workload = ("for i = 1, %d do io.open('/dev/null'):close() end"):format(N)

-- 1. capture
local ev = assert(perf.open { "syscalls:sys_enter_openat", sample_period = 1,
                              sample_type = FIELDS })
local pages = 1
while pages * 4096 < N * 48 + (1 << 20) do pages = pages * 2 end
local rb = assert(ev:mmap(pages))
ev:enable()
load(workload)()
ev:disable()
local _, kernel_lost = rb:lost()
local bytes = rb:raw()
local layout = { sample_type = FIELDS }
local f = assert(io.open(OUT .. "/ring.raw", "wb"))
f:write(bytes)
f:close()
local sample_type = ev:attr().sample_type
if type(sample_type) ~= "number" then
  sample_type = 0
  local bits = { ip = 1, tid = 2, time = 4, cpu = 128, period = 256 }
  for _, k in ipairs(FIELDS) do sample_type = sample_type | bits[k] end
end
ev:close()
print(("captured %d bytes, %d records, %s lost (ring of %d pages)")
  :format(#bytes, #bytes // 48, tostring(kernel_lost), pages))

local results = {}

-- 2a. the plain C decoder
do
  local best, n = math.huge, 0
  for _ = 1, REPEAT do
    local out = sh(("build/ring_decode %s/ring.raw %d"):format(OUT, sample_type))
    local count, secs = out:match("^(%d+) ([%d.]+)")
    n, best = math.tointeger(tonumber(count)), math.min(best, tonumber(secs))
  end
  results[#results + 1] = { "plain C decoder: pl_decode", n, best }
end

-- 2b/2c. the Lua paths
local function lua_path(name, reuse)
  local best, n = math.huge, 0
  for _ = 1, REPEAT do
    collectgarbage()
    local s = perf.core.stream(bytes, layout)
    local t = reuse and {} or nil
    local sum = 0
    n = 0
    local t0 = os.clock()
    for r in s:records(t) do
      n = n + 1
      sum = sum + r.ip + r.tid + r.time + r.cpu + r.period
    end
    best = math.min(best, os.clock() - t0)
    s:close()
  end
  results[#results + 1] = { name, n, best }
end
do
  local best, n = math.huge, 0
  for _ = 1, REPEAT do
    collectgarbage()
    local s = perf.core.stream(bytes, layout)
    local sum = 0
    n = 0
    local t0 = os.clock()
    for ip, tid, time, cpu, period in s:samples("ip", "tid", "time", "cpu", "period") do
      n = n + 1
      sum = sum + ip + tid + time + cpu + period
    end
    best = math.min(best, os.clock() - t0)
    s:close()
  end
  results[#results + 1] = { "Lua fast path: rb:samples()", n, best }
end
lua_path("Lua reused table: records(t)", true)
lua_path("Lua table path: records()", false)

-- 3. perf record + perf script on the same workload
do
  local data = OUT .. "/perf.data"
  sh(("perf record -q -e syscalls:sys_enter_openat -c 1 -P --sample-cpu -m 64M -o %s -- lua5.4 -e %q 2>&1")
    :format(data, workload))
  local best = math.huge
  for _ = 1, REPEAT do
    local out = sh(("/usr/bin/time -f 'TIME %%e %%U %%S' perf script -i %s -F ip,tid,time,cpu,period > %s/perf.txt 2> %s/time.txt; cat %s/time.txt")
      :format(data, OUT, OUT, OUT))
    local _, user, sys = out:match("TIME ([%d.]+) ([%d.]+) ([%d.]+)")
    best = math.min(best, tonumber(user) + tonumber(sys))
  end
  local n = math.tointeger(tonumber(sh(("wc -l < %s/perf.txt"):format(OUT))))
  results[#results + 1] = { "perf record + perf script", n, best }
end

local script = results[#results]
local script_rate = rate(script[2], script[3])
print()
print(("best of %d runs each:"):format(REPEAT))
print(("%-30s %10s %9s %12s %10s"):format("consumer", "records", "CPU s", "records/s", "vs script"))
for _, r in ipairs(results) do
  local rr = rate(r[2], r[3])
  print(("%-30s %10d %9.3f %12s %9.2fx"):format(r[1], r[2], r[3], fmt(rr), rr / script_rate))
end

-- 4. zero lost at the maximum sample rate, default ring, table path
do
  local maxf = assert(io.open("/proc/sys/kernel/perf_event_max_sample_rate"))
  local max_rate = math.tointeger(maxf:read("n"))
  maxf:close()
  local p = io.popen("exec sh -c 'echo $$; exec nice -n 19 yes > /dev/null'")
  local pid = math.tointeger(p:read("n"))
  local cev = assert(perf.open({ "cpu-clock", freq = true, sample_freq = max_rate,
                                 sample_type = FIELDS, watermark = true,
                                 wakeup_watermark = 4096 }, { pid = pid }))
  local crb = assert(cev:mmap())
  cev:enable()
  local n, secs = 0, 3
  local t0 = os.time()
  while os.time() - t0 < secs do
    crb:poll(100)
    for _ in crb:records() do n = n + 1 end
  end
  cev:disable()
  for _ in crb:records() do n = n + 1 end
  local lost, kernel = crb:lost()
  os.execute("kill " .. pid)
  p:close()
  print()
  print(("cpu-clock at sample_freq %d (perf_event_max_sample_rate) on a busy child, default %d-page ring, table path:")
    :format(max_rate, crb:stats().pages))
  print(("  %d samples in ~%d s (%.0f/s), lost %d (PERF_RECORD_LOST), %s (PERF_FORMAT_LOST)")
    :format(n, secs, n / secs, lost, tostring(kernel)))
  cev:close()
end
