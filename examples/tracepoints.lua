-- A tracepoint with decoded fields: its format from tracefs, then every
-- sample this script causes, decoded from the raw bytes.
--
--   lua5.4 examples/tracepoints.lua                              openat(2) calls
--   lua5.4 examples/tracepoints.lua syscalls:sys_exit_openat     their results
--   lua5.4 examples/tracepoints.lua sched:sched_switch           its switches
--
-- The workload is this script's own: it opens three files, then sleeps
-- three times in a child (waiting switches it out). A tracepoint that
-- neither fires gets no sample, and the script says so.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local name = arg[1] or "syscalls:sys_enter_openat"
local tp = assert(perf.tracepoint(name))

print(("%s (id %d)"):format(tp.name, tp.id))
for _, f in ipairs(tp.fields) do
  if not f.common then
    print(("  %-28s offset %3d  size %2d  %s"):format(f.type, f.offset, f.size,
      f.signed and "signed" or "unsigned"))
  end
end

local ev <close> = assert(perf.open(name))        -- samples raw, time, cpu, period
local rb <close> = assert(ev:mmap(16))
local paths = { "/etc/hostname", "/etc/passwd", "/no/such/file" }
assert(ev:enable())
for _, p in ipairs(paths) do
  local f = io.open(p)
  if f then f:close() end
end
for _ = 1, 3 do os.execute("sleep 0.01") end
assert(ev:disable())

print(("\n%d samples; the paths live at %s"):format((ev:read()),
  table.concat((function()
    local t = {}
    for i, p in ipairs(paths) do t[i] = ("%s=0x%x"):format(p, perf.addressof(p)) end
    return t
  end)(), ", ")))
local fields = {}
for rec in rb:records() do
  if rec.type == "sample" then
    local d = tp:decode(rec.raw, fields)
    local parts = {}
    for _, f in ipairs(tp.fields) do
      if not f.common then
        local v = d[f.name]
        parts[#parts + 1] = ("%s=%s"):format(f.name, math.type(v) == "integer"
          and (f.pointer and ("0x%x"):format(v) or tostring(v)) or ("%q"):format(v))
      end
    end
    print(("  cpu %d pid %d: %s"):format(rec.cpu, d.common_pid, table.concat(parts, " ")))
  end
end
if (ev:read()) == 0 then
  print(("no sample: %s did not fire in this process, which only opens files "
    .. "and waits for a child; count it on a command instead: "
    .. "bin/perf-lua stat -e %s -- COMMAND"):format(name, name))
end
