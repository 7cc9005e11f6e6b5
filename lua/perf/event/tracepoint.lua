-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- perf.tracepoint: tracefs lookup, tracepoint formats and sample decoding.
--
--     local tp = perf.tracepoint "sched:sched_switch"
--     tp.id, tp.fields[5].name, tp.field.prev_comm.size
--     tp:decode(rec.raw)  --> { common_type = 372, prev_comm = "lua5.4", ... }
--
-- The tracefs directory comes from perf.tracefs, which mounts one on first
-- use; tests can point it at a fake tree with set_root. The ids are read
-- by perf.core (tracepoint_id, tracepoint_ids), as the core's own messages
-- read them.
-- @module perf.tracepoint

local core = require "perf.core"
local fs = require "perf.util.fs"
local nearest = require "perf.util.nearest"
local tracefs = require "perf.event.tracefs"

local M = {}

local show = core.show    -- the prompt form of plain tables
local E = core.errno

local root_override

--- Uses `path` as the tracefs directory (nil: find the real one again).
-- @string[opt] path a directory laid out as tracefs
-- @return nothing
function M.set_root(path)
  root_override = path
  tracefs.forget()
  M.forget()
end

--- The tracefs directory (mounted on first use, as perf does), or nil,
-- why it is missing and an errno (see perf.tracefs).
-- @treturn[1] string the tracefs directory
-- @return[2] nil, message, errno
function M.path()
  if root_override then return root_override end
  return tracefs.path()
end

-- ------------------------------------------------------------------------
-- Names and ids

local ids_by_name = {}  -- "sys:event" -> id
local names_by_id       -- id -> "sys:event", built on demand

--- Forgets the ids and names looked up so far.
-- @return nothing
function M.forget()
  ids_by_name, names_by_id = {}, nil
end

--- The id of tracepoint sys:event. Returns id, or nil, message and an
-- errno-like number (2 = no such tracepoint, 13 = no access).
-- @string sys the subsystem (`"sched"`)
-- @string event the event (`"sched_switch"`)
-- @treturn[1] integer the id
-- @return[2] nil, message, errno
function M.id(sys, event)
  local key = sys .. ":" .. event
  local id = ids_by_name[key]
  if id then return id end
  local dir, why, errno = M.path()
  if not dir then return nil, why, errno end
  local code
  id, code = core.tracepoint_id(dir, sys, event)
  if code == E.EACCES then
    return nil, ("cannot read %s/events (permission denied): tracepoints need root or " ..
      "access to tracefs"):format(dir), E.EACCES
  elseif code == E.EIO then
    return nil, "unreadable id for " .. key, 5
  elseif not id then
    return nil, "no tracepoint " .. key, E.ENOENT
  end
  ids_by_name[key] = id
  return id
end

--- "; did you mean ..." for a tracepoint name that does not exist: the
-- nearest events of its subsystem, or the nearest subsystems.
-- @string sys the subsystem
-- @string event the event
-- @treturn string the hint, or ""
function M.near_miss(sys, event)
  local systems = M.systems()
  for _, s in ipairs(systems) do
    if s == sys then return nearest.hint(event, M.events(sys)) end
  end
  return nearest.hint(sys, systems)
end

--- Tracepoint subsystems, sorted.
-- @bool[opt] unsorted in tracefs's directory order instead, as perf
--   expands patterns
-- @treturn {string,...} the names
function M.systems(unsorted)
  local dir = M.path()
  if not dir then return {} end
  local out = {}
  for _, s in ipairs(fs.listdir(dir .. "/events", unsorted)) do
    if fs.isdir(("%s/events/%s"):format(dir, s)) then
      out[#out + 1] = s
    end
  end
  return out
end

--- The events of subsystem `sys` (those with an id), sorted.
-- @string sys a subsystem
-- @bool[opt] unsorted in tracefs's directory order instead
-- @treturn {string,...} the names
function M.events(sys, unsorted)
  local dir = M.path()
  if not dir then return {} end
  local out = {}
  for _, e in ipairs(fs.listdir(("%s/events/%s"):format(dir, sys), unsorted)) do
    if fs.exists(("%s/events/%s/%s/id"):format(dir, sys, e)) then
      out[#out + 1] = e
    end
  end
  return out
end

--- Every tracepoint as "sys:event", sorted.
-- @treturn {string,...} the names
function M.all()
  local out = {}
  for _, s in ipairs(M.systems()) do
    for _, e in ipairs(M.events(s)) do out[#out + 1] = s .. ":" .. e end
  end
  return out
end

--- The "sys:event" name of tracepoint id `id`, or nil.
-- @int id a tracepoint id
-- @treturn string|nil the name
function M.name_of(id)
  if not names_by_id then
    local dir = M.path()
    if not dir then return nil end     -- looked for again on the next call
    names_by_id = {}
    for name, n in pairs(core.tracepoint_ids(dir)) do
      names_by_id[n] = name; ids_by_name[name] = n
    end
  end
  return names_by_id[id]
end

-- ------------------------------------------------------------------------
-- Formats

-- Element sizes of the base types dynamic arrays are declared with.
local base_sizes = {
  char = 1, ["unsigned char"] = 1, ["signed char"] = 1, u8 = 1, __u8 = 1,
  s8 = 1, __s8 = 1, bool = 1, uint8_t = 1, int8_t = 1,
  short = 2, ["unsigned short"] = 2, u16 = 2, __u16 = 2, s16 = 2, __s16 = 2,
  uint16_t = 2, int16_t = 2,
  int = 4, ["unsigned int"] = 4, unsigned = 4, u32 = 4, __u32 = 4, s32 = 4,
  __s32 = 4, uint32_t = 4, int32_t = 4, pid_t = 4,
  long = 8, ["unsigned long"] = 8, ["long long"] = 8,
  ["unsigned long long"] = 8, u64 = 8, __u64 = 8, s64 = 8, __s64 = 8,
  uint64_t = 8, int64_t = 8, size_t = 8, dma_addr_t = 8,
}

local byte_types = {
  u8 = true, __u8 = true, ["unsigned char"] = true, uint8_t = true,
}

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Parses one "field:" declaration into a field table.
local function parse_field(decl, offset, size, signed)
  local f = { offset = offset, size = size, signed = signed }
  local dyn, rest = decl:match("^(__data_loc)%s+(.+)$")
  if not dyn then dyn, rest = decl:match("^(__rel_loc)%s+(.+)$") end
  if dyn then
    -- "__data_loc char[] name": the array brackets belong to the type
    local base, name = rest:match("^(.-)%s*%[%]%s*([%a_][%w_]*)$")
    if not base then base, name = rest:match("^(.-)%s+([%a_][%w_]*)$") end
    f.name, f.type = name, decl:sub(1, #decl - #name):gsub("%s+$", "")
    f.dynamic = dyn == "__data_loc" and "data_loc" or "rel_loc"
    base = trim(base or "")
    f.elem_type = base
    f.elem_size = base_sizes[base] or (base:find("%*$") and 8) or 1
    f.is_string = base == "char"
    f.is_bytes = byte_types[base] or false
    return f
  end
  local base, name, count = decl:match("^(.-)%s*([%a_][%w_]*)%s*%[([^%]]*)%]$")
  if base then
    f.name, f.type = name, trim(decl)
    f.elem_type = trim(base)
    local n = math.tointeger(tonumber(count))
    f.array = n or (size // (base_sizes[f.elem_type] or 1))
    f.elem_size = f.array > 0 and size // f.array or 1
    f.is_string = f.elem_type == "char"
    f.is_bytes = byte_types[f.elem_type] or false
    return f
  end
  base, name = decl:match("^(.-)%s*([%a_][%w_]*)$")
  f.name, f.type = name or decl, trim(decl)
  f.elem_type = base and trim(base) or decl
  f.pointer = f.elem_type:find("%*$") ~= nil
  return f
end

--- Parses the text of a tracefs format file. Returns a table with name, id,
-- fields (list in file order), field (by name) and print_fmt; or nil and a
-- message.
-- @string text the format file
-- @treturn[1] table the format
-- @return[2] nil, message
function M.parse_format(text)
  local t = { fields = {}, field = {} }
  t.name = text:match("name:%s*([^\n]+)")
  t.id = math.tointeger(tonumber(text:match("\nID:%s*(%d+)") or text:match("^ID:%s*(%d+)") or ""))
  for line in text:gmatch("[^\n]+") do
    local decl, off, size, sgn = line:match(
      "^%s*field:(.-);%s*offset:(%d+);%s*size:(%d+);%s*signed:(%d+);")
    if decl then
      local f = parse_field(trim(decl), tonumber(off) // 1, tonumber(size) // 1,
        sgn == "1")
      f.common = f.name:find("^common_") ~= nil
      show(f, "perf.tracepoint.field")
      t.fields[#t.fields + 1] = f
      t.field[f.name] = f
    end
  end
  t.print_fmt = text:match("print fmt:%s*([^\n]*)")
  if #t.fields == 0 then return nil, "no fields in format" end
  return t
end

-- ------------------------------------------------------------------------
-- Decoding raw samples

local int_fmt = { [1] = "I1", [2] = "I2", [4] = "I4", [8] = "I8" }
local sint_fmt = { [1] = "i1", [2] = "i2", [4] = "i4", [8] = "i8" }

local function cstring(s)
  local z = s:find("\0", 1, true)
  return z and s:sub(1, z - 1) or s
end

local function ints(raw, pos, n, size, signed)
  local fmt = "<" .. ((signed and sint_fmt or int_fmt)[size] or "I1")
  local out = {}
  for i = 0, n - 1 do out[i + 1] = string.unpack(fmt, raw, pos + i * size) end
  return out
end

local function decode_field(f, raw, name)
  local need = f.offset + f.size
  if #raw < need then
    error(("%s: raw sample has %d bytes, field '%s' needs %d"):format(
      name, #raw, f.name, need), 3)
  end
  local pos = f.offset + 1
  if f.dynamic then
    local v = string.unpack("<I4", raw, pos)
    local off, len = v & 0xffff, v >> 16
    if f.dynamic == "rel_loc" then off = off + f.offset + f.size end
    if off + len > #raw then
      error(("%s: field '%s' points past the end of the raw sample (%d+%d > %d)")
        :format(name, f.name, off, len, #raw), 3)
    end
    local bytes = raw:sub(off + 1, off + len)
    if f.is_string then return cstring(bytes) end
    if f.is_bytes or f.elem_size == 1 and not f.signed then return bytes end
    return ints(raw, off + 1, len // f.elem_size, f.elem_size, f.signed)
  end
  if f.array then
    local bytes = raw:sub(pos, pos + f.size - 1)
    if f.is_string then return cstring(bytes) end
    if f.is_bytes then return bytes end
    return ints(raw, pos, f.array, f.elem_size, f.signed)
  end
  local fmt = (f.signed and sint_fmt or int_fmt)[f.size]
  if not fmt then return raw:sub(pos, pos + f.size - 1) end
  return (string.unpack("<" .. fmt, raw, pos))
end

local Tracepoint = {}
Tracepoint.__index = Tracepoint
Tracepoint.__name = "perf.tracepoint"

function Tracepoint:__tostring()
  return ("perf.tracepoint %q (id %d, %d fields)"):format(
    self.name, self.id or -1, #self.fields)
end

--- A tracepoint: its id, its format's fields, a decoder (`perf.tracepoint.get`).
-- @type Tracepoint

--- Decodes the raw bytes of a sample (PERF_SAMPLE_RAW, as rec.raw gives
-- them) into a table of named fields. Integers keep their width and sign,
-- char arrays and __data_loc strings become Lua strings, byte arrays
-- become strings of bytes, other arrays lists of integers, pointers
-- integers.
-- @string raw a sample's `raw` field
-- @tparam[opt] table into a table to fill
-- @treturn table the fields by name
-- @usage local f = tp:decode(rec.raw) print(f.prev_comm)
function Tracepoint:decode(raw, into)
  if type(raw) ~= "string" then
    error(("%s:decode: expected the raw sample as a string, got %s"):format(
      self.name, type(raw)), 2)
  end
  local out = into or show({}, "perf.tracepoint.entry")
  for _, f in ipairs(self.fields) do
    out[f.name] = decode_field(f, raw, self.name)
  end
  return out
end

--- Checks the field names a filter expression uses against the format.
-- Returns true, or nil and a message naming the unknown fields.
-- @string text a filter expression
-- @treturn[1] boolean true
-- @return[2] nil, message
function Tracepoint:check_filter(text)
  local names = {}
  for i, f in ipairs(self.fields) do names[i] = f.name end
  return core.check_filter(self.name, names, text)
end

--- Tracepoints by name or format.
-- @section tracepoints

--- Builds a tracepoint object from format text (for tests and for formats
-- read elsewhere, e.g. from a perf.data file).
-- @string text the format file
-- @string[opt] name its "sys:event" name
-- @treturn[1] Tracepoint the tracepoint
-- @return[2] nil, message
function M.from_format(text, name)
  local t, err = M.parse_format(text)
  if not t then return nil, err end
  t.system, t.event = (name or ""):match("^(.-):(.*)$")
  t.name = name or t.name
  return setmetatable(t, Tracepoint)
end

local objects = setmetatable({}, { __mode = "v" })

--- perf.tracepoint(name): the id and format of tracepoint "sys:event".
-- Raises on a malformed name; returns nil, message, errno when the
-- tracepoint does not exist or tracefs cannot be read.
-- @string name `"sys:event"`
-- @treturn[1] Tracepoint the tracepoint: `id`, `fields`, `field`
-- @return[2] nil, message, errno (`ENOENT`: no such tracepoint, with the nearest names)
-- @raise on a malformed name
-- @usage local tp = assert(perf.tracepoint "sched:sched_switch")
--  print(tp.id, tp.fields[1].name)
function M.get(name)
  if type(name) ~= "string" then
    error(("perf.tracepoint: expected a name like \"sched:sched_switch\", got %s")
      :format(type(name)), 2)
  end
  local sys, ev = name:match("^([%w_%-]+):([%w_%-%.]+)$")
  if not sys then
    error(("perf.tracepoint: %q is not of the form \"subsystem:event\""):format(name), 2)
  end
  if objects[name] then return objects[name] end
  local id, err, code = M.id(sys, ev)
  if not id then
    if code == E.ENOENT and M.path() then err = err .. M.near_miss(sys, ev) end
    return nil, "perf.tracepoint " .. name .. ": " .. err, code
  end
  local dir = M.path()
  local text = fs.read(("%s/events/%s/%s/format"):format(dir, sys, ev))
  if not text then
    return nil, ("perf.tracepoint %s: cannot read its format file"):format(name), E.EACCES
  end
  local tp, perr = M.from_format(text, name)
  if not tp then return nil, "perf.tracepoint " .. name .. ": " .. perr, 22 end
  tp.id = id
  objects[name] = tp
  return tp
end

M.Tracepoint = Tracepoint

return M
