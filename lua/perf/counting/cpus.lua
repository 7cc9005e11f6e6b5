-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

--- perf.cpus: one event per online CPU, and their rings read in time order.
--
--     local cpus = perf.cpus                      -- or require "perf.cpus"
--     local set <close> = assert(cpus.open({ "cpu-clock", sample_period = 100000,
--       sample_type = { "ip", "tid", "time", "cpu" }, inherit = true }, { pid = pid }))
--     assert(set:mmap(16))
--     set:enable()
--     while set:poll(100) ~= nil do
--       for rec in set:records() do ... end      -- merged by time
--     end
--
-- This is what `perf record` does to follow a process and its children: an
-- inherited per-task event cannot be mapped on cpu -1, but one event per
-- CPU, each with its own ring, can. Records are merged by time within each
-- call of set:records() (a "round"): every ring is read up to the head it
-- had when the round began, so a later round may hold records older than
-- the last of the previous round only if a CPU published them late.
-- @module perf.cpus
local base = require "perf.event.base"
local core = require "perf.core"

local cpus = {}

--- "0-3,5,7-8" -> { 0, 1, 2, 3, 5, 7, 8 }
-- @string s a CPU list, as sysfs and perf -C write it
-- @treturn {integer,...} the CPU numbers
-- @raise on a malformed list (a range must not go down: "3-1" is refused,
-- as perf's CPU map parser refuses it)
-- @usage assert(#perf.cpus.parse_list "0-3,5" == 5)
function cpus.parse_list(s)
  local list = {}
  for part in s:gmatch("[^,%s]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    a, b = math.tointeger(a), math.tointeger(b)
    if a and a <= b then
      for c = a, b do list[#list + 1] = c end
    elseif part:match("^%d+$") then
      list[#list + 1] = math.tointeger(part)
    else
      error(("perf.cpus: malformed CPU list %q"):format(s), 2)
    end
  end
  return list
end

--- cpus.online() -> list of the online CPU numbers
-- @function online
-- @treturn {integer,...} the CPU numbers, from /sys/devices/system/cpu/online
-- @usage for _, c in ipairs(perf.cpus.online()) do print(c) end
cpus.online = require("perf.event.capabilities").online_cpus

local Set = {}
Set.__index = Set
Set.__name = "perf.cpus"

--- cpus.open(spec [, target]) -> set | nil, msg, errno
-- Opens `spec` (as perf.open takes it) once per CPU in target.cpus (default:
-- every online CPU), each with target.pid (default 0, this process; -1 for
-- every process). set[i] is the event on CPU set.cpus[i].
-- @param spec an event, as `perf.open` takes it
-- @tparam[opt] table target `pid` (default 0; -1 every process), `cpus` (a list; default every online CPU), other target fields of `perf.open`
-- @treturn[1] Set the set: `set[i]` is the event on CPU `set.cpus[i]`
-- @return[2] nil, message, errno when the kernel refuses one (the others are closed)
-- @raise on misuse (`target.cpu` instead of `target.cpus`)
-- @usage local set <close> = assert(perf.cpus.open("cpu-clock", { pid = -1 }))
function cpus.open(spec, target)
  target = target or {}
  if target.cpu ~= nil then
    error("perf.cpus.open: give target.cpus (a list), not target.cpu", 2)
  end
  local list = target.cpus or cpus.online()
  local set = setmetatable({ cpus = {}, rings = {} }, Set)
  for i, c in ipairs(list) do
    local t = {}
    for k, v in pairs(target) do if k ~= "cpus" then t[k] = v end end
    t.cpu = c
    if t.pid == nil then t.pid = 0 end
    local ok, ev, msg, errno = pcall(base.open, spec, t)
    if not ok then set:close() error(ev, 2) end
    if not ev then
      set:close()
      return nil, ("%s (on CPU %d)"):format(msg, c), errno
    end
    set[i] = ev
    set.cpus[i] = c
  end
  return set
end

local function each(set, method, ...)
  for i = 1, #set do
    local ok, msg, errno = set[i][method](set[i], ...)
    if not ok then
      return nil, ("%s (on CPU %d)"):format(msg, set.cpus[i]), errno
    end
  end
  return true
end

--- One event per CPU (`perf.cpus.open`).
-- @type Set

--- Enables the event on every CPU.
-- @treturn[1] boolean true
-- @return[2] nil, message, errno
function Set:enable() return each(self, "enable") end
--- Disables the event on every CPU.
-- @treturn[1] boolean true
-- @return[2] nil, message, errno
function Set:disable() return each(self, "disable") end
--- Resets the count on every CPU.
-- @treturn[1] boolean true
-- @return[2] nil, message, errno
function Set:reset() return each(self, "reset") end

--- set:mmap([pages]) -> true | nil, msg, errno: one ring per CPU, in set.rings
-- @tparam[opt=8] integer pages data pages per ring (a power of two)
-- @treturn[1] boolean true
-- @return[2] nil, message, errno (`EPERM`: the locked-memory limit; the hint says which)
function Set:mmap(pages)
  for i = 1, #self do
    if not self.rings[i] then
      local rb, msg, errno = self[i]:mmap(pages)
      if not rb then
        return nil, ("%s (on CPU %d)"):format(msg, self.cpus[i]), errno
      end
      self.rings[i] = rb
    end
  end
  return true
end

local function rings(self)
  if #self.rings == 0 then error("perf.cpus: no rings yet: call set:mmap() first", 3) end
  return self.rings
end

--- set:records([t]): every ring's available records, merged by time
-- @tparam[opt] table t a table to fill and yield again (no allocation per record)
-- @return an iterator for a generic `for`
-- @usage for rec in set:records() do print(rec.type, rec.time) end
function Set:records(t)
  return core.merge(rings(self), t)
end

--- set:samples(field, ...): the sample fields as values, merged by time
-- @param ... field names (`"ip"`, `"tid"`, `"time"`, ...)
-- @return an iterator yielding those fields of each sample
-- @usage for ip, tid in set:samples("ip", "tid") do end
function Set:samples(...)
  return core.merge(rings(self), ...)
end

--- set:poll([timeout_ms]) -> true | false | nil, "hangup"
-- @tparam[opt] integer timeout milliseconds (default: wait)
-- @treturn[1] boolean true when a ring has data, false on timeout
-- @return[2] nil, "hangup" when no event can produce more
function Set:poll(timeout)
  return core.poll(rings(self), timeout)
end

--- set:lost() -> sums of rb:lost() over the rings (the kernel count is
-- nil unless every ring has one)
-- @treturn integer records lost (PERF_RECORD_LOST)
-- @treturn integer|nil the kernel's count
-- @treturn integer samples lost
function Set:lost()
  local lost, kernel, samples = 0, 0, 0
  for _, rb in ipairs(rings(self)) do
    local l, k, s = rb:lost()
    lost, samples = lost + l, samples + s
    kernel = kernel and k and kernel + k or nil
  end
  return lost, kernel, samples
end

--- set:pending() -> unread bytes over all rings
-- @treturn integer bytes
function Set:pending()
  local n = 0
  for _, rb in ipairs(rings(self)) do n = n + rb:pending() end
  return n
end

--- set:read() -> value, time_enabled, time_running summed over the CPUs
-- @treturn[1] integer value
-- @treturn[1] integer time_enabled
-- @treturn[1] integer time_running
-- @return[2] nil, message, errno
function Set:read()
  local v, e, r = 0, 0, 0
  for i = 1, #self do
    local a, b, c = self[i]:read()
    if not a then return a, b, c end
    v, e, r = v + a, e + (b or 0), r + (c or 0)
  end
  return v, e, r
end

--- set:close(): closes the rings, then the events; idempotent
-- @treturn boolean true
function Set:close()
  for i = #self.rings, 1, -1 do self.rings[i]:close() self.rings[i] = nil end
  for i = #self, 1, -1 do self[i]:close() end
  return true
end
Set.__close = Set.close
Set.__gc = Set.close

function Set:__tostring()
  local state = self[1] and tostring(self[1]) or "empty"
  return ("perf.cpus (%d CPUs, %d rings): %s"):format(#self, #self.rings, state)
end

return cpus
