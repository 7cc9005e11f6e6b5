-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.pprof: a profile in pprof's format (github.com/google/pprof,
-- proto/profile.proto, package perftools.profiles), the file `go tool
-- pprof`, Pyroscope and Parca read.
--
--   local bytes = require("perf.pprof").encode(prof)   -- the protobuf message
--   local gz = require("perf.pprof").file(prof)        -- gzip-compressed, as written
--
-- The message: sample types (one per event and counter, e.g.
-- cpu-clock/nanoseconds, page-faults/count), one Sample per distinct stack
-- (location ids leaf first, one value per sample type), one Location per
-- distinct frame and line, one Function per function (name, file, start
-- line), and the string table (index 0 is ""). Only the protobuf wire
-- types 0 (varint) and 2 (length-delimited) are needed.

local gzip = require "perf.util.gzip"
local stack_tree = require "perf.profiling.stack_tree"

local M = {}

-- ---- protobuf wire format ----

-- An unsigned LEB128 varint; a negative integer is its 64-bit two's
-- complement (10 bytes), as protobuf writes int64.
local function varint(n)
  local t = {}
  repeat
    local b = n & 0x7F
    n = n >> 7                        -- logical shift: terminates for n < 0
    t[#t + 1] = n ~= 0 and b | 0x80 or b
  until n == 0
  return string.char(table.unpack(t))
end
M.varint = varint

-- A varint field; proto3 leaves zero values out.
local function int_field(out, field, n)
  if n and n ~= 0 then
    out[#out + 1] = varint(field << 3)
    out[#out + 1] = varint(n)
  end
end

-- A length-delimited field: bytes, a string, a sub-message.
local function bytes_field(out, field, s)
  out[#out + 1] = varint(field << 3 | 2)
  out[#out + 1] = varint(#s)
  out[#out + 1] = s
end

-- A packed repeated varint field.
local function packed_field(out, field, list)
  if #list == 0 then return end
  local body = {}
  for i, n in ipairs(list) do body[i] = varint(n) end
  bytes_field(out, field, table.concat(body))
end

-- ---- what the samples measure ----

local TIME_EVENTS = { ["cpu-clock"] = true, ["task-clock"] = true, timer = true }
local MODE_TYPES = { alloc = "alloc_space", ["off-cpu"] = "off-cpu", wall = "wall" }

-- The sample type of the profile's own values: { type, unit, scale }
-- where a stack's value is its weight times scale.
local function main_type(prof)
  local unit = prof.unit or "samples"
  if unit ~= "samples" then
    return { type = MODE_TYPES[prof.mode] or prof.event, unit = unit, scale = 1 }
  end
  if TIME_EVENTS[prof.event] then
    local ns = prof.period or (prof.freq and prof.freq > 0 and 1000000000 // prof.freq) or 1
    return { type = prof.event, unit = "nanoseconds", scale = ns }
  end
  if prof.period then return { type = prof.event, unit = "count", scale = prof.period } end
  return { type = prof.event, unit = "samples", scale = 1 }
end
M.main_type = main_type

-- ---- the message ----

-- The message's tables, filled as the samples name them: the strings
-- (index 0 is ""), the functions and the locations, each with its id.
local function new_tables()
  return { strings = { "" }, string_ids = { [""] = 0 }, functions = {}, function_ids = {},
    locations = {}, location_ids = {} }
end

-- The id of string `s` (made a string) in the string table.
local function str(T, s)
  s = tostring(s or "")
  local id = T.string_ids[s]
  if not id then
    id = #T.strings
    T.strings[id + 1] = s
    T.string_ids[s] = id
  end
  return id
end

local function function_id(T, f)
  local key = f.kind .. "\0" .. (f.source or "") .. "\0" .. (f.linedefined or -1) .. "\0" .. (f.name or "")
  local id = T.function_ids[key]
  if not id then
    id = #T.functions + 1
    local file = f.source or ""
    local start = (f.linedefined or 0) > 0 and f.linedefined or 0
    -- an unnamed function is "<source:line>": readers take <...> for
    -- template arguments and drop it, so it goes without the brackets
    local name = (f.name or "?"):gsub("^<(.*)>$", "%1")
    T.functions[id] = { id = id, name = str(T, name), system_name = str(T, name),
      filename = str(T, file), start_line = start }
    T.function_ids[key] = id
  end
  return id
end

local function location_id(T, f)
  local fid = function_id(T, f)
  local line = f.kind == "lua" and f.line and f.line > 0 and f.line or 0
  local key = fid .. ":" .. line
  local id = T.location_ids[key]
  if not id then
    id = #T.locations + 1
    T.locations[id] = { id = id, function_id = fid, line = line }
    T.location_ids[key] = id
  end
  return id
end

-- One Sample per stack of the profile's tree: its location ids, leaf
-- first, and its values.
local function write_samples(out, T, prof, main, counter_names)
  local t = stack_tree.of(prof)
  local loc = {}                        -- frame index -> location id
  for _, s in ipairs(t.stacks) do
    local ids = {}
    for i = #s.ids, 1, -1 do                                      -- leaf first
      local id = s.ids[i]
      loc[id] = loc[id] or location_id(T, t.frames[id])
      ids[#ids + 1] = loc[id]
    end
    if #ids == 0 then
      ids[1] = location_id(T, { kind = "c", name = "[unknown]", source = "" })
    end
    local values = { s.count * main.scale }
    for i, name in ipairs(counter_names) do values[i + 1] = s.counters and s.counters[name] or 0 end
    local sample = {}
    packed_field(sample, 1, ids)                                  -- location_id
    packed_field(sample, 2, values)                               -- value
    bytes_field(out, 2, table.concat(sample))                     -- sample
  end
end

-- The Locations and Functions the samples named.
local function write_locations(out, T)
  for _, l in ipairs(T.locations) do
    local line = {}
    int_field(line, 1, l.function_id)
    int_field(line, 2, l.line)
    local loc = {}
    int_field(loc, 1, l.id)
    int_field(loc, 2, 1)                                          -- mapping_id
    bytes_field(loc, 4, table.concat(line))                       -- line
    bytes_field(out, 4, table.concat(loc))                        -- location
  end
  for _, f in ipairs(T.functions) do
    local fn = {}
    int_field(fn, 1, f.id)
    int_field(fn, 2, f.name)
    int_field(fn, 3, f.system_name)
    int_field(fn, 4, f.filename)
    int_field(fn, 5, f.start_line)
    bytes_field(out, 5, table.concat(fn))                         -- function
  end
end

--- The profile as a pprof Profile message (uncompressed protobuf bytes).
-- `prof` is a profile as `perf.profile` returns it: `stacks` (each with
-- `frames`, root first, and `count`), `event`, `freq` or `period`, and
-- where present `unit`, `mode` and `counters` (names, with per-stack
-- values in `stack.counters`).
function M.encode(prof)
  local T = new_tables()
  local main = main_type(prof)
  local types = { { main.type, main.unit } }
  local counter_names = prof.counter_names or {}
  for _, name in ipairs(counter_names) do types[#types + 1] = { name, "count" } end

  local out = {}
  for _, t in ipairs(types) do
    local vt = {}
    int_field(vt, 1, str(T, t[1]))
    int_field(vt, 2, str(T, t[2]))
    bytes_field(out, 1, table.concat(vt))                         -- sample_type
  end
  write_samples(out, T, prof, main, counter_names)
  -- one mapping, the interpreter, whose functions, files and lines are
  -- given: readers have nothing to symbolize
  local mapping = {}
  int_field(mapping, 1, 1)
  int_field(mapping, 5, str(T, prof.program or "lua"))
  for field = 7, 9 do int_field(mapping, field, 1) end  -- has_functions, _filenames, _line_numbers
  bytes_field(out, 3, table.concat(mapping))                      -- mapping
  write_locations(out, T)
  -- the strings the fields below name must be in the table first
  local period_type = {}
  int_field(period_type, 1, str(T, main.type))
  int_field(period_type, 2, str(T, main.unit))
  local comment = str(T, "perf for Lua: " .. (prof.sampling and prof:sampling() or main.type))
  for _, s in ipairs(T.strings) do bytes_field(out, 6, s) end    -- string_table
  int_field(out, 9, prof.time_ns)                                 -- time_nanos
  int_field(out, 10, prof.duration_ns)                            -- duration_nanos
  bytes_field(out, 11, table.concat(period_type))                 -- period_type
  int_field(out, 12, main.scale)                                  -- period
  packed_field(out, 13, { comment })                              -- comment
  int_field(out, 14, str(T, main.type))                           -- default_sample_type
  return table.concat(out)
end

--- The gzip-compressed message: the bytes of a .pb.gz file.
function M.file(prof)
  return gzip.wrap(M.encode(prof))
end

return M
