-- perf-lua list: the events this machine offers, as perf list prints them,
-- then its PMUs.
--
--   perf-lua list [KIND | PATTERN]
--
--   perf-lua list              every event, then the PMUs
--   perf-lua list sw           a kind: hw, sw, cache, pmu, tracepoint, ...
--   perf-lua list 'sched:*'    a glob, or a text found in the names
local arg = ...
if arg[1] == "-h" or arg[1] == "--help" then require("perf.cli").usage("list") end
if #arg > 1 then require("perf.cli").usage("list", "one kind or pattern at most") end
local perf = require "perf"

local list = perf.list(arg[1])
print(list)

local available = 0
for _, e in ipairs(list) do
  if e.available then available = available + 1 end
end
print(("\n%d events, %d of them open here"):format(#list, available))

if not arg[1] then
  print("\nPMUs:")
  for _, p in ipairs(perf.pmus()) do
    local formats, events = {}, {}
    for name, f in pairs(p.formats) do formats[#formats + 1] = name .. "=" .. f end
    for name in pairs(p.events) do events[#events + 1] = name end
    table.sort(formats)
    table.sort(events)
    print(("  %-12s type %-3d formats: %s; events: %s"):format(p.name, p.type,
      #formats > 0 and table.concat(formats, " ") or "-",
      #events > 0 and table.concat(events, " ") or "-"))
  end
end
