-- Count what a piece of Lua does: CPU time, page faults, context switches,
-- openat(2) calls (a tracepoint) and calls of libc's getenv (a breakpoint).
--
--   lua5.4 examples/count.lua
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local specs = {
  "task-clock",
  "page-faults",
  "context-switches",
  "syscalls:sys_enter_openat",
  { type = "breakpoint", bp_type = "x", bp_len = 8, bp_addr = assert(perf.symbol("getenv")),
    name = "getenv calls" },
}

local events = {}
for i, spec in ipairs(specs) do events[i] = assert(perf.open(spec)) end

-- the work: open 100 files, look up 50 variables, touch 4 MB, sleep a bit
for _, ev in ipairs(events) do assert(ev:enable()) end
for _ = 1, 100 do assert(io.open("/dev/null")):close() end
for _ = 1, 50 do os.getenv("HOME") end
local mem = string.rep("x", 4 << 20)
os.execute("sleep 0.05")
for _, ev in ipairs(events) do assert(ev:disable()) end

print(("%-28s %14s"):format("event", "count"))
for _, ev in ipairs(events) do
  print(("%-28s %14d"):format(ev:name(), (ev:read())))
  ev:close()
end
assert(#mem == 4 << 20)
