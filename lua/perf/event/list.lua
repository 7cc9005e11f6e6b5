-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- Documented on the perf page.
-- @submodule perf

-- perf.list and perf.pmus: what this machine offers.
--
-- perf.list([pattern]) returns every event, sorted as perf list sorts
-- them (hardware, software, cache, PMU events, raw and breakpoint syntax,
-- tracepoints), each { name, kind, description, available, aliases,
-- why }. `available` says whether the event opens here: each generic and
-- PMU event is opened once (disabled, user space only) and the answer is
-- cached; tracepoints are probed as a kind, with one tracepoint. A probe
-- refused for privilege (EACCES, EPERM) is retried for user space only. The list
-- prints like perf list.
--
-- `pattern` is a kind ("hardware" or "hw", "software" or "sw", "cache",
-- "pmu", "tracepoint", "breakpoint", "raw"), a glob ("sched:sched_*"), or
-- a text found in the name (any case).

local events = require "perf.event.events"
local pmus = require "perf.event.pmu"
local tracepoint = require "perf.event.tracepoint"
local capabilities = require "perf.event.capabilities"
local core = require "perf.core"
local parse = require "perf.event.parse"

local M = {}

local KIND_ORDER = { hardware = 1, software = 2, tool = 3, cache = 4, pmu = 5, raw = 6,
  breakpoint = 7, tracepoint = 8 }
local KIND_LABEL = {
  hardware = "Hardware event", software = "Software event", tool = "Tool event",
  cache = "Hardware cache event", pmu = "Kernel PMU event",
  raw = "Raw hardware event descriptor", breakpoint = "Hardware breakpoint",
  tracepoint = "Tracepoint event",
}
local TOOL_ORDER = {}
for i, name in ipairs(events.tool_list) do TOOL_ORDER[name] = i end
local KIND_WORDS = {
  hardware = "hardware", hw = "hardware", software = "software", sw = "software",
  cache = "cache", hwcache = "cache", pmu = "pmu", raw = "raw",
  breakpoint = "breakpoint", tracepoint = "tracepoint", tool = "tool",
}

-- ------------------------------------------------------------------------
-- Probing

local probed = {}       -- "type:config" -> { ok, errno name }
local probe_fn          -- replaceable for tests

local function core_probe(attr)
  local a = { disabled = true }
  for k, v in pairs(attr) do
    if k ~= "name" and k ~= "scale" and k ~= "unit" then a[k] = v end
  end
  local ev, _, errno = core.open(a, nil, "perf.list probe")
  if not ev and (errno == core.errno.EACCES or errno == core.errno.EPERM) then
    -- refused for privilege: user space alone may still be allowed
    a.exclude_kernel, a.exclude_hv = true, true
    ev, _, errno = core.open(a, nil, "perf.list probe")
  end
  if ev then ev:close() return true end
  return false, core.errno_name(errno)
end
probe_fn = core_probe

-- Whether attr opens here, asked once per type and config.
local function available(attr)
  local key = ("%d:%d:%d"):format(attr.type, attr.config or 0, attr.config1 or 0)
  local r = probed[key]
  if not r then
    local ok, why = probe_fn(attr)
    r = { ok == true, why }
    probed[key] = r
  end
  return r[1], r[2]
end

-- Forgets probe results (and uses `fn(attr) -> ok, why` to probe, if given).
function M.forget(fn)
  probed = {}
  probe_fn = fn or core_probe
end

-- ------------------------------------------------------------------------
-- Entries

local Entry = {}
Entry.__index = Entry
Entry.__name = "perf.list.entry"

local function entry_label(e)
  local name = e.name
  if e.aliases and #e.aliases > 0 then
    name = name .. " OR " .. table.concat(e.aliases, " OR ")
  end
  return name
end

function Entry:__tostring()
  local s = ("  %-50s [%s]"):format(entry_label(self), KIND_LABEL[self.kind] or self.kind)
  if self.available == false then
    s = s .. " (not available here" .. (self.why and ": " .. self.why or "") .. ")"
  end
  return s
end

local function new(t) return setmetatable(t, Entry) end

-- Fills in `available` and `why` of an entry that carries a probe attr.
local function resolve(e)
  local attr = rawget(e, "probe")
  if attr then
    e.available, e.why = available(attr)
    e.probe = nil
  elseif e.available == nil then
    e.available = false
  end
end

local function generic_entries(out)
  for kind, list in pairs { hardware = events.hardware_list, software = events.software_list } do
    local type_ = events.types[kind]
    for _, e in ipairs(list) do
      out[#out + 1] = new { name = e[1], kind = kind, aliases = e.aliases,
        description = events.descriptions[e[1]], probe = { type = type_, config = e[2] },
        type = type_, config = e[2] }
    end
  end
  -- the perf tool's own counts: perf.stat takes them, perf.open does not
  for _, name in ipairs(events.tool_list) do
    out[#out + 1] = new { name = name, kind = "tool", available = true,
      description = events.tool[name] .. " (perf.stat counts it; perf.open does not)" }
  end
  for _, c in ipairs(events.cache.all()) do
    out[#out + 1] = new { name = c.name, kind = "cache", description = c.description,
      probe = { type = 3, config = c.config }, type = 3, config = c.config }
  end
end

local function pmu_entries(out)
  for _, p in ipairs(pmus.list()) do
    local names = {}
    for ev in pairs(p.events) do names[#names + 1] = ev end
    table.sort(names)
    for _, ev in ipairs(names) do
      local name = p.name .. "/" .. ev .. "/"
      local okp, attr = pcall(parse.parse, name)
      local info = p.event_info[ev] or {}
      local desc = p.events[ev]
      if info.unit then desc = desc .. (" (%s%s)"):format(info.unit,
        info.scale and info.scale ~= 1 and (", scale %.6g"):format(info.scale) or "") end
      out[#out + 1] = new { name = name, kind = "pmu", description = desc,
        probe = okp and attr or nil, available = not okp and false or nil,
        why = not okp and "cannot be parsed" or nil,
        pmu = p.name, scale = info.scale, unit = info.unit }
    end
  end
end

local function syntax_entries(out)
  out[#out + 1] = new { name = "rNNN", kind = "raw",
    description = "a raw PMU event: NNN is the hex config (the cpu PMU's format says which bits mean what)",
    probe = { type = 4, config = 0 } }
  out[#out + 1] = new { name = "pmu/term=value,.../", kind = "raw",
    description = "a PMU event by its sysfs format terms, e.g. cpu/event=0x3c,umask=0/",
    available = #pmus.names() > 0 }
  out[#out + 1] = new { name = "mem:<addr>[/len][:access]", kind = "breakpoint",
    description = "a hardware breakpoint on an address; access is r, w, rw or x",
    breakpoints = true }
end

local function tracepoint_entries(out, filter)
  local names = tracepoint.all()
  if #names == 0 then return end
  -- one open says whether tracepoints open here at all
  local sample
  for _, n in ipairs { "syscalls:sys_enter_getpid", "sched:sched_switch" } do
    for _, m in ipairs(names) do if m == n then sample = n end end
  end
  sample = sample or names[1]
  local ok, why = false, nil
  local sys, ev = sample:match("^(.-):(.*)$")
  local id = tracepoint.id(sys, ev)
  if id then ok, why = available { type = 2, config = id } end
  for _, n in ipairs(names) do
    if not filter or filter(n, "tracepoint") then
      out[#out + 1] = new { name = n, kind = "tracepoint", description = "tracepoint",
        available = ok, why = why }
    end
  end
end

-- ------------------------------------------------------------------------
-- Filtering and printing

local glob_to_pattern = require("perf.event.glob").to_pattern

local function make_filter(pattern)
  if pattern == nil then return nil end
  if type(pattern) ~= "string" then
    error(("perf.list: pattern must be a string, not %s"):format(type(pattern)), 3)
  end
  local kind = KIND_WORDS[pattern:lower()]
  -- as perf list sw, the software kind shows the tool's counts too
  if kind == "software" then return function(_, k) return k == kind or k == "tool" end, kind end
  if kind then return function(_, k) return k == kind end, kind end
  if pattern:find("[%*%?]") then
    local pat = glob_to_pattern(pattern:lower())
    return function(name) return name:lower():match(pat) ~= nil end
  end
  local low = pattern:lower()
  return function(name, _, e)
    if name:lower():find(low, 1, true) then return true end
    for _, a in ipairs(e and e.aliases or {}) do
      if a:lower():find(low, 1, true) then return true end
    end
    return false
  end
end

local List = {}
List.__index = List
List.__name = "perf.list"

function List:__tostring()
  if #self == 0 then
    return self.pattern and ("perf.list: no event matches %q"):format(self.pattern)
      or "perf.list: no events"
  end
  local lines = {}
  for _, e in ipairs(self) do lines[#lines + 1] = tostring(e) end
  return table.concat(lines, "\n")
end

--- Every event this machine offers, sorted as perf list sorts them.
--
-- Each entry is `{ name, kind, description, available, aliases, why }`;
-- `available` says whether it opens here (each event is opened once,
-- disabled, and the answer cached; tracepoints are probed as a kind). The
-- list prints like perf list.
-- @string[opt] pattern a kind (`"hw"`, `"sw"`, `"cache"`, `"pmu"`,
-- `"tracepoint"`, `"breakpoint"`, `"raw"`), a glob (`"sched:sched_*"`),
-- or a text found in the names (any case)
-- @treturn table the list of entries
-- @usage
-- for _, e in ipairs(perf.list "sw") do print(e.name, e.available) end
-- print(perf.list "sched:sched_switch")
function M.list(pattern)
  local filter, only = make_filter(pattern)
  local out = {}
  if not only or only ~= "tracepoint" then
    generic_entries(out)
    pmu_entries(out)
    syntax_entries(out)
  end
  local kept = {}
  for _, e in ipairs(out) do
    if not filter or filter(e.name, e.kind, e) then
      if e.breakpoints then
        e.breakpoints = nil
        local cap_ok, caps = pcall(function() return capabilities.get() end)
        e.available = cap_ok and caps.breakpoints or false
        e.why = cap_ok and caps.why and caps.why.breakpoints or nil
      end
      resolve(e)
      kept[#kept + 1] = e
    end
  end
  if not only or only == "tracepoint" then
    tracepoint_entries(kept, filter)
  end
  table.sort(kept, function(a, b)
    local ka, kb = KIND_ORDER[a.kind], KIND_ORDER[b.kind]
    if ka ~= kb then return ka < kb end
    if ka == KIND_ORDER.tool then return TOOL_ORDER[a.name] < TOOL_ORDER[b.name] end
    return a.name < b.name
  end)
  kept.pattern = pattern
  return setmetatable(kept, List)
end

-- perf.pmus() prints one line a PMU.
local Pmus = { __name = "perf.pmus" }

function Pmus:__tostring()
  local lines = {}
  for _, p in ipairs(self) do
    local nf, ne = 0, 0
    for _ in pairs(p.formats) do nf = nf + 1 end
    for _ in pairs(p.events) do ne = ne + 1 end
    lines[#lines + 1] = ("  %-24s type %-4d %d format field%s, %d event%s"):format(
      p.name, p.type, nf, nf == 1 and "" or "s", ne, ne == 1 and "" or "s")
  end
  return ("perf.pmus (%d)\n%s"):format(#self, table.concat(lines, "\n"))
end

--- The PMUs of /sys/bus/event_source/devices.
-- @treturn table a list of `{ name, type, formats = { field = "config:0-7" },
-- events = { name = "event=0x3c,..." }, event_info = { name = { scale, unit } },
-- cpumask }`
-- @usage
-- for _, p in ipairs(perf.pmus()) do print(p.name, p.type) end
function M.pmus()
  local out = {}
  for _, p in ipairs(pmus.list()) do
    local t = { name = p.name, type = p.type, formats = {}, events = {}, event_info = {},
      cpumask = p.cpumask }
    for k, v in pairs(p.formats) do t.formats[k] = v end
    for k, v in pairs(p.events) do t.events[k] = v end
    for k, v in pairs(p.event_info) do
      local i = {}
      for a, b in pairs(v) do i[a] = b end
      t.event_info[k] = i
    end
    out[#out + 1] = core.show(t, "perf.pmu")
  end
  return setmetatable(out, Pmus)
end

M.Entry, M.List = Entry, List

return M
