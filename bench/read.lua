-- Reading counters: ev:read() and g:read(t) against a C read(2) loop on the
-- same events, in one run. The C loop is bench/read_baseline.c, built as a
-- small module by `make bench`, so both sides read the very same fd.
--
-- Chunks of reads alternate between C and Lua; each side keeps its fastest
-- chunk (the cost without interference from the rest of the machine) and
-- its median one. Both are timed with the same clock (CLOCK_MONOTONIC).
-- "added ns" is what the Lua side costs beyond the C read(2), fastest
-- chunk against fastest chunk: the ratio alone depends on what a system
-- call costs on the machine.
--
--   lua5.4 bench/read.lua [chunks] [reads per chunk]
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;bench/?.so;" .. package.cpath
local perf = require "perf"
local base = require "read_baseline"

local CHUNKS = math.tointeger(tonumber(arg[1] or "")) or 2000
local READS = math.tointeger(tonumber(arg[2] or "")) or 200

local function tracepoint_id(name)
  local f = assert(io.open(perf.capabilities().tracefs .. "/events/" .. name .. "/id"))
  local id = math.tointeger(f:read("n"))
  f:close()
  return id
end

-- the single event: task-clock, with the library's default read_format
local ev <close> = assert(perf.open { type = "software", config = perf.core.PERF_COUNT_SW_TASK_CLOCK })
assert(ev:enable())

-- the group: four members from three PMUs
local g <close> = assert(perf.group {
  { type = "software", config = perf.core.PERF_COUNT_SW_TASK_CLOCK, name = "task-clock" },
  { type = "software", config = perf.core.PERF_COUNT_SW_PAGE_FAULTS, name = "page-faults" },
  { type = "software", config = perf.core.PERF_COUNT_SW_CONTEXT_SWITCHES, name = "context-switches" },
  { type = "tracepoint", config = tracepoint_id("syscalls/sys_enter_openat"), name = "syscalls:sys_enter_openat" },
})
assert(g:enable())

local now, loop = base.now, base.loop
local ev_fd, g_fd = ev:fileno(), g[1]:fileno()
local t = {}
g:read(t)

local bodies = {
  c_single = function(n) loop(ev_fd, n) end,
  lua_single = function(n) for _ = 1, n do ev:read() end end,
  c_group = function(n) loop(g_fd, n) end,
  lua_group = function(n) for _ = 1, n do g:read(t) end end,
}
local order = { "c_single", "lua_single", "c_group", "lua_group" }

local ns = {}
for _, k in ipairs(order) do ns[k] = {} end
for c = 1, CHUNKS do
  for _, k in ipairs(order) do
    local body = bodies[k]
    local t0 = now()
    body(READS)
    ns[k][c] = (now() - t0) / READS
  end
end
local best, median = {}, {}
for _, k in ipairs(order) do
  table.sort(ns[k])
  best[k], median[k] = ns[k][1], ns[k][CHUNKS // 2 + 1]
end

print(("reading counters: ns per read, fastest chunk (median chunk) of %d chunks "
  .. "of %d reads, C and Lua alternating on the same fds"):format(CHUNKS, READS))
print(("%-36s %16s %16s %9s %7s %7s"):format("", "C read(2)", "Lua", "added ns", "ratio", "target"))
local function row(what, c, l, target)
  local r = best[l] / best[c]
  print(("%-36s %7.1f (%6.1f) %7.1f (%6.1f) %9.1f %6.2fx %6.2fx  %s"):format(what,
    best[c], median[c], best[l], median[l], best[l] - best[c], r, target,
    r <= target and "met" or "MISSED"))
end
row("ev:read()  task-clock", "c_single", "lua_single", 1.10)
row("g:read(t)  4 members from 3 PMUs", "c_group", "lua_group", 1.15)
