-- csrc/decode_lua.c: perf.core.decode and perf.core.stream, the decoder
-- for bytes that come from no ring: layouts given as tables or events,
-- their checks, and the stream ring. Records are packed here as the uapi
-- header lays them out.
local perf = require "perf"
local core = perf.core

local record = require("helpers").record_bytes

describe("perf.core.decode", function()
  it("layout tables name their fields", function()
    local ok, err = pcall(perf.core.decode, "", { sample_typ = { "ip" } })
    assert.is_false(ok)
    assert.matches("unknown layout field 'sample_typ' %(did you mean 'sample_type'%?%)", err)
    assert.has_error(function() perf.core.decode("", { sample_type = { "nope" } }) end)
    assert.has_error(function() perf.core.decode("", 42) end)
  end)

  it("decodes with an event's layout as with the table of its attr", function()
    local ev <close> = assert(perf.open { "task-clock", sample_type = { "ip", "tid", "time", "id", "read" },
      read_format = { "total_time_enabled", "id" }, sample_id_all = true })
    local a = ev:attr()
    -- sample fields in the order of the sample_type bits: ip, pid/tid, time, id, read
    local bytes = record(core.PERF_RECORD_SAMPLE, core.PERF_RECORD_MISC_USER,
      string.pack("<I8I4I4I8I8I8I8I8", 0x401000, 11, 12, 999, ev:id(), 77, 5000, ev:id()))
    local by_event, size = core.decode(bytes, ev)
    local by_table = core.decode(bytes, { sample_type = a.sample_type, read_format = a.read_format,
      sample_id_all = a.sample_id_all })
    assert.equal(#bytes, size)
    assert.same(by_table, by_event)
    assert.same({ 0x401000, 11, 12, 999, ev:id(), "user" },
      { by_event.ip, by_event.pid, by_event.tid, by_event.time, by_event.id, by_event.cpumode })
    assert.same({ value = 77, time_enabled = 5000, id = ev:id() }, by_event.read)
  end)

  it("returns the size the header gives, whatever the layout reads of it", function()
    local lay = { sample_type = { "ip" } }
    local rec, size = core.decode(record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8I8", 5, 6)), lay)
    assert.same({ "sample", 5, 24 }, { rec.type, rec.ip, size })
    rec, size = core.decode("abc", lay)
    assert.same({ "unknown", 0, "abc" }, { rec.type, size, rec.raw })
    assert.matches("record shorter than its header", rec.error)
  end)

  it("checks the layouts: present, at most 64, integers where integers go", function()
    local lay = { sample_type = { "ip" } }
    local bytes = record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8", 5))
    -- (the function is named 'decode' or 'perf.core.decode' depending on how Lua finds it)
    local ok, err = pcall(core.decode, bytes)
    assert.is_false(ok)
    assert.matches("bad argument #2 to '[%w.]*decode' %(layout expected%)", err)
    ok, err = pcall(core.decode, bytes, 5)
    assert.is_false(ok)
    assert.matches("bad argument #2 to '[%w.]*decode' %(layout table or perf%.event expected, got number%)", err)
    assert.has_error(function() core.decode(bytes, { id = "x" }) end, "layout: id must be an integer")
    assert.has_error(function() core.decode(bytes, { sample_regs_user = 1.5 }) end,
      "layout: sample_regs_user must be an integer")
    local many = {}
    for i = 1, 64 do many[i] = { sample_type = { "identifier", "ip" }, id = i } end
    local rec = core.decode(record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8I8", 64, 0x77)), table.unpack(many))
    assert.same({ 64, 0x77 }, { rec.id, rec.ip })
    many[65] = { sample_type = { "identifier", "ip" }, id = 65 }
    assert.has_error(function() core.decode(bytes, table.unpack(many)) end, "at most 64 layouts")
    assert.same(core.decode(bytes, lay), core.decode(bytes, { sample_type = core.PERF_SAMPLE_IP }))
  end)
end)

describe("perf.core.stream", function()
  it("is a ring over a copy of the bytes, consumed as it is read", function()
    local lay = { sample_type = { "ip" } }
    local bytes = record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8", 1))
      .. record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8", 2))
    local rb = core.stream(bytes .. "", lay)          -- the only reference to that string
    collectgarbage()
    collectgarbage()
    assert.equal(#bytes, rb:pending())
    local ips = {}
    for ip in rb:samples("ip") do ips[#ips + 1] = ip end
    assert.same({ 1, 2 }, ips)
    assert.equal(0, rb:pending())
    assert.matches("^perf%.ring", tostring(rb))
  end)

  it("takes an event as its layout, and checks layouts as decode does", function()
    local ev <close> = assert(perf.open { "task-clock", sample_type = { "tid" } })
    local rb = core.stream(record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I4I4", 3, 4)), ev)
    local n = 0
    for rec in rb:records() do
      n = n + 1
      assert.same({ 3, 4 }, { rec.pid, rec.tid })
    end
    assert.equal(1, n)
    local ok, err = pcall(core.stream, "")
    assert.is_false(ok)
    assert.matches("bad argument #2 to '[%w.]*stream' %(layout expected%)", err)
    assert.has_error(function() core.stream("", { sample_typ = {} }) end)
    assert.has_error(function() core.stream(nil, {}) end)
  end)
end)
