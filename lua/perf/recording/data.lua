-- Layer lua/perf/recording/: perf.record and perf.data files, read and written; it requires
-- perf.core and the layers below it (util, event, counting, profiling) only.

--- perf.data: reading and writing the files perf record writes.
--
--   local f <close> = assert(perf.data.open "perf.data")
--   print(f.header.hostname, #f.attrs, f.attrs[1].name)
--   for rec in f:records() do ... end            -- every record, file order
--   for ip, tid in f:samples("ip", "tid") do ... end
--
-- The C side (perf.core.perfdata_open) reads and checks the file and
-- decodes its records with the ring's decoder; this module names the
-- events and decodes the plain feature sections (perf's util/header.c:
-- write_hostname, write_nrcpus, write_event_desc, write_build_id, ...).
--
-- A file from `perf record -z` holds most records zstd-compressed
-- (PERF_RECORD_COMPRESSED and COMPRESSED2): they are decompressed when the
-- file opens, with libzstd loaded at that first need (`libzstd.so.1`, or
-- the file `PERF_LUA_LIBZSTD` names), and read as if they had never been
-- compressed.
-- The writer is in perf.data_writer.
-- @module perf.data
-- @usage
-- local f <close> = assert(perf.data.open "perf.data")
-- print(f.header.hostname, #f.attrs, f.attrs[1].name)
-- for ip, tid in f:samples("ip", "tid") do end
local core = require "perf.core"
local naming = require "perf.event.naming"
local nearest = require "perf.util.nearest"
local writer = require "perf.recording.data_writer"

local M = {}

-- feature bits (perf's util/header.h, enum HEADER_*)
M.features = {
  [1] = "tracing_data", [2] = "build_ids", [3] = "hostname", [4] = "osrelease",
  [5] = "version", [6] = "arch", [7] = "nrcpus", [8] = "cpudesc", [9] = "cpuid",
  [10] = "total_mem", [11] = "cmdline", [12] = "event_desc",
  [13] = "cpu_topology", [14] = "numa_topology", [15] = "branch_stack",
  [16] = "pmu_mappings", [17] = "group_desc", [18] = "auxtrace", [19] = "stat",
  [20] = "cache", [21] = "sample_time", [22] = "mem_topology", [23] = "clockid",
  [24] = "dir_format", [25] = "bpf_prog_info", [26] = "bpf_btf",
  [27] = "compressed", [28] = "cpu_pmu_caps", [29] = "clock_data",
  [30] = "hybrid_topology", [31] = "pmu_caps",
}
M.feature_bits = {}
for bit, name in pairs(M.features) do M.feature_bits[name] = bit end

-- ---- feature sections ----

-- A reader over a string: every read checks its bounds and raises a
-- message naming the offset (caught by decode_feature).
local function reader(s)
  local pos = 1
  local r = {}
  local function need(n, what)
    if pos + n - 1 > #s then
      error(("%s at byte %d runs past the section (%d bytes)"):format(what, pos - 1, #s), 0)
    end
  end
  function r.u32() need(4, "u32") local v v, pos = string.unpack("<I4", s, pos) return v end
  function r.u64() need(8, "u64") local v v, pos = string.unpack("<i8", s, pos) return v end
  -- struct perf_header_string: u32 len, then len bytes, NUL-padded
  function r.str()
    local n = r.u32()
    need(n, "string")
    local v = s:sub(pos, pos + n - 1)
    pos = pos + n
    return (v:gsub("%z.*$", ""))
  end
  function r.bytes(n) need(n, "bytes") local v = s:sub(pos, pos + n - 1) pos = pos + n return v end
  function r.left() return #s - pos + 1 end
  function r.pos() return pos - 1 end
  function r.seek(p) pos = p + 1 end
  return r
end

local function str_list(r)
  local list = {}
  for i = 1, r.u32() do list[i] = r.str() end
  return list
end

local decoders = {}
for _, k in ipairs { "hostname", "osrelease", "version", "arch", "cpudesc", "cpuid" } do
  decoders[k] = function(r) return r.str() end
end
decoders.nrcpus = function(r)
  -- write_nrcpus: nr_cpus_available, then nr_cpus_online
  local available = r.u32()
  return { available = available, online = r.u32() }
end
decoders.total_mem = function(r) return r.u64() end            -- kB
decoders.cmdline = str_list
decoders.clockid = function(r) return r.u64() end
decoders.sample_time = function(r)
  local first = r.u64()
  return { first = first, last = r.u64() }
end
decoders.event_desc = function(r)
  local nr, attr_size = r.u32(), r.u32()
  local list = {}
  for i = 1, nr do
    local raw = r.bytes(attr_size)
    local nids = r.u32()
    local name = r.str()
    local ids = {}
    for k = 1, nids do ids[k] = r.u64() end
    list[i] = { name = name, ids = ids, attr_bytes = raw }
  end
  return list
end
decoders.build_ids = function(r, s)
  -- struct perf_record_header_build_id: header, pid, build_id[24]
  -- (data[20], size, 3 reserved), filename to header.size
  local list = {}
  while r.left() >= 8 do
    local start = r.pos()
    local misc, size = string.unpack("<I2I2", s, start + 5)
    r.seek(start + 8)
    if size < 36 or start + size > #s then
      error(("build id record at byte %d: size %d"):format(start, size), 0)
    end
    local pid = string.unpack("<i4", r.bytes(4))
    local id = r.bytes(24)
    local n = (misc & 0x8000) ~= 0 and id:byte(21) <= 20 and id:byte(21) or 20
    local filename = r.bytes(size - 36):gsub("%z.*$", "")
    list[#list + 1] = { pid = pid, filename = filename,
                        build_id = (id:sub(1, n):gsub(".", function(c) return ("%02x"):format(c:byte()) end)) }
  end
  return list
end
decoders.cpu_topology = function(r)
  return { cores = str_list(r), threads = str_list(r) }
end
decoders.pmu_mappings = function(r)
  local list = {}
  for i = 1, r.u32() do
    local t = r.u32()
    list[i] = { type = t, name = r.str() }
  end
  return list
end
-- write_compressed: u32 version, type (1: zstd), level, ratio, and
-- mmap_len (the ring size: what one compressed record holds at most)
local compression_types = { [0] = "none", [1] = "zstd" }
decoders.compressed = function(r)
  local version, t = r.u32(), r.u32()
  local level, ratio = r.u32(), r.u32()
  return { version = version, type = compression_types[t] or t, level = level,
           ratio = ratio, mmap_len = r.u32() }
end
decoders.group_desc = function(r)
  local list = {}
  for i = 1, r.u32() do
    local name = r.str()
    local leader = r.u32()
    list[i] = { name = name, leader_idx = leader, nr_members = r.u32() }
  end
  return list
end

-- Decodes feature `name` from its bytes: the value, or the bytes
-- themselves (for the sections with no plain form) and an error message
-- when the section does not parse.
local function decode_feature(name, s)
  local d = decoders[name]
  if not d then return s end
  local ok, v = pcall(d, reader(s), s)
  if ok then return v end
  return s, v
end
--- A feature section's bytes to a Lua value (the plain ones; others stay
-- a string).
-- @function decode_feature
-- @string name the feature's name (`"hostname"`, `"cmdline"`, `"build_ids"`, ...)
-- @string bytes the section's bytes
-- @return the decoded value, or `bytes` as they are
-- @usage local host = perf.data.decode_feature("hostname", raw)
M.decode_feature = decode_feature

-- ---- names ----

-- An attr's name as perf.open gives it, else "type:config".
local function attr_name(attr)
  return naming.name_of(attr)
    or ("%s:%s"):format(tostring(attr.type), tostring(attr.config))
end

-- ---- the file ----

local File = {}
File.__index = File
File.__name = "perf.data"

--- Opens a perf.data file that perf record (or perf.record) wrote: a
-- normal file or a pipe-mode one (also from a pipe: `"/dev/stdin"`), the
-- directory `perf record --threads` writes (or its `data` file), in this
-- machine's byte order, its records compressed (`perf record -z`) or not.
-- A regular file is mapped, not read.
--
-- A file cut or damaged is read up to the damage: `note` says what was cut
-- or skipped and `stopped_at` where the records stop. A sample that read
-- a group (leader sampling, `-e '{a,b}:S'`) is yielded once per member,
-- as perf script shows it: that member's `event`, `id` and period (its
-- value less the one read before; a member with a period of 0 is not
-- yielded), `read` holding the whole group read.
--
-- The records of a compressed file are decompressed here, whole (they are
-- one zstd stream, and a record may span two compressed records): what
-- they hold comes at their place, in order, and `records()` and
-- `samples()` yield it exactly as for a file written without `-z`; the
-- compressed records themselves are not yielded (`compressed` counts them).
-- One compressed record may not hold more than the ring size the header's
-- `compressed` feature gives (`mmap_len`, perf's own limit).
-- @string path the file, or a `perf record --threads` directory
-- @tparam[opt] table opts `split_groups = false`: samples that read a
-- group come as written, once (the leader's)
-- @treturn[1] File the file: `attrs` (list of `{ attr =, name =, ids = }`),
-- `header` (the feature sections, decoded where plain; `header.compressed`
-- is `{ type = "zstd", level =, ratio =, mmap_len =, version = }`),
-- `compressed` (how many compressed records the file has, 0 for none),
-- `note` (what was cut, damaged or skipped, or nil), `stopped_at` (the
-- offset where the records stop before their end, or nil) and
-- `stopped_file`, `directory` (true for `perf record --threads` output)
-- and `files` (the paths read)
-- @return[2] nil, message naming the offset (in hex) of what cannot be
-- read at all (no header, the other byte order, attrs outside the file,
-- an unknown compression), and `EINVAL` (22); `ENOMEM` when out of
-- memory; the errno of open or read when the file cannot be read; a
-- compressed file where libzstd cannot be loaded gives `ENOENT` and what
-- to install
-- @usage
-- local f <close> = assert(perf.data.open "perf.data")
-- for tid, ip in f:samples("tid", "ip") do print(tid, ip) end
function M.open(path, opts)
  if type(path) ~= "string" then
    error(("bad argument #1 to 'perf.data.open' (string expected, got %s)"):format(type(path)), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error(("bad argument #2 to 'perf.data.open' (table expected, got %s)"):format(type(opts)), 2)
  end
  opts = opts or {}
  nearest.check_keys(opts, { "split_groups" }, "perf.data.open: unknown option", 2)
  local h, msg, errno = core.perfdata_open(path, opts.split_groups ~= false)
  if not h then return nil, msg, errno end
  local info = h:info()
  local header, header_errors = {}, {}
  for bit, bytes in pairs(info.features) do
    local name = M.features[bit] or ("feature_" .. bit)
    local v, err = decode_feature(name, bytes)
    -- printable at the prompt (API "Printing at the prompt")
    if type(v) == "table" and getmetatable(v) == nil then core.show(v, "perf.data." .. name) end
    header[name] = v
    if err then header_errors[name] = err end
  end
  core.show(header, "perf.data.header")
  -- names: event_desc (by ids), then event_update records, then the attr
  local by_id = {}
  if type(header.event_desc) == "table" then
    for _, e in ipairs(header.event_desc) do
      for _, id in ipairs(e.ids) do by_id[id] = e.name end
    end
  end
  for _, raw in ipairs(info.meta) do
    -- struct perf_record_event_update: header, u64 type, u64 id, name
    if #raw >= 24 and string.unpack("<i8", raw, 9) == 2 then
      by_id[string.unpack("<i8", raw, 17)] = (raw:sub(25):gsub("%z.*$", ""))
    end
  end
  local attrs, names = {}, {}
  for i, a in ipairs(info.attrs) do
    local name = a.ids[1] and by_id[a.ids[1]]
    if not name and type(header.event_desc) == "table" and header.event_desc[i]
       and #a.ids == 0 then
      name = header.event_desc[i].name
    end
    name = name or attr_name(a.attr)
    attrs[i] = core.show({ attr = a.attr, ids = a.ids, name = name }, "perf.data.attr")
    names[i] = name
  end
  core.show(attrs, "perf.data.attrs")
  h:set_names(names)
  return setmetatable({
    attrs = attrs, header = header, header_errors = header_errors,
    pipe = info.pipe, path = path, nrecords = info.nrecords, compressed = info.compressed,
    data_offset = info.data_offset, data_size = info.data_size, _h = h,
    directory = info.dir, files = info.files, note = info.note,
    stopped_at = info.stopped_at, stopped_file = info.stopped_file,
  }, File)
end

--- A perf.data file for events a script opened itself: `w:write(ring_or_set)`
-- drains rings into it, `w:close()` writes the header and the feature
-- sections.
-- @string path the file to write
-- @tparam table events the events (or a `perf.cpus` set) the file describes
-- @return[1] the writer
-- @return[2] nil, message, errno when the file cannot be written
-- @usage
-- local w = assert(perf.data.writer("out.data", set))
-- w:write(set) w:close()
function M.writer(path, events)
  return writer.writer(path, events)
end

local function handle(self)
  local h = rawget(self, "_h")
  if not h then error("attempt to use a closed perf.data file", 3) end
  return h
end

--- An open perf.data file, from `perf.data.open`.
-- @type File

--- Every record in file order, the tables `rb:records` yields (`rec.event`
-- names its event; perf's own records come with their names).
-- @tparam[opt] table t a table to refill for each record
-- @return an iterator for a generic `for`
-- @usage for rec in f:records() do print(rec.type, rec.event) end
function File:records(t) return handle(self):records(t) end

--- The samples' fields as plain values, without a table per record.
-- @string ... field names (`"ip"`, `"tid"`, `"time"`, `"cpu"`, `"period"`, ...)
-- @return an iterator for a generic `for`, yielding the fields
-- @usage for ip, tid in f:samples("ip", "tid") do end
function File:samples(...) return handle(self):samples(...) end

--- Closes the file (unmaps it); idempotent, also `<close>` and `__gc`.
function File:close()
  local h = rawget(self, "_h")
  if h then h:close() self._h = nil end
  return true
end
File.__close = File.close
File.__gc = File.close

function File:__tostring()
  local names = {}
  for i, a in ipairs(self.attrs) do names[i] = a.name end
  return ("perf.data %q (%s%s%s%s, %d records, events: %s)"):format(
    self.path, self.pipe and "pipe mode" or self.directory and "directory" or "normal",
    self.compressed > 0 and ", compressed" or "",
    self.stopped_at and ", cut: see f.note" or "",
    rawget(self, "_h") and "" or ", closed", self.nrecords, table.concat(names, ", "))
end

return M
