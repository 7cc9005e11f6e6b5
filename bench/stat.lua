-- Counting a command: perf.stat against the same work written in C and
-- against the perf tool, in one run. The C side is bench/stat_baseline.c
-- (fork, open the counters on the child, let it exec, wait, read), built as
-- a small module by `make bench`; the tool is `perf stat -x,` run directly
-- (no shell), its output dropped. Each run of the command alternates
-- between the three; each keeps its fastest run and its median one.
--
--   lua5.4 bench/stat.lua [runs]
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;bench/?.so;" .. package.cpath
local perf = require "perf"
local base = require "stat_baseline"

local RUNS = math.tointeger(tonumber(arg[1] or "")) or 200
-- perf stat's default software events. (A tracepoint would measure mostly
-- the kernel switching the tracepoint on and off around each run, some
-- 10-20 ms, the same for all three.)
local EVENTS = { "task-clock", "context-switches", "cpu-migrations", "page-faults" }
local ARGV = { "true" }

local configs = {}
for i, e in ipairs(EVENTS) do
  local attr = perf.parse(e)
  configs[i] = { math.tointeger(attr.type) or perf.core["PERF_TYPE_" .. attr.type:upper()], attr.config }
end
local tool_argv = { "perf", "stat", "-x,", "-o", "/dev/null", "-e", table.concat(EVENTS, ",") }
for _, a in ipairs(ARGV) do tool_argv[#tool_argv + 1] = a end

local now = base.now
local FAULTS = #EVENTS
local seen = {}                              -- the page faults each side saw

local sides = {
  { "C: fork, perf_event_open, exec, wait, read", function()
    seen.c = select(FAULTS, base.stat(ARGV, configs))
  end },
  { "perf.stat", function()
    local r = assert(perf.stat(ARGV, EVENTS))
    seen.lua = r[FAULTS]
  end },
  { "perf stat -x, (the tool)", function()
    local child = assert(perf.core.spawn(tool_argv))
    assert(child:start())
    local w = assert(child:wait())
    child:close()
    assert(w.status == 0, "perf stat failed")
  end },
}

local ns = {}
for k = 1, #sides do ns[k] = {} end
for run = 1, RUNS do
  for k, side in ipairs(sides) do
    local t0 = now()
    side[2]()
    ns[k][run] = now() - t0
  end
end

print(("counting a command: ms per run of `%s` with %s, fastest (median) of %d runs, alternating")
  :format(table.concat(ARGV, " "), table.concat(EVENTS, ","), RUNS))
local best = {}
for k = 1, #sides do
  table.sort(ns[k])
  best[k] = ns[k][1]
end
for k, side in ipairs(sides) do
  print(("%-44s %8.3f (%8.3f) %8.2fx C"):format(side[1], best[k] / 1e6,
    ns[k][RUNS // 2 + 1] / 1e6, best[k] / best[1]))
end
print(("page faults of `%s` in the last run: C %d, perf.stat %d"):format(table.concat(ARGV, " "), seen.c, seen.lua))
