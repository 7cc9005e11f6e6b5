-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- Documented on the perf page.
-- @submodule perf

-- perf.watch: hardware breakpoints on data and code.
--
--   local ev = perf.watch("getenv")                -- calls of a C function
--   local ev = perf.watch(perf.addressof(s), { mode = "rw", len = 1 })
--   local ev = perf.watch(addr, { mode = "w", len = 8,
--                                 sample_type = { "ip" } }) -- who writes
--
-- `where` is an integer address, a C symbol name (looked up with dlsym,
-- in opts.library when given) or a userdata (its block). A string is
-- always a symbol name: pass perf.addressof(s) to watch a string's bytes.
--
-- opts.mode is "r", "w", "rw" or "x" (default "x" for a symbol name, "rw"
-- otherwise); opts.len is 1, 2, 4 or 8 (default 1; execute breakpoints
-- take sizeof(long)). The target fields (pid, cpu, group, cgroup, flags)
-- and any attr field (sample_type, sample_period, exclude_kernel, ...)
-- pass through. Watchpoints count user-space accesses unless the attr
-- says otherwise (exclude_kernel and exclude_hv default to true), and
-- sample every hit (sample_period = 1).

local core = require "perf.core"
local options = require "perf.util.options"
local base = require "perf.event.base"
local naming = require "perf.event.naming"
local fs = require "perf.util.fs"
local nearest = require "perf.util.nearest"

local M = {}

local OWN_KEYS = { mode = true, len = true, library = true }
local BP_TYPES = { r = 1, w = 2, rw = 3, x = 4 }
local LONG = string.packsize("l")

local is_x86
local function x86()
  if is_x86 == nil then
    local m = fs.machine()
    is_x86 = m == "x86_64" or m:match("^i%d86$") ~= nil
  end
  return is_x86
end

-- Every key perf.watch takes: its own, the target fields, the attr fields
-- and the event table's others (name, scale, unit).
local known_keys
local function keys()
  if not known_keys then
    known_keys = core.attr_fields()
    for _, set in ipairs { OWN_KEYS, options.TARGET_KEYS, base.NOT_ATTR } do
      for k in pairs(set) do known_keys[#known_keys + 1] = k end
    end
    table.sort(known_keys)
  end
  return known_keys
end

-- Raises on a key of opts perf.watch does not take, suggesting the nearest.
local function check_keys(opts)
  nearest.check_keys(opts, keys(), "perf.watch: unknown option", 4)
end

-- Builds the attr and target of a watchpoint. Raises on misuse; returns
-- nil, message, errno when a symbol cannot be found.
function M.attr(where, opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error(("perf.watch: options must be a table, not %s"):format(type(opts)), 3)
  end
  local addr, what, is_symbol
  local kind = type(where)
  if math.type(where) == "integer" then
    addr = where
  elseif kind == "string" then
    local a, msg, errno = core.symbol(where, opts.library)
    if not a then return nil, msg, errno end
    addr, what, is_symbol = a, where, true
  elseif kind == "userdata" then
    addr = core.addressof(where)
  else
    error(("perf.watch: expected an address, a symbol name or a userdata, got %s")
      :format(math.type(where) or kind), 3)
  end
  if addr == 0 then error("perf.watch: address 0 cannot be watched", 3) end

  local mode = opts.mode or (is_symbol and "x" or "rw")
  if mode == "wr" then mode = "rw" end
  local bp_type = BP_TYPES[mode]
  if not bp_type then
    error(("perf.watch: mode must be \"r\", \"w\", \"rw\" or \"x\", not %s")
      :format(type(mode) == "string" and ("%q"):format(mode) or tostring(mode)), 3)
  end
  if mode == "r" and x86() then
    error("perf.watch: x86 cannot stop on reads alone; use mode \"rw\" " ..
      "(reads and writes) or \"w\"", 3)
  end
  local len = opts.len
  if len == nil then len = mode == "x" and LONG or 1 end
  if mode == "x" and len ~= LONG then
    error(("perf.watch: execute breakpoints need len = %d (sizeof(long)), not %s")
      :format(LONG, tostring(len)), 3)
  end
  if len ~= 1 and len ~= 2 and len ~= 4 and len ~= 8 then
    error(("perf.watch: len must be 1, 2, 4 or 8, not %s"):format(tostring(len)), 3)
  end
  if mode ~= "x" and addr % len ~= 0 then
    error(("perf.watch: address 0x%x is not aligned to len %d; use len 1 or " ..
      "the aligned address 0x%x"):format(addr, len, addr - addr % len), 3)
  end

  check_keys(opts)
  local attr = { type = "breakpoint", bp_addr = addr, bp_len = len, bp_type = mode,
    sample_period = 1, exclude_kernel = true, exclude_hv = true }
  local target = options.split(opts, attr, OWN_KEYS)
  if attr.name == nil then
    attr.name = is_symbol and ("%s:%s"):format(what, mode) or naming.name_of(attr)
  end
  return attr, target
end

--- A hardware breakpoint on data or code (a watchpoint).
--
-- Watchpoints count user-space accesses (`exclude_kernel` and `exclude_hv`
-- default to true) and sample every hit (`sample_period = 1`).
-- @param where an integer address, a C symbol name (dlsym; a string is
-- always a symbol name: watch a string's bytes with `perf.addressof(s)`),
-- or a userdata (its block)
-- @tparam[opt] table opts `mode` (`"r"`, `"w"`, `"rw"`, `"x"`; default
-- `"x"` for a symbol, `"rw"` otherwise), `len` (1, 2, 4, 8), `library`
-- (where to look the symbol up), target fields and attr fields
-- @treturn[1] perf.core.event the event (disabled, like every event)
-- @return[2] nil, message, errno when the symbol is not found or the
-- kernel refuses (`ENOSPC`: every breakpoint slot is taken)
-- @raise on misuse: a bad mode or length
-- @usage
-- local ev <close> = assert(perf.watch("getenv"))   -- calls of getenv
-- ev:enable() os.getenv("HOME") ev:disable()
-- print(ev:read())                                 --> 1 ...
-- @function watch
function M.watch(where, opts)
  local attr, target, errno = M.attr(where, opts)
  if not attr then return nil, target, errno end
  return base.open(attr, target)
end

return M
