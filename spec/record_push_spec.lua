-- csrc/record_push.c: decoded records as Lua tables. Type, cpumode and
-- misc flag names are checked against the uapi header's constants
-- (parsed at test time, spec/uapi.lua); records are packed here.
local core = require "perf.core"
local uapi = require "uapi"

local K = uapi.constants { uapi.PERF_EVENT_H }

local record = require("helpers").record_bytes

local copy = require("helpers").copy

describe("record tables", function()
  it("name each record type as the header does, lower-cased without its prefix", function()
    local n = 0
    for _, name in ipairs(uapi.enum(uapi.PERF_EVENT_H, "perf_event_type")) do
      local short = name:match("^PERF_RECORD_([%u%d_]+)$")
      if short ~= "MAX" then
        local rec = core.decode(record(K[name], 0, ""), {})
        assert.equal(short:lower(), rec.type, name)
        n = n + 1
      end
    end
    assert.is_true(n >= 20, n .. " types")
    -- past the last type the kernel has: unknown, with its number and the whole record
    local bytes = record(K.PERF_RECORD_MAX + 40, 0, "abcdefgh")
    local rec = core.decode(bytes, {})
    assert.same({ "unknown", K.PERF_RECORD_MAX + 40, bytes }, { rec.type, rec.type_id, rec.raw })
  end)

  it("name the cpumode of misc as the header's PERF_RECORD_MISC_* do", function()
    local modes = { CPUMODE_UNKNOWN = "unknown", KERNEL = "kernel", USER = "user",
      HYPERVISOR = "hypervisor", GUEST_KERNEL = "guest_kernel", GUEST_USER = "guest_user" }
    for suffix, name in pairs(modes) do
      local misc = K["PERF_RECORD_MISC_" .. suffix]
      assert.equal(name, core.decode(record(K.PERF_RECORD_SAMPLE, misc, ""), {}).cpumode, suffix)
    end
    -- the two values the mask leaves unnamed
    for misc = 0, K.PERF_RECORD_MISC_CPUMODE_MASK do
      local named = false
      for suffix in pairs(modes) do named = named or K["PERF_RECORD_MISC_" .. suffix] == misc end
      if not named then
        assert.equal("unknown", core.decode(record(K.PERF_RECORD_SAMPLE, misc, ""), {}).cpumode)
      end
    end
  end)

  it("set each misc flag as a boolean, by the record type that gives the bit its meaning", function()
    local pidtid = string.pack("<I4I4", 1, 2)
    local comm = pidtid .. "abc\0\0\0\0\0"
    local mmap = pidtid .. string.pack("<I8I8I8", 0x1000, 0x2000, 0) .. "/x\0\0\0\0\0\0"
    local mmap2 = pidtid .. string.pack("<I8I8I8I4I4I8I8I4I4", 0x1000, 0x2000, 0, 8, 1, 2, 3, 5, 1)
      .. "/x\0\0\0\0\0\0"
    local cases = {
      { K.PERF_RECORD_SAMPLE, "", K.PERF_RECORD_MISC_EXACT_IP, "exact_ip" },
      { K.PERF_RECORD_COMM, comm, K.PERF_RECORD_MISC_COMM_EXEC, "comm_exec" },
      { K.PERF_RECORD_MMAP, mmap, K.PERF_RECORD_MISC_MMAP_DATA, "mmap_data" },
      { K.PERF_RECORD_SWITCH, "", K.PERF_RECORD_MISC_SWITCH_OUT, "switch_out" },
      { K.PERF_RECORD_SWITCH, "", K.PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, "switch_out_preempt" },
      { K.PERF_RECORD_MMAP2, mmap2, K.PERF_RECORD_MISC_MMAP_BUILD_ID, "mmap_build_id" },
    }
    local flags = { "exact_ip", "comm_exec", "mmap_data", "switch_out", "switch_out_preempt",
      "mmap_build_id" }
    for _, c in ipairs(cases) do
      local type, body, bit, name = c[1], c[2], c[3], c[4]
      local with = core.decode(record(type, bit, body), {})
      local without = core.decode(record(type, 0, body), {})
      assert.is_true(with[name], name)
      assert.is_nil(without[name], name)
      assert.equal(bit, with.misc)
      -- no other flag is set for that bit
      for _, other in ipairs(flags) do
        if other ~= name then assert.is_nil(with[other], name .. " sets " .. other) end
      end
    end
  end)

  it("come out the same through a reused table over records of every kind, trailers included", function()
    -- sample_id_all with tid, time, id, cpu: the trailer in the header's order
    local lay = { sample_type = { "tid", "time", "id", "cpu" }, sample_id_all = true }
    local function sid(time) return string.pack("<I4I4I8I8I4I4", 7, 8, time, 99, 1, 0) end
    local pidtid = string.pack("<I4I4", 7, 8)
    local bytes = record(K.PERF_RECORD_SAMPLE, K.PERF_RECORD_MISC_USER,
        string.pack("<I4I4I8I8I4I4", 7, 8, 100, 99, 1, 0))
      .. record(K.PERF_RECORD_COMM, K.PERF_RECORD_MISC_COMM_EXEC, pidtid .. "worker\0\0" .. sid(101))
      .. record(K.PERF_RECORD_EXIT, 0, string.pack("<I4I4I4I4I8", 7, 1, 8, 1, 555) .. sid(102))
      .. record(K.PERF_RECORD_LOST, 0, string.pack("<I8I8", 99, 3) .. sid(103))
      .. record(K.PERF_RECORD_SWITCH, K.PERF_RECORD_MISC_SWITCH_OUT, sid(104))
      .. record(K.PERF_RECORD_MMAP, 0, pidtid .. string.pack("<I8I8I8", 0x1000, 0x2000, 0)
        .. "/lib/x.so\0\0\0\0\0\0\0" .. sid(105))
      .. record(K.PERF_RECORD_SAMPLE, K.PERF_RECORD_MISC_KERNEL, string.pack("<I4I4I8I8I4I4", 9, 9, 106, 99, 0, 0))
    local fresh = {}
    for rec in core.stream(bytes, lay):records() do fresh[#fresh + 1] = rec end
    assert.same({ "sample", "comm", "exit", "lost", "switch", "mmap", "sample" }, (function()
      local t = {}
      for i, r in ipairs(fresh) do t[i] = r.type end
      return t
    end)())
    -- the trailer whole in sample_id; time lifted where the body has none,
    -- the body's own time kept (exit)
    assert.same({ pid = 7, tid = 8, time = 101, id = 99, cpu = 1 }, fresh[2].sample_id)
    assert.same({ 101, 1, 99 }, { fresh[2].time, fresh[2].cpu, fresh[2].id })
    assert.same({ 555, 102 }, { fresh[3].time, fresh[3].sample_id.time })
    assert.equal(99, fresh[4].id)                                -- the lost record's own id
    local t, n = {}, 0
    for rec in core.stream(bytes, lay):records(t) do
      n = n + 1
      assert.same(fresh[n], copy(rec))
    end
    assert.equal(#fresh, n)
  end)

  it("give rb:samples every sample field as the tables hold it", function()
    local fields = { "ip", "tid", "time", "addr", "id", "stream_id", "cpu", "period" }
    local lay = { sample_type = { "identifier", "ip", "tid", "time", "addr", "id", "stream_id", "cpu", "period" } }
    -- identifier, ip, pid/tid, time, addr, id, stream_id, cpu/res, period
    local body = string.pack("<I8I8I4I4I8I8I8I8I4I4I8", 5, 0x400, 3, 4, 77, 0xdead, 5, 6, 1, 0, 1000)
    local bytes = record(K.PERF_RECORD_SAMPLE, 0, body) .. record(K.PERF_RECORD_SAMPLE, 0, body)
    local want = {}
    for rec in core.stream(bytes, lay):records() do
      local row = {}
      for i, f in ipairs(fields) do row[i] = rec[f] end
      row[#row + 1] = rec.pid
      row[#row + 1] = rec.identifier
      want[#want + 1] = row
    end
    assert.same({ 0x400, 4, 77, 0xdead, 5, 6, 1, 1000, 3, 5 }, want[1])
    local got = {}
    for ip, tid, time, addr, id, stream_id, cpu, period, pid, identifier in
        core.stream(bytes, lay):samples("ip", "tid", "time", "addr", "id", "stream_id", "cpu", "period",
          "pid", "identifier") do
      got[#got + 1] = { ip, tid, time, addr, id, stream_id, cpu, period, pid, identifier }
    end
    assert.same(want, got)
  end)
end)
