-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.pmu: the PMUs the kernel describes in sysfs.
--
-- Each directory of /sys/bus/event_source/devices is a PMU with a `type`
-- (the number for perf_event_attr.type), an optional `format/` directory
-- saying where each term's bits go ("config:0-7,21") and an optional
-- `events/` directory of named events ("event=0x3c,umask=0x00") with
-- optional NAME.scale and NAME.unit files.
--
-- The sysfs root can be changed (tests point it at a fake tree).

local M = {}

local DEFAULT_ROOT = "/sys/bus/event_source/devices"
local root = DEFAULT_ROOT
local cache -- name -> pmu, filled on first use

-- Sets the directory PMUs are read from (nil: the real one) and forgets
-- what was read before.
function M.set_root(path)
  root = path or DEFAULT_ROOT
  cache = nil
end

function M.root() return root end

local fs = require "perf.util.fs"
local read_file, listdir = fs.read, fs.listdir

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Parses a format string such as "config:0-7,32-35" or "config1:12".
-- Returns { field = "config", bits = {0,1,...,7,32,...,35} }, or nil and
-- a message.
function M.parse_format(s)
  s = trim(s)
  local field, spec = s:match("^(config%d?):(.+)$")
  if not field then return nil, ("bad format %q"):format(s) end
  local bits = {}
  for part in spec:gmatch("[^,]+") do
    local lo, hi = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if not lo then lo = part:match("^%s*(%d+)%s*$"); hi = lo end
    if not lo then return nil, ("bad format %q"):format(s) end
    lo, hi = tonumber(lo), tonumber(hi)
    if lo > hi or hi > 63 then return nil, ("bad format %q"):format(s) end
    for b = lo, hi do bits[#bits + 1] = b end
  end
  return { field = field, bits = bits, text = s }
end

-- Splits an event alias ("event=0x3c,umask=0x00,period=1000") into a list
-- of { name, value } where value is an integer, a string, or true (no
-- value given).
function M.parse_terms(s)
  local terms = {}
  for part in trim(s):gmatch("[^,]+") do
    part = trim(part)
    if part ~= "" then
      local k, v = part:match("^([^=]+)=(.*)$")
      if k then
        k, v = trim(k), trim(v)
        terms[#terms + 1] = { k, math.tointeger(tonumber(v)) or v }
      else
        terms[#terms + 1] = { part, true }
      end
    end
  end
  return terms
end

local function load_pmu(name)
  local dir = root .. "/" .. name
  local t = tonumber(read_file(dir .. "/type") or "")
  if not t then return nil end
  local pmu = { name = name, type = math.tointeger(t), formats = {},
    events = {}, event_info = {}, format_bits = {} }
  for _, f in ipairs(listdir(dir .. "/format")) do
    local s = read_file(dir .. "/format/" .. f)
    if s then
      pmu.formats[f] = trim(s)
      pmu.format_bits[f] = M.parse_format(s)
    end
  end
  local names = listdir(dir .. "/events")
  local present = {}
  for _, f in ipairs(names) do present[f] = true end
  for _, f in ipairs(names) do
    if not (f:find("%.scale$") or f:find("%.unit$") or f:find("%.per%-pkg$")
        or f:find("%.snapshot$")) then
      local s = read_file(dir .. "/events/" .. f)
      if s then
        pmu.events[f] = trim(s)
        local info = {}
        local sc = present[f .. ".scale"] and read_file(dir .. "/events/" .. f .. ".scale")
        if sc then info.scale = tonumber(trim(sc)) end
        local un = present[f .. ".unit"] and read_file(dir .. "/events/" .. f .. ".unit")
        if un then info.unit = trim(un) end
        if present[f .. ".per-pkg"] then info.per_pkg = true end
        if present[f .. ".snapshot"] then info.snapshot = true end
        pmu.event_info[f] = info
      end
    end
  end
  local mask = read_file(dir .. "/cpumask") or read_file(dir .. "/cpus")
  if mask then pmu.cpumask = trim(mask) end
  return pmu
end

local function all()
  if not cache then
    cache = {}
    for _, name in ipairs(listdir(root)) do
      local p = load_pmu(name)
      if p then cache[name] = p end
    end
  end
  return cache
end

-- The PMU called `name`, or nil.
function M.find(name) return all()[name] end

-- The PMU whose type is `type`, or nil.
function M.by_type(t)
  for _, p in pairs(all()) do
    if p.type == t then return p end
  end
end

-- Every PMU, sorted by name: { name, type, formats, events, event_info }.
function M.list()
  local out = {}
  for _, p in pairs(all()) do out[#out + 1] = p end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- Names of the PMUs, sorted.
function M.names()
  local out = {}
  for name in pairs(all()) do out[#out + 1] = name end
  table.sort(out)
  return out
end

-- The PMUs that have an event called `ev`, sorted by name.
function M.with_event(ev)
  local out = {}
  for _, p in ipairs(M.list()) do
    if p.events[ev] then out[#out + 1] = p end
  end
  return out
end

-- Puts `value` into the bits of `fmt` (from parse_format) within the
-- integer `word`, clearing those bits first. Returns the new word, or nil
-- and a message when the value does not fit.
function M.pack(fmt, word, value)
  local n = #fmt.bits
  if n < 64 and (value < 0 or value >> n ~= 0) then
    return nil, ("value 0x%x too big for %s (%d bits, at most 0x%x)")
      :format(value, fmt.text, n, (1 << n) - 1)
  end
  for i, bit in ipairs(fmt.bits) do
    word = word & ~(1 << bit)
    if (value >> (i - 1)) & 1 == 1 then word = word | (1 << bit) end
  end
  return word
end

-- Reads the value of `fmt` back out of `word` (the inverse of pack).
function M.unpack(fmt, word)
  local v = 0
  for i, bit in ipairs(fmt.bits) do
    if (word >> bit) & 1 == 1 then v = v | (1 << (i - 1)) end
  end
  return v
end

return M
