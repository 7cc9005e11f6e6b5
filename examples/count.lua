-- Count what a piece of Lua does: CPU time, page faults, context switches,
-- openat(2) calls (a tracepoint) and calls of libc's getenv (a breakpoint).
--
--   lua5.4 examples/count.lua
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local function tracepoint_id(name)
  local f = assert(io.open(perf.capabilities().tracefs .. "/events/" .. name .. "/id"))
  local id = math.tointeger(f:read("n"))
  f:close()
  return id
end

local events = {
  { "task-clock (ns)", { type = "software", config = perf.core.PERF_COUNT_SW_TASK_CLOCK } },
  { "page-faults", { type = "software", config = perf.core.PERF_COUNT_SW_PAGE_FAULTS } },
  { "context-switches", { type = "software", config = perf.core.PERF_COUNT_SW_CONTEXT_SWITCHES } },
  { "syscalls:sys_enter_openat", { type = "tracepoint", config = tracepoint_id("syscalls/sys_enter_openat") } },
  { "getenv calls", { type = "breakpoint", bp_type = "x", bp_len = 8, bp_addr = assert(perf.symbol("getenv")) } },
}

local opened = {}
for i, e in ipairs(events) do
  opened[i] = assert(perf.open(e[2]))
end

-- the work: open 100 files, look up 50 variables, touch 4 MB, sleep a bit
for _, ev in ipairs(opened) do assert(ev:enable()) end
for _ = 1, 100 do assert(io.open("/dev/null")):close() end
for _ = 1, 50 do os.getenv("HOME") end
local mem = string.rep("x", 4 << 20)
os.execute("sleep 0.05")
for _, ev in ipairs(opened) do assert(ev:disable()) end

print(("%-28s %14s"):format("event", "count"))
for i, e in ipairs(events) do
  local value = opened[i]:read()
  print(("%-28s %14d"):format(e[1], value))
  opened[i]:close()
end
assert(#mem == 4 << 20)
