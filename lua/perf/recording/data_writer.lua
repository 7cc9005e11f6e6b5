-- Layer lua/perf/recording/: perf.record and perf.data files, read and written; it requires
-- perf.core and the layers below it (util, event, counting, profiling) only.

-- perf.data_writer: perf.data files perf report and perf script read.
--
--   local w = assert(perf.data.writer("out.data", set))   -- events or a perf.cpus set
--   w:synthesize(pid)            -- comm and mmap2 of a process that runs already
--   w:write(set)                 -- drains the rings into the file
--   w:close()                    -- writes the feature sections and the header
--
-- Layout (tools/perf/Documentation/perf.data-file-format.txt): the 104-byte
-- perf_file_header, the ids of each attr, the attrs (perf_event_attr plus
-- the {offset, size} of its ids), the records, then the feature index
-- and sections. Events opened alike (one per CPU) share one attr, as in a
-- perf record file. The records are the kernel's, written from the rings'
-- mappings as they hold them (core.ring_write); a PERF_RECORD_FINISHED_ROUND
-- follows each drain, so perf sorts what it reads a round at a time.
local core = require "perf.core"

local M = {}

local HEADER_SIZE = 104
local FINISHED_ROUND = string.pack("<I4I2I2", 68, 0, 8)

local fs = require "perf.util.fs"
local tracepoint = require "perf.event.tracepoint"
local read_line = fs.read_trimmed   -- one-line /proc and /sys files

-- What uname -n and uname -r say, read from procfs (no child process:
-- one would make writing a file depend on signals and the process limit).
local function uname(what)
  return read_line("/proc/sys/kernel/" .. what) or ""
end

-- struct perf_header_string: u32 length (NUL included, padded to 64), bytes
local function hstring(s)
  local n = (#s + 1 + 63) // 64 * 64
  return string.pack("<I4", n) .. s .. ("\0"):rep(n - #s)
end

local function pad8(s)
  return s .. ("\0"):rep((8 - (#s + 1) % 8) % 8 + 1)
end

local Writer = {}
Writer.__index = Writer
Writer.__name = "perf.data.writer"

-- The sample_id_all trailer perf expects after a synthesized record
-- (kernel/events/core.c perf_event__output_id_sample: tid, time, id,
-- stream_id, cpu, identifier as sample_type has them).
local function trailer(attr, id, pid, tid)
  if not attr.sample_id_all then return "" end
  local st = attr.sample_type_bits
  local out = {}
  if st & 0x2 ~= 0 then out[#out + 1] = string.pack("<i4i4", pid, tid) end
  if st & 0x4 ~= 0 then out[#out + 1] = string.pack("<I8", 0) end
  if st & 0x40 ~= 0 then out[#out + 1] = string.pack("<I8", id) end
  if st & 0x200 ~= 0 then out[#out + 1] = string.pack("<I8", 0) end
  if st & 0x80 ~= 0 then out[#out + 1] = string.pack("<I4I4", 0, 0) end
  if st & 0x10000 ~= 0 then out[#out + 1] = string.pack("<I8", id) end
  return table.concat(out)
end

local function record(type, misc, body)
  return string.pack("<I4I2I2", type, misc, 8 + #body) .. body
end

--- perf.data.writer(path, events) -> writer | nil, msg, errno
function M.writer(path, events)
  if type(path) ~= "string" then error("perf.data.writer: path expected", 2) end
  if type(events) ~= "table" or #events == 0 then
    error("perf.data.writer: a list of events (or a perf.cpus set) expected", 2)
  end
  local f, msg, errno = io.open(path, "w+b")
  if not f then return nil, "perf.data.writer: " .. msg, errno end
  -- one attr per distinct perf_event_attr, with the ids of its events
  local attrs, by_bytes = {}, {}
  for i = 1, #events do
    local bytes, id, e = core.perfdata_attr(events[i])
    if not bytes then f:close() os.remove(path) return nil, "perf.data.writer: " .. id, e end
    local a = by_bytes[bytes]
    if not a then
      local t = events[i]:attr()
      a = { bytes = bytes, ids = {}, name = events[i]:name(),
            sample_id_all = t.sample_id_all and true or false,
            sample_type_bits = string.unpack("<I8", bytes, 25) }
      by_bytes[bytes] = a
      attrs[#attrs + 1] = a
    end
    a.ids[#a.ids + 1] = id
  end
  local w = setmetatable({ f = f, path = path, attrs = attrs, samples = 0, lost = 0,
                           rings = events.rings }, Writer)
  -- header (rewritten at close), ids, attrs; the records follow
  local out = { ("\0"):rep(HEADER_SIZE) }
  local off = HEADER_SIZE
  for _, a in ipairs(attrs) do
    a.ids_offset = off
    for _, id in ipairs(a.ids) do out[#out + 1] = string.pack("<I8", id) end
    off = off + 8 * #a.ids
  end
  w.attrs_offset = off
  for _, a in ipairs(attrs) do
    out[#out + 1] = a.bytes .. string.pack("<I8I8", a.ids_offset, 8 * #a.ids)
  end
  w.attr_size = #attrs[1].bytes + 16
  w.data_offset = off + #attrs * w.attr_size
  local ok
  ok, msg, errno = f:write(table.concat(out))
  if not ok then f:close() return nil, "perf.data.writer: " .. msg, errno end
  w.data_size = 0
  return w
end

local function check(self)
  if not self.f then error("attempt to use a closed perf.data writer", 3) end
end

local function put(self, s)
  local ok, msg, errno = self.f:write(s)
  if not ok then return nil, ("perf.data.writer %q: %s"):format(self.path, msg), errno end
  self.data_size = self.data_size + #s
  return true
end

--- w:write_bytes(s): records (already framed) into the data section
function Writer:write_bytes(s)
  check(self)
  return put(self, s)
end

local function type_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and type(mt.__name) == "string" and mt.__name or type(v)
end

-- The rings `src` names: a ring, a list of rings, a perf.cpus set (its
-- rings); anything else raises the API's message.
local function rings_of(src)
  local rings = src
  if type(src) == "table" and src.rings then rings = src.rings
  elseif type_name(src) == "perf.ring" then rings = { src }
  elseif type(src) ~= "table" then rings = nil end
  local bad, kind = nil, nil
  if not rings then bad, kind = "a " .. type_name(src), type_name(src) end
  for i, rb in ipairs(rings or {}) do
    if type_name(rb) ~= "perf.ring" then
      bad, kind = ("a %s as item %d"):format(type_name(rb), i), type_name(rb)
      break
    end
  end
  if bad then
    error(("perf.data.writer: write takes a ring, a list of rings or a perf.cpus set, not %s%s")
      :format(bad, kind == "perf.event" and " (ev:mmap() gives an event's ring)" or ""), 3)
  end
  return rings
end

--- w:write(ring_or_set) -> true | nil, msg, errno: drains the rings
function Writer:write(src)
  check(self)
  local rings = rings_of(src)
  for _, rb in ipairs(rings) do
    -- from the mapping to the file, counted on the way (core.ring_write)
    local bytes, samples, lost = core.ring_write(rb, self.f)
    if not bytes then
      return nil, ("perf.data.writer %q: %s"):format(self.path, samples), lost
    end
    self.samples, self.lost = self.samples + samples, self.lost + lost
    self.data_size = self.data_size + bytes
  end
  return put(self, FINISHED_ROUND)
end

--- w:lost_samples(id, n): a PERF_RECORD_LOST_SAMPLES record saying the
-- kernel dropped n records of the event with that id (its
-- PERF_FORMAT_LOST count), as perf record writes one per event at the
-- end; perf report shows their sum as "Total Lost Samples"
function Writer:lost_samples(id, n)
  check(self)
  for _, a in ipairs(self.attrs) do
    for _, x in ipairs(a.ids) do
      if x == id then
        return put(self, record(13, 0, string.pack("<I8", n) .. trailer(a, id, 0, 0)))
      end
    end
  end
  error(("perf.data.writer: no event of this file has id %d"):format(id), 2)
end

--- w:synthesize(pid [, name]): comm and mmap2 records of a process that
-- runs already (its executable mappings from /proc), as perf record
-- writes them for the processes it did not see start.
function Writer:synthesize(pid)
  check(self)
  if math.type(pid) ~= "integer" or pid <= 0 then
    error(("perf.data.writer: synthesize takes the pid of a running process, not %s")
      :format(type(pid) == "number" and tostring(pid) or type_name(pid)), 2)
  end
  local a = self.attrs[1]
  local id = a.ids[1]
  local out = {}
  local tids = {}
  for _, t in ipairs(fs.listdir(("/proc/%d/task"):format(pid))) do
    tids[#tids + 1] = math.tointeger(tonumber(t))
  end
  if #tids == 0 then tids = { pid } end
  for _, tid in ipairs(tids) do
    local comm = read_line(("/proc/%d/task/%d/comm"):format(pid, tid)) or "?"
    out[#out + 1] = record(core.PERF_RECORD_COMM, 0,
      string.pack("<i4i4", pid, tid) .. pad8(comm) .. trailer(a, id, pid, tid))
  end
  local f = io.open(("/proc/%d/maps"):format(pid))
  if f then
    for line in f:lines() do
      local lo, hi, perms, off, maj, min, ino, name =
        line:match("^(%x+)%-(%x+) (%S+) (%x+) (%x+):(%x+) (%d+)%s*(.*)$")
      if lo and perms:sub(3, 3) == "x" and name ~= "" then
        lo, hi = tonumber(lo, 16), tonumber(hi, 16)
        local prot = (perms:sub(1, 1) == "r" and 1 or 0) | (perms:sub(2, 2) == "w" and 2 or 0) | 4
        local flags = perms:sub(4, 4) == "s" and 1 or 2
        local body = string.pack("<i4i4I8I8I8I4I4I8I8I4I4", pid, pid, lo, hi - lo, tonumber(off, 16),
          tonumber(maj, 16), tonumber(min, 16), math.tointeger(tonumber(ino)), 0, prot, flags)
          .. pad8(name) .. trailer(a, id, pid, pid)
        out[#out + 1] = record(core.PERF_RECORD_MMAP2, core.PERF_RECORD_MISC_USER, body)
      end
    end
    f:close()
  end
  return put(self, table.concat(out))
end

--- w:synthesize_kernel(): the kernel's text map, as perf record writes it
-- (PERF_RECORD_MMAP of "[kernel.kallsyms]_text", pid -1, at _text)
function Writer:synthesize_kernel()
  check(self)
  local f = io.open("/proc/kallsyms")
  if not f then return true end
  local text
  for line in f:lines() do
    local addr, name = line:match("^(%x+) %a (%S+)$")
    if name == "_text" then text = math.tointeger(tonumber(addr, 16)) break end
  end
  f:close()
  if not text or text == 0 then return true end
  local a = self.attrs[1]
  local body = string.pack("<i4i4I8I8I8", -1, 0, text, -1 - text, text)
    .. pad8("[kernel.kallsyms]_text") .. trailer(a, a.ids[1], -1, 0)
  return put(self, record(core.PERF_RECORD_MMAP, core.PERF_RECORD_MISC_KERNEL, body))
end

-- ---- tracing data: the tracefs formats of the tracepoints recorded ----
-- (perf's util/trace-event-info.c: magic, version "0.6", byte order, long
-- and page sizes, header_page, header_event, the ftrace and the event
-- systems' format files, then kallsyms, printk formats and saved
-- cmdlines, each behind its size; perf reads it back to name and decode
-- the tracepoint samples)
local function tracefs_root()
  local d = core.tracing_dir()       -- where tracefs is now (perf.core looks)
  if d and fs.read(d .. "/events/header_page") then return d end
end

function M.tracing_data(attrs)
  local root = tracefs_root()
  if not root then return nil end
  local systems, order = {}, {}
  for _, a in ipairs(attrs) do
    local t, config = string.unpack("<I4", a.bytes), string.unpack("<I8", a.bytes, 9)
    if t == core.PERF_TYPE_TRACEPOINT then
      local name = tracepoint.name_of(config)
      local sys, ev = (name or ""):match("^([^:]+):(.+)$")
      if sys and sys ~= "ftrace" then
        if not systems[sys] then systems[sys] = {} order[#order + 1] = sys end
        local format = fs.read(("%s/events/%s/%s/format"):format(root, sys, ev))
        if format then table.insert(systems[sys], format) end
      end
    end
  end
  if #order == 0 then return nil end
  local function file(s) return string.pack("<I8", #s) .. s end
  local out = {
    "\23\8\68tracing", "0.6\0", "\0", string.pack("B", string.packsize("j")),
    string.pack("<I4", 4096),
    "header_page\0", file(fs.read(root .. "/events/header_page") or ""),
    "header_event\0", file(fs.read(root .. "/events/header_event") or ""),
    string.pack("<I4", 0),                                  -- ftrace formats
    string.pack("<I4", #order),
  }
  for _, sys in ipairs(order) do
    out[#out + 1] = sys .. "\0" .. string.pack("<I4", #systems[sys])
    for _, format in ipairs(systems[sys]) do out[#out + 1] = file(format) end
  end
  out[#out + 1] = string.pack("<I4", 0)                    -- kallsyms
  out[#out + 1] = string.pack("<I4", 0)                    -- printk formats
  out[#out + 1] = string.pack("<I8", 0)                    -- saved cmdlines
  return table.concat(out)
end

-- the feature sections this writer fills (perf's util/header.c)
local function features(self, cmdline)
  local cpus = 0
  local online = read_line("/sys/devices/system/cpu/online") or "0"
  for part in online:gmatch("[^,]+") do
    local lo, hi = part:match("^(%d+)%-(%d+)$")
    cpus = cpus + (lo and (hi - lo + 1) or 1)
  end
  local possible = read_line("/sys/devices/system/cpu/possible") or online
  local avail = 0
  for part in possible:gmatch("[^,]+") do
    local lo, hi = part:match("^(%d+)%-(%d+)$")
    avail = avail + (lo and (hi - lo + 1) or 1)
  end
  local cpudesc = ""
  for line in io.lines("/proc/cpuinfo") do
    local v = line:match("^model name%s*:%s*(.-)%s*$")
    if v then cpudesc = v break end
  end
  local mem = 0
  for line in io.lines("/proc/meminfo") do
    local v = line:match("^MemTotal:%s*(%d+)")
    if v then mem = math.tointeger(tonumber(v)) break end
  end
  local desc = { string.pack("<I4I4", #self.attrs, #self.attrs[1].bytes) }
  for _, a in ipairs(self.attrs) do
    desc[#desc + 1] = a.bytes .. string.pack("<I4", #a.ids) .. hstring(a.name)
    for _, id in ipairs(a.ids) do desc[#desc + 1] = string.pack("<I8", id) end
  end
  local cl = { string.pack("<I4", #cmdline) }
  for _, s in ipairs(cmdline) do cl[#cl + 1] = hstring(s) end
  local list = {}
  local tracing = M.tracing_data(self.attrs)
  if tracing then list[1] = { 1, tracing } end
  for _, ft in ipairs {
    { 3, hstring(uname("hostname")) }, { 4, hstring(uname("osrelease")) },
    { 5, hstring("perf-lua " .. core.version) }, { 6, hstring(fs.machine()) },
    { 7, string.pack("<I4I4", avail, cpus) }, { 8, hstring(cpudesc) },
    { 10, string.pack("<I8", mem) }, { 11, table.concat(cl) },
    { 12, table.concat(desc) },
  } do list[#list + 1] = ft end
  return list
end

--- w:close([cmdline]) -> true | nil, msg, errno: writes the feature
-- sections and the header; idempotent
function Writer:close(cmdline)
  local f = self.f
  if not f then return true end
  self.f = nil
  local feats = features(self, cmdline or self.cmdline or { "perf-lua", "record" })
  local index, body = {}, {}
  local off = self.data_offset + self.data_size + 16 * #feats
  local bits = { 0, 0, 0, 0 }
  for _, ft in ipairs(feats) do
    index[#index + 1] = string.pack("<I8I8", off, #ft[2])
    body[#body + 1] = ft[2]
    off = off + #ft[2]
    bits[ft[1] // 64 + 1] = bits[ft[1] // 64 + 1] | (1 << (ft[1] % 64))
  end
  local header = "PERFILE2" .. string.pack("<I8I8I8I8I8I8I8I8I8I8I8I8",
    HEADER_SIZE, self.attr_size, self.attrs_offset, #self.attrs * self.attr_size,
    self.data_offset, self.data_size, 0, 0, bits[1], bits[2], bits[3], bits[4])
  local ok, msg, errno = f:write(table.concat(index), table.concat(body))
  if ok then ok, msg, errno = f:seek("set", 0) end
  if ok then ok, msg, errno = f:write(header) end
  local closed, cmsg, cerrno = f:close()
  if not ok then return nil, ("perf.data.writer %q: %s"):format(self.path, msg), errno end
  if not closed then return nil, ("perf.data.writer %q: %s"):format(self.path, cmsg), cerrno end
  return true
end
Writer.__close = function(self) self:close() end
Writer.__gc = Writer.__close

function Writer:__tostring()
  return ("perf.data.writer %q (%s, %d samples, %d bytes of records)")
    :format(self.path, self.f and "open" or "closed", self.samples, self.data_size)
end

return M
