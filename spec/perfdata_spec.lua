-- csrc/perfdata.c: the C side of perf.data files (perf.core.perfdata_open,
-- perfdata_attr, perfdata_scan), checked against what perf report -D
-- dumps of a file perf record wrote, and against the uapi layout of
-- perf_event_attr. (The Lua front, perf.data: data_spec.lua.)
local perf = require "perf"
local core = perf.core
local H = require "helpers"

local have_perf = H.sh("command -v perf") ~= ""
local with_perf = have_perf and it or pending

local record = H.record_bytes

-- perf report -D's records of `path`, in file order: { offset =, size =, type = }
local function dumped(path)
  local out = {}
  for off, size, name in H.sh("perf report -D -i " .. path):gmatch("\n%d+ %d+ 0x(%x+) %[0x(%x+)%]: PERF_RECORD_([%u%d_]+)") do
    out[#out + 1] = { offset = tonumber(off, 16), size = tonumber(size, 16), type = name:lower() }
  end
  table.sort(out, function(a, b) return a.offset < b.offset end)
  return out
end

describe("perf.core.perfdata_open", function()
  local dir
  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
  end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  with_perf("reads every record of a perf record file in file order, as perf report -D dumps them", function()
    local path = dir .. "/tp.data"
    assert(os.execute(("perf record -q -o %s -e syscalls:sys_enter_openat -c 1 ls / >/dev/null 2>&1"):format(path)))
    local want = dumped(path)
    assert.is_true(#want > 10)
    local f <close> = assert(core.perfdata_open(path))
    local info = f:info()
    assert.equal(#want, info.nrecords)
    assert.matches(("^perf%%.data%%.file %%(normal, %d bytes, 1 attrs, %d records%%)$")
      :format(#H.sh("cat " .. path), #want), tostring(f))
    local got, samples = {}, 0
    for rec in f:records() do
      got[#got + 1] = rec.type
      if rec.type == "sample" then samples = samples + 1 end
    end
    local types = {}
    for i, r in ipairs(want) do types[i] = r.type end
    assert.same(types, got)
    -- the data section holds exactly the dumped records
    assert.equal(info.data_offset, want[1].offset)
    assert.equal(info.data_offset + info.data_size, want[#want].offset + want[#want].size)
    assert.is_true(samples > 0)
  end)

  it("says why a file cannot be opened", function()
    local msg, errno = H.fails(core.perfdata_open(dir .. "/none"))
    assert.equal(2, errno)
    assert.equal(('perf.data.open "%s/none": No such file or directory (ENOENT)'):format(dir), msg)
    local path = dir .. "/text"
    local f = assert(io.open(path, "w"))
    f:write(string.rep("x", 200))
    f:close()
    local ok, why, format_errno = core.perfdata_open(path)
    assert.is_nil(ok)
    assert.equal(('perf.data.open "%s": not a perf.data file (no PERFILE2 magic at offset 0x0)'):format(path), why)
    assert.equal(22, format_errno)                    -- EINVAL: a file in no format this reads
  end)

  with_perf("closes idempotently and says so", function()
    local path = dir .. "/c.data"
    assert(os.execute(("perf record -q -o %s -e syscalls:sys_enter_close -c 1 true >/dev/null 2>&1"):format(path)))
    local f = assert(core.perfdata_open(path))
    f:close()
    f:close()
    assert.equal("perf.data.file (closed)", tostring(f))
    assert.has_error(function() f:info() end)
  end)
end)

describe("perf.core.perfdata_attr", function()
  -- struct perf_event_attr (uapi): type u32 @0, size u32 @4, config @8,
  -- sample_period @16, sample_type @24, read_format @32, flags @40,
  -- bp_addr @56, bp_len @64, clockid s32 @92
  local function unpack_attr(bytes)
    local a = {}
    a.type, a.size, a.config, a.sample_period, a.sample_type, a.read_format, a.flags =
      string.unpack("<I4I4I8I8I8I8I8", bytes)
    return a
  end

  it("gives the attr as opened, with its id", function()
    local ev <close> = assert(perf.open { "task-clock", sample_period = 12345, sample_type = { "ip", "tid" } })
    local bytes, id = core.perfdata_attr(ev)
    local a = unpack_attr(bytes)
    local opened = ev:attr()
    assert.same({ core.PERF_TYPE_SOFTWARE, core.PERF_COUNT_SW_TASK_CLOCK, 12345,
      core.PERF_SAMPLE_IP | core.PERF_SAMPLE_TID, opened.read_format },
      { a.type, a.config, a.sample_period, a.sample_type, a.read_format })
    assert.equal(ev:id(), id)
    assert.equal(#bytes, a.size)
  end)

  it("sizes it to the smallest PERF_ATTR_SIZE_VERn holding what is set", function()
    local ev <close> = assert(perf.open("task-clock"))
    assert.equal(core.PERF_ATTR_SIZE_VER0, #core.perfdata_attr(ev))
    -- a breakpoint's bp_len is at offset 64: the first field past VER0
    local bytes = string.rep("b", 8)
    local bp <close> = assert(perf.open { type = "breakpoint", bp_type = "w", bp_addr = perf.addressof(bytes), bp_len = 1 })
    local b = core.perfdata_attr(bp)
    assert.equal(core.PERF_ATTR_SIZE_VER1, #b)
    assert.equal(1, string.unpack("<I8", b, 65))
    -- clockid (offset 92) is in VER3's 96 bytes
    local clk <close> = assert(perf.open { "task-clock", use_clockid = true, clockid = "monotonic" })
    local c = core.perfdata_attr(clk)
    assert.equal(core.PERF_ATTR_SIZE_VER3, #c)
    assert.equal(1, string.unpack("<i4", c, 93))                -- CLOCK_MONOTONIC
  end)
end)

describe("perf.core.perfdata_scan", function()
  it("counts samples, lost records and records, up to a malformed header", function()
    local lost = function(n) return record(core.PERF_RECORD_LOST, 0, string.pack("<I8I8", 1, n)) end
    local sample = record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8", 1))
    local comm = record(core.PERF_RECORD_COMM, 0, string.pack("<I4I4", 1, 1) .. "ab\0\0\0\0\0\0")
    local bytes = sample .. comm .. lost(3) .. sample .. lost(4)
    assert.same({ 2, 7, 5 }, { core.perfdata_scan(bytes) })
    assert.same({ 0, 0, 0 }, { core.perfdata_scan("") })
    -- a header with size 4 ends the scan; so does a record past the end
    assert.same({ 1, 0, 1 }, { core.perfdata_scan(sample .. string.pack("<I4I2I2", 9, 0, 4) .. sample) })
    assert.same({ 1, 0, 1 }, { core.perfdata_scan(sample .. sample:sub(1, 12)) })
  end)
end)
