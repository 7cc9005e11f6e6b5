-- bench/perfdata.lua: reading a perf.data file of 1M samples, in one run:
-- file:samples(...) and file:records() against perf script -F printing
-- the same fields of the same file (its output to /dev/null).
--
--   lua5.4 bench/perfdata.lua [file]
--
-- Without a file, one is recorded first (perf record -c 1 of a write(2)
-- tracepoint while dd makes 1M one-byte writes) and kept in /tmp.
-- Targets: samples >= 3x, records >= 1.2x perf script's records per second.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local path = arg[1] or "/tmp/perf-lua-bench-1M.data"
if not io.open(path) then
  io.stderr:write("recording ", path, " ...\n")
  assert(os.execute(("perf record -q -m 4096 -e syscalls:sys_enter_write -c 1 -o %s -- "
    .. "dd if=/dev/zero of=/dev/null bs=1 count=1000000 2>/dev/null"):format(path)))
end

local function now()
  local p = io.popen("date +%s%N")
  local t = math.tointeger(tonumber(p:read("l")))
  p:close()
  return t
end

local f = assert(perf.data.open(path))
local n_samples = 0
local t0 = now()
for _ in f:samples("tid", "time", "ip", "period") do
  n_samples = n_samples + 1
end
local t_samples = now() - t0

local n_records = 0
t0 = now()
for _ in f:records() do n_records = n_records + 1 end
local t_records = now() - t0

local n_reused = 0
local t = {}
t0 = now()
for _ in f:records(t) do n_reused = n_reused + 1 end
local t_reused = now() - t0
f:close()

t0 = now()
local p = io.popen(("perf script -i %s -F tid,time,ip,period 2>/dev/null"):format(path))
local n_script = 0
for _ in p:lines() do n_script = n_script + 1 end
p:close()
local t_script = now() - t0

local function rate(n, ns) return n / (ns / 1e9) end
local base = rate(n_script, t_script)
print(("%s: %d samples, %d records"):format(path, n_samples, n_records))
print(("  perf script -F tid,time,ip,period  %9.0f samples/s  (%.2f s)"):format(base, t_script / 1e9))
for _, row in ipairs {
  { "file:samples(tid,time,ip,period)", n_samples, t_samples, 3 },
  { "file:records()", n_records, t_records, 1.2 },
  { "file:records(t) (reused table)", n_reused, t_reused, 1.2 },
} do
  local r = rate(row[2], row[3])
  print(("  %-33s %9.0f records/s (%.2f s)  %.1fx perf script (target %.1fx: %s)")
    :format(row[1], r, row[3] / 1e9, r / base, row[4], r / base >= row[4] and "met" or "MISSED"))
end
