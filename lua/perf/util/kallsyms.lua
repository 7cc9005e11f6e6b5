-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

--- perf.kallsyms: kernel addresses to function names, from /proc/kallsyms,
-- as perf report and perf script name a sample's kernel ip.
--
--     local kallsyms = require "perf.kallsyms"       -- or perf.kallsyms
--     local ks = assert(kallsyms.load())
--     ks:lookup(rec.ip)   --> "do_sys_openat2", 0x34, nil  (name, offset, module)
--     ks:address "do_sys_openat2"                      --> its address
--
-- Addresses are Lua integers holding the 64-bit value, so kernel addresses
-- are negative: compare them with math.ult, as lookup does. The symbols
-- perf keeps are kept (text, weak, data, bss: t T w W d D b B); an address
-- belongs to the last of them at or below it. /proc/kallsyms shows
-- every address as 0 to a reader kptr_restrict hides them from; load()
-- then says so.
-- @module perf.kallsyms
local E = require("perf.core").errno

local M = {}

local Ksyms = {}
Ksyms.__index = Ksyms

-- the kinds perf keeps: text, weak, data and bss
local KEPT = { t = true, T = true, w = true, W = true, d = true, D = true, b = true, B = true }

--- kallsyms.load([path]) -> ks | nil, message, errno
-- @string[opt] path default /proc/kallsyms
-- @treturn[1] Ksyms the symbol table
-- @return[2] nil, message, errno when the file cannot be read, has no symbols, or shows every address as 0 (`EACCES`: kptr_restrict hides them)
-- @usage local ks = assert(perf.kallsyms.load())
function M.load(path)
  path = path or "/proc/kallsyms"
  local f, msg, errno = io.open(path)
  if not f then return nil, "perf.kallsyms: " .. msg, errno end
  local text = f:read("a")
  f:close()
  -- parallel lists, in the file's order (by address, but for modules)
  local addr, name, module, n, sorted, nonzero = {}, {}, {}, 0, true, false
  for a, ty, nm, rest in text:gmatch("(%x+) (%a) (%S+)([^\n]*)") do
    if KEPT[ty] then
      local v = math.tointeger(tonumber(a, 16))
      n = n + 1
      addr[n], name[n] = v, nm
      module[n] = rest:match("%[([^%]]+)%]")
      if n > 1 and math.ult(v, addr[n - 1]) then sorted = false end
      nonzero = nonzero or v ~= 0
    end
  end
  if n == 0 then
    return nil, ("perf.kallsyms: no symbols in %s"):format(path), E.ENODATA
  end
  if not nonzero then
    return nil, ("perf.kallsyms: %s shows every address as 0: kernel pointers are hidden "
      .. "from this reader (/proc/sys/kernel/kptr_restrict; root sees them at 0 or 1)"):format(path), 13
  end
  local order = {}
  for i = 1, n do order[i] = i end
  if not sorted then
    table.sort(order, function(i, j)
      if addr[i] ~= addr[j] then return math.ult(addr[i], addr[j]) end
      return i < j
    end)
  end
  -- one name per address: the last in the file, as perf's choice works out
  -- (the others get no length, and it prefers a symbol with one)
  local ks = setmetatable({ addr = {}, name = {}, module = {}, n = 0, aliases = {} }, Ksyms)
  local k = 0
  for _, i in ipairs(order) do
    if k == 0 or ks.addr[k] ~= addr[i] then
      k = k + 1
    elseif ks.aliases[ks.name[k]] == nil then
      ks.aliases[ks.name[k]] = addr[i]           -- for address()
    end
    ks.addr[k], ks.name[k], ks.module[k] = addr[i], name[i], module[i]
  end
  ks.n = k
  return ks
end

--- A kernel symbol table (`perf.kallsyms.load`).
-- @type Ksyms

--- ks:lookup(addr) -> name, offset, module | nil
-- The function holding kernel address `addr`: its name, addr's offset in
-- it, and the module it belongs to (nil for the kernel itself).
-- @int addr a kernel address
-- @treturn string the function's name (nil when addr is below every symbol)
-- @treturn integer the offset in it
-- @treturn string|nil its module
-- @raise when addr is not an integer
-- @usage print(ks:lookup(ks:address "do_sys_openat2" + 4))   --> do_sys_openat2  4  nil
function Ksyms:lookup(addr)
  if math.type(addr) ~= "integer" then
    error(("perf.kallsyms: lookup needs an integer address, got %s"):format(math.type(addr) or type(addr)), 2)
  end
  local a, lo, hi = self.addr, 1, self.n
  if math.ult(addr, a[1]) then return nil end
  while lo < hi do                       -- the last symbol at or below addr
    local mid = (lo + hi + 1) // 2
    if math.ult(addr, a[mid]) then hi = mid - 1 else lo = mid end
  end
  return self.name[lo], addr - a[lo], self.module[lo]
end

--- ks:address(name) -> the address of symbol `name` | nil
-- @string name a symbol
-- @treturn integer|nil its address
function Ksyms:address(name)
  if not self.by_name then
    local t = {}
    for i = self.n, 1, -1 do t[self.name[i]] = self.addr[i] end   -- the lowest wins
    self.by_name = t
  end
  return self.by_name[name] or self.aliases[name]
end

function Ksyms:__tostring()
  return ("perf.kallsyms (%d symbols)"):format(self.n)
end

return M
