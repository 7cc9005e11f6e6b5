-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

-- perf.topology: where each CPU sits (socket, die, core), read from sysfs
-- (/sys/devices/system/cpu/cpuN/topology), and CPUs gathered by that place
-- as perf stat --per-socket, --per-die, --per-core and -A gather them.
--
--   topology.of(3)                      --> { cpu = 3, socket = 0, die = 0, core = 1 }
--   topology.aggregate("core", { 0, 1, 2, 3 })
--     --> { { key = "S0-D0-C0", nr = 2, cpus = { 0, 2 }, socket = 0, die = 0, core = 0 }, ... }
--
-- Keys are perf's: "S0-D0-C1" (core), "S0-D0" (die), "S0" (socket),
-- "CPU3" (cpu, perf stat -A); places come in perf's order (socket, die,
-- core, then CPU number). A kernel without die_id (before 5.2) has one die
-- per socket, 0; a missing file elsewhere reads as -1, as perf reads it.
local fs = require "perf.util.fs"

local M = {}

local DEFAULT_ROOT = "/sys/devices/system/cpu"
local root = DEFAULT_ROOT

-- Points the module at another sysfs cpu directory (tests); nil restores.
function M.set_root(path) root = path or DEFAULT_ROOT end

local function number(cpu, file)
  return math.tointeger(tonumber(fs.read_trimmed(("%s/cpu%d/topology/%s"):format(root, cpu, file)) or ""))
end

--- topology.of(cpu) -> { cpu, socket, die, core }
function M.of(cpu)
  return { cpu = cpu, socket = number(cpu, "physical_package_id") or -1,
    die = number(cpu, "die_id") or 0, core = number(cpu, "core_id") or -1 }
end

-- kind -> the key of a place, and the fields that make it one place
local KINDS = {
  cpu = { fields = { "cpu" }, key = function(t) return ("CPU%d"):format(t.cpu) end },
  core = { fields = { "socket", "die", "core" },
    key = function(t) return ("S%d-D%d-C%d"):format(t.socket, t.die, t.core) end },
  die = { fields = { "socket", "die" }, key = function(t) return ("S%d-D%d"):format(t.socket, t.die) end },
  socket = { fields = { "socket" }, key = function(t) return ("S%d"):format(t.socket) end },
}

--- topology.kinds: the names aggregate takes
M.kinds = { "cpu", "core", "die", "socket" }

function M.is_kind(kind) return KINDS[kind] ~= nil end

--- topology.aggregate(kind, cpus) -> list of places
-- Each place { key =, nr = (how many of `cpus` it holds), cpus = {...},
-- and its socket, die, core (or cpu) }, in perf's order.
function M.aggregate(kind, cpus)
  local k = KINDS[kind] or error(("perf.topology: no aggregation '%s' (%s)")
    :format(tostring(kind), table.concat(M.kinds, ", ")), 2)
  local places, by_key = {}, {}
  for _, cpu in ipairs(cpus) do
    local t = M.of(cpu)
    local key = k.key(t)
    local place = by_key[key]
    if not place then
      place = { key = key, nr = 0, cpus = {} }
      for _, f in ipairs(k.fields) do place[f] = t[f] end
      by_key[key], places[#places + 1] = place, place
    end
    place.nr = place.nr + 1
    place.cpus[place.nr] = cpu
  end
  table.sort(places, function(a, b)
    for _, f in ipairs(k.fields) do
      if a[f] ~= b[f] then return a[f] < b[f] end
    end
    return false
  end)
  for _, place in ipairs(places) do table.sort(place.cpus) end
  return places
end

return M
