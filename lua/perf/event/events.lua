-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.events: the kernel's generic event names, as perf spells them.
--
-- Every table maps names to the numbers the kernel expects in
-- perf_event_attr.type and .config.
--
--   local events = require "perf.events"
--   events.software["task-clock"]            --> 1
--   events.cache.decode("L1-dcache-load-misses") --> 0x10000
--   events.cache.name_of(0x10000)                  --> "L1-dcache-load-misses"

local M = {}

local core = require "perf.core"

-- perf_event_attr.type of the generic event kinds, and the generic
-- hardware and software events ({ name, config, aliases = {...} }): the
-- C core holds these tables, as ev:modify_attributes resolves names too.
M.types = core.types
M.hardware_list = core.hardware_events
M.software_list = core.software_events

-- What perf's tool counts, which are not kernel events: named so that a
-- user who types one learns why it is refused.
M.tool = {
  duration_time = "wall-clock time of the command, measured by the perf tool",
  user_time = "user CPU time from rusage, measured by the perf tool",
  system_time = "system CPU time from rusage, measured by the perf tool",
}
M.tool_list = { "duration_time", "user_time", "system_time" }   -- perf list's order

local descriptions = {
  ["cpu-cycles"] = "CPU cycles",
  instructions = "instructions retired",
  ["cache-references"] = "cache accesses (usually last-level cache)",
  ["cache-misses"] = "cache misses (usually last-level cache)",
  ["branch-instructions"] = "branch instructions retired",
  ["branch-misses"] = "mispredicted branches",
  ["bus-cycles"] = "bus cycles",
  ["stalled-cycles-frontend"] = "cycles stalled in the instruction fetch/decode stage",
  ["stalled-cycles-backend"] = "cycles stalled in the execution stage",
  ["ref-cycles"] = "reference cycles, not affected by frequency scaling",
  ["cpu-clock"] = "CPU clock, a high-resolution per-CPU timer (ns)",
  ["task-clock"] = "clock running while the task runs (ns)",
  ["page-faults"] = "page faults",
  ["context-switches"] = "context switches",
  ["cpu-migrations"] = "migrations of the task to another CPU",
  ["minor-faults"] = "page faults served without I/O",
  ["major-faults"] = "page faults that needed I/O",
  ["alignment-faults"] = "alignment faults fixed up by the kernel",
  ["emulation-faults"] = "instructions emulated by the kernel",
  dummy = "counts nothing; carries side-band records (mmap, comm, ...)",
  ["bpf-output"] = "output of BPF programs (bpf_perf_event_output)",
  ["cgroup-switches"] = "context switches to a task in another cgroup",
}
M.descriptions = descriptions

-- name -> config, every spelling (canonical names and aliases)
local function index(list)
  local t = {}
  for _, e in ipairs(list) do
    t[e[1]] = e[2]
    for _, a in ipairs(e.aliases or {}) do t[a] = e[2] end
  end
  return t
end
M.hardware = index(M.hardware_list)
M.software = index(M.software_list)

-- alias -> canonical name, for both tables
-- Whether attr (integer type and config) is one of the time events,
-- cpu-clock or task-clock: counted in ns, sampled by frequency.
function M.is_clock(attr)
  return attr.type == core.PERF_TYPE_SOFTWARE
    and (attr.config == core.PERF_COUNT_SW_CPU_CLOCK or attr.config == core.PERF_COUNT_SW_TASK_CLOCK)
end

M.aliases = {}
for _, list in ipairs { M.hardware_list, M.software_list } do
  for _, e in ipairs(list) do
    for _, a in ipairs(e.aliases or {}) do M.aliases[a] = e[1] end
  end
end

-- config -> canonical name
M.hardware_names, M.software_names = {}, {}
for _, e in ipairs(M.hardware_list) do M.hardware_names[e[2]] = e[1] end
for _, e in ipairs(M.software_list) do M.software_names[e[2]] = e[1] end

---------------------------------------------------------------------------
-- Hardware cache events: config = id | op << 8 | result << 16.
-- Each entry lists perf's spellings, the first one canonical.

local cache = {}
M.cache = cache

cache.ids = {
  { "L1-dcache", "l1-d", "l1d", "L1-data", id = 0, ops = "rwp",
    description = "level 1 data cache" },
  { "L1-icache", "l1-i", "l1i", "L1-instruction", id = 1, ops = "rp",
    description = "level 1 instruction cache" },
  { "LLC", "L2", id = 2, ops = "rwp", description = "last-level cache" },
  { "dTLB", "d-tlb", "Data-TLB", id = 3, ops = "rwp",
    description = "data translation lookaside buffer" },
  { "iTLB", "i-tlb", "Instruction-TLB", id = 4, ops = "r",
    description = "instruction translation lookaside buffer" },
  { "branch", "branches", "bpu", "btb", "bpc", id = 5, ops = "r",
    description = "branch prediction unit" },
  { "node", id = 6, ops = "rwp", description = "local memory (NUMA node)" },
}
cache.ops = {
  { "load", "loads", "read", id = 0, letter = "r" },
  { "store", "stores", "write", id = 1, letter = "w" },
  { "prefetch", "prefetches", "speculative-read", "speculative-load", id = 2,
    letter = "p" },
}
cache.results = {
  -- "references" is not perf's, but reads as one of its spellings
  { "refs", "Reference", "ops", "access", "references", id = 0 },
  { "misses", "miss", id = 1 },
}

-- Finds the entry of `list` one of whose spellings equals `s` (any case).
local function find_spelling(list, s)
  s = s:lower()
  for _, e in ipairs(list) do
    for _, name in ipairs(e) do
      if name:lower() == s then return e end
    end
  end
end

-- Whether the cache `id` entry supports the operation entry `op`.
function cache.supports(id_entry, op_entry)
  return id_entry.ops:find(op_entry.letter, 1, true) ~= nil
end

-- The canonical name of a (id, op, result) triple, as perf list prints it:
-- "L1-dcache-loads" for accesses, "L1-dcache-load-misses" for misses.
function cache.name(id, op, result)
  local ie, oe, re
  for _, e in ipairs(cache.ids) do if e.id == id then ie = e end end
  for _, e in ipairs(cache.ops) do if e.id == op then oe = e end end
  for _, e in ipairs(cache.results) do if e.id == result then re = e end end
  if not (ie and oe and re) or not cache.supports(ie, oe) then return nil end
  if result == 0 then return ie[1] .. "-" .. oe[2] end
  return ie[1] .. "-" .. oe[1] .. "-" .. re[1]
end

-- Decodes a cache event name into its config. Returns config, or nil and
-- a message plus the byte offset (1-based) within `name` where it went wrong.
-- Spellings are separated by '-', but some spellings contain '-' themselves
-- ("L1-dcache", "speculative-read"), so each section takes the longest
-- spelling that matches whole words.
function cache.decode(name)
  local pos = 1
  local function take(list)
    local best, blen
    local rest = name:sub(pos):lower()
    for _, e in ipairs(list) do
      for _, sp in ipairs(e) do
        local l = #sp
        if rest:sub(1, l) == sp:lower()
            and (#rest == l or rest:sub(l + 1, l + 1) == "-")
            and (not blen or l > blen) then
          best, blen = e, l
        end
      end
    end
    if best then pos = pos + blen end
    return best
  end
  local ie = take(cache.ids)
  if not ie then return nil, "not a cache name", 1 end
  local oe, re
  while pos <= #name do
    if name:sub(pos, pos) ~= "-" then return nil, "expected '-'", pos end
    pos = pos + 1
    local at = pos
    local o = not oe and take(cache.ops)
    if o then
      if not cache.supports(ie, o) then
        local ok = {}
        for _, e in ipairs(cache.ops) do
          if cache.supports(ie, e) then ok[#ok + 1] = e[1] end
        end
        return nil, ("%s has no '%s' operation (it has: %s)")
          :format(ie[1], o[1], table.concat(ok, ", ")), at
      end
      oe = o
    else
      local r = not re and take(cache.results)
      if not r then
        local want = {}
        if not oe then want[#want + 1] = "an operation (load, store, prefetch)" end
        if not re then want[#want + 1] = "a result (refs, misses)" end
        if #want == 0 then return nil, "nothing may follow the result", at - 1 end
        return nil, "expected " .. table.concat(want, " or "), at
      end
      re = r
    end
  end
  local op = oe and oe.id or 0
  local res = re and re.id or 0
  return ie.id | op << 8 | res << 16
end

-- Every valid cache event, canonical names, in perf list's order.
function cache.all()
  local out = {}
  for _, ie in ipairs(cache.ids) do
    for _, oe in ipairs(cache.ops) do
      if cache.supports(ie, oe) then
        for _, re in ipairs(cache.results) do
          out[#out + 1] = {
            name = cache.name(ie.id, oe.id, re.id),
            config = ie.id | oe.id << 8 | re.id << 16,
            description = ("%s: %s %s"):format(ie.description, oe[2],
              re.id == 0 and "(accesses)" or "that missed"),
          }
        end
      end
    end
  end
  return out
end

-- The hardware-cache name of `config`, or nil.
function cache.name_of(config)
  return cache.name(config & 0xff, config >> 8 & 0xff, config >> 16 & 0xff)
end

cache.find_spelling = find_spelling

-- cache[name] is the config of any of perf's spellings of a cache event,
-- as hardware[name] and software[name] are: cache["L1-dcache-load-misses"]
-- is 0x10000.
setmetatable(cache, { __index = function(_, name)
  if type(name) == "string" then return (cache.decode(name)) end
end })

---------------------------------------------------------------------------
-- The sample_type bit names the parser derives attr fields with (the
-- kernel's names, lower-cased, in bit order; the core holds them).

M.sample_type_bits = core.attr_names("sample_type")

-- perf's branch filter spellings (branch_type= term, -j option) to the
-- kernel's branch_sample_type names.
M.branch_spellings = {
  u = "user", k = "kernel", hv = "hv", any = "any", any_call = "any_call",
  any_ret = "any_return", ind_call = "ind_call", abort_tx = "abort_tx",
  in_tx = "in_tx", no_tx = "no_tx", cond = "cond", call_stack = "call_stack",
  ind_jmp = "ind_jump", call = "call", no_flags = "no_flags",
  no_cycles = "no_cycles", hw_index = "hw_index", save_type = "type_save",
  priv = "priv_save", counter = "counters",
}

return M
