-- Who calls what, and who touches what: hardware breakpoints that sample
-- the instruction of every hit, named by the symbol tables of the files
-- mapped into this process.
--
--   lua5.4 examples/watch.lua            calls of getenv, reads of a string
--   lua5.4 examples/watch.lua strlen     calls of another C function
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"
local elf = require "perf.elf"

local fn = arg[1] or "getenv"

-- Runs `work` with `ev` enabled and prints the count and where each hit's
-- sample came from: the instruction, or (`caller`) the return address on
-- top of the user stack when a function is entered.
local function report(title, ev, work, caller)
  local rb <close> = assert(ev:mmap(16))
  assert(ev:enable())
  work()
  assert(ev:disable())
  local where, order = {}, {}
  for rec in rb:records() do
    if rec.type == "sample" then
      local addr = rec.ip
      if caller and rec.stack_user and #rec.stack_user.data >= 8 then
        addr = string.unpack("<I8", rec.stack_user.data) - 1   -- inside the call
      end
      local name = elf.describe(addr)
      if not where[name] then where[name] = 0; order[#order + 1] = name end
      where[name] = where[name] + 1
    end
  end
  print(("%s: %d hits"):format(title, (ev:read())))
  table.sort(order, function(a, b) return where[a] > where[b] end)
  for _, name in ipairs(order) do print(("  %6d  %s"):format(where[name], name)) end
end

-- 1. Calls of a C function: an execute breakpoint at its first instruction,
-- sampling 8 bytes of the user stack: the return address into the caller.
local calls <close> = assert(perf.watch(fn, { sample_type = { "ip", "stack_user" },
  sample_stack_user = 8 }))
report(("calls of %s, by caller"):format(fn), calls, function()
  for _ = 1, 20 do os.getenv("HOME") end
  for _ = 1, 5 do local _ = ("%s"):format("x") end
end, true)

-- 2. Reads and writes of a Lua string's first byte: a data watchpoint
-- sampling the instruction after each access.
local s = "watched " .. tostring({})
local touch <close> = assert(perf.watch(perf.addressof(s), { mode = "rw", len = 1,
  sample_type = { "ip" } }))
report("accesses to the first byte of " .. ("%q"):format(s), touch, function()
  for _ = 1, 7 do local _ = s:byte(1) end
  for _ = 1, 3 do local _ = s:sub(1, 2) end
  local _ = s:upper()
end)
