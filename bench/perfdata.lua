-- bench/perfdata.lua: reading perf.data files end to end, against perf
-- script printing the same fields of the same file.
--
--   lua5.4 bench/perfdata.lua [rounds] [file ...]       (make bench-perfdata)
--
-- Each measure is a whole process, timed from its start to its exit: a
-- Lua interpreter that requires perf, opens the file (perf.data.open) and
-- iterates over all of it, against `perf script -F <fields>` with its
-- output to /dev/null. Each is run `rounds` times (default 5), the runs
-- of the different readers alternating, and the median wall time is kept
-- (the targets' measure) with the median CPU time (user + system), which
-- a machine busy with other work changes less.
--
-- Without files, three are recorded first and kept in /tmp:
--   tracepoint  1M samples: perf record -c 1 of sys_enter_write while dd
--               makes 1M one-byte writes
--   callchain   perf record -g -c 20000 of cpu-clock while tar | gzip runs
--   compressed  perf record -z -g -c 10000 of cpu-clock while tar | gzip
--               runs three times over /usr/lib and /usr/share: its records
--               inflate to about 2 GB
-- Targets, end to end: f:samples >= 10x perf script, f:records(t) >= 3x,
-- f:records() >= 1.5x; the compressed file (f:samples) within 2x of perf
-- script (>= 0.5x).
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local rounds = math.tointeger(tonumber(arg[1] or "5"))
local LUA = os.getenv("LUA") or "lua5.4"

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out
end

local FILES = {
  { name = "tracepoint", path = "/tmp/perf-lua-bench-1M.data",
    record = "perf record -q -m 4096 -e syscalls:sys_enter_write -c 1 -o %s -- "
      .. "dd if=/dev/zero of=/dev/null bs=1 count=1000000 2>/dev/null" },
  { name = "callchain", path = "/tmp/perf-lua-bench-cc.data",
    record = "perf record -q -g -e cpu-clock -c 20000 -m 1024 -o %s -- "
      .. "sh -c 'tar cf - /usr/lib 2>/dev/null | gzip -1 >/dev/null'" },
  { name = "compressed", path = "/tmp/perf-lua-bench-z2g.data", z = true,
    record = "perf record -q -z -g -e cpu-clock -c 10000 -m 1024 -o %s -- "
      .. "sh -c 'for i in 1 2 3; do tar cf - /usr/lib /usr/share 2>/dev/null | gzip -1 >/dev/null; done'" },
}
if arg[2] then
  FILES = {}
  for i = 2, #arg do FILES[#FILES + 1] = { name = arg[i], path = arg[i] } end
end

-- the fields: tid, time, ip, and period where every event samples it
local function fields_of(path)
  local f = assert(perf.data.open(path))
  local list = { "tid", "time", "ip" }
  local period = true
  for _, a in ipairs(f.attrs) do
    if a.attr.sample_type & 0x100 == 0 then period = false end       -- PERF_SAMPLE_PERIOD
  end
  if period then list[#list + 1] = "period" end
  local inflated = f._h:info().data_size
  f:close()
  return list, inflated
end

-- the reader as a process: open, iterate, print the count
local function reader(path, how, fields)
  local q = {}
  for i, k in ipairs(fields) do q[i] = ("%q"):format(k) end
  local loop = ({
    samples = ("for _ in f:samples(%s) do n = n + 1 end"):format(table.concat(q, ", ")),
    records = "for _ in f:records() do n = n + 1 end",
    reused = "local t = {} for _ in f:records(t) do n = n + 1 end",
  })[how]
  local code = ("package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path "
    .. "package.cpath = './?.so;' .. package.cpath "
    .. "local perf = require 'perf' local f = assert(perf.data.open(%q)) local n = 0 %s print(n)")
    :format(path, loop)
  return ("%s -e %q"):format(LUA, code)
end

-- one run of cmd under /usr/bin/time: its wall and CPU (user + system)
-- seconds, and its output
local TIMES = os.tmpname()
local function run(cmd)
  local out = sh(("/usr/bin/time -f '%%e %%U %%S' -o %s sh -c %q 2>/dev/null"):format(TIMES, cmd))
  local f = assert(io.open(TIMES))
  local wall, user, sys = f:read("a"):match("([%d.]+) ([%d.]+) ([%d.]+)%s*$")
  f:close()
  return tonumber(wall), tonumber(user) + tonumber(sys), out
end

local function median(list)
  table.sort(list)
  return list[(#list + 1) // 2]
end

print(("perf.data end to end (process start, open, whole iteration), median of %d rounds, %s")
  :format(rounds, os.date("!%Y-%m-%d %H:%M UTC")))
for _, file in ipairs(FILES) do
  if not io.open(file.path) then
    io.stderr:write("recording ", file.path, " ...\n")
    assert(os.execute(file.record:format(file.path)))
  end
  local fields, inflated = fields_of(file.path)
  local size = tonumber(sh("stat -c %s " .. file.path))
  local readers = {
    { "perf script -F " .. table.concat(fields, ","),
      ("perf script -i %s -F %s > /dev/null"):format(file.path, table.concat(fields, ",")) },
    { "f:samples(" .. table.concat(fields, ",") .. ")", reader(file.path, "samples", fields), 10 },
  }
  if file.z then
    readers[2][3] = 0.5
  else
    readers[3] = { "f:records()", reader(file.path, "records", fields), 1.5 }
    readers[4] = { "f:records(t) (reused table)", reader(file.path, "reused", fields), 3 }
  end
  local times, cpu, counts = {}, {}, {}
  for r = 1, rounds do
    for i, rd in ipairs(readers) do
      local wall, used, out = run(rd[2])
      times[i], cpu[i] = times[i] or {}, cpu[i] or {}
      times[i][r], cpu[i][r] = wall, used
      counts[i] = math.tointeger(tonumber(out:match("%d+")))
    end
  end
  print(("%s: %s, %.0f MB (%.0f MB of records%s), %d samples, %d records"):format(
    file.name, file.path, size / 1e6, inflated / 1e6, file.z and " once inflated" or "",
    counts[2], counts[3] or 0))
  local base, base_cpu = median(times[1]), median(cpu[1])
  print(("  %-36s %7.2f s wall %7.2f s CPU"):format(readers[1][1], base, base_cpu))
  for i = 2, #readers do
    local t, c = median(times[i]), median(cpu[i])
    local x = base / t
    print(("  %-36s %7.2f s wall %7.2f s CPU  %5.1fx perf script (%.1fx in CPU; target %.1fx: %s)")
      :format(readers[i][1], t, c, x, base_cpu / c, readers[i][3], x >= readers[i][3] and "met" or "MISSED"))
  end
end
