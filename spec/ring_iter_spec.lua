-- csrc/ring_iter.c: the record iterators (rb:records, rb:samples,
-- rb:snapshot, perf.core.merge): the reused-table path against the
-- table-per-record path, values against tables, the loop's bounds, its
-- closing, and merging by time. Records are made by the kernel
-- (tracepoints, exact counts) or packed here byte by byte.
local perf = require "perf"
local H = require "helpers"

local core = perf.core
local PID = H.PID

local opens = H.opens

local tp = H.openat_sampler          -- an openat tracepoint sampling every hit

local record = H.record_bytes

local copy = H.copy

describe("ring iterators", function()
  it("the iterator says what it is", function()
    local s = perf.core.stream("", { sample_type = { "ip" } })
    local _, it = s:records()
    assert.equal("perf.ring.iter records (open)", tostring(it))
    for _ in s:records() do end
  end)
  it("come out as plain values from rb:samples", function()
    local ev = tp({ "ip", "tid", "time", "cpu", "period" }, { sample_id_all = true, task = true })
    local rb = assert(ev:mmap(4))
    ev:enable()
    opens(20)
    os.execute("true")                  -- a fork record among the samples
    ev:disable()
    local n, last = 0, 0
    for ip, tid, time, cpu, period in rb:samples("ip", "tid", "time", "cpu", "period") do
      n = n + 1
      assert.is_true(ip > 0 and time >= last and cpu >= 0)
      assert.same({ PID, 1 }, { tid, period })
      last = time
    end
    assert.equal(20, n)
    assert.equal(0, rb:pending())
    ev:close()
  end)

  it("come out in a reused table on the fast path", function()
    local ev = tp({ "ip", "tid", "time", "cpu", "period" })
    local rb = assert(ev:mmap(4))
    ev:enable()
    opens(20)
    ev:disable()
    local t, n = {}, 0
    for rec in rb:records(t) do
      n = n + 1
      assert.equal(t, rec)
      assert.same({ "sample", PID, 1 }, { rec.type, rec.tid, rec.period })
    end
    assert.equal(20, n)
    ev:close()
  end)
  it("raise when the ring closes under a running loop, and after a break", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    ev:enable() opens(3) ev:disable()
    local f, _, _, closing = rb:records()
    assert.truthy(f())
    rb:close()
    assert.has_error(f, "attempt to use a closed perf ring")
    do local _ <close> = closing end
    assert.has_error(f, "attempt to use a closed ring iterator")
    ev:close()
  end)
end)

describe("the overwrite ring (write_backward)", function()
  it("reads the newest records first, and keeps recording after a snapshot", function()
    local ev = tp({ "tid", "read" }, { write_backward = true, read_format = {} })
    local rb = assert(ev:mmap(1))
    assert.has_error(function() rb:records() end)
    ev:enable()
    opens(1000)
    local values = {}
    for rec in rb:snapshot() do values[#values + 1] = rec.read.value end
    assert.is_true(#values > 10 and #values < 1000)
    for i, v in ipairs(values) do assert.equal(1001 - i, v) end
    opens(10)
    ev:disable()
    local first
    for rec in rb:snapshot() do first = first or rec.read.value end
    assert.equal(1010, first)
    ev:close()
  end)
end)

describe("perf.core.merge", function()
  it("interleaves rings by time", function()
    local lay = { sample_type = { "time" } }
    local function s(t) return string.pack("<I4I2I2i8", 9, 0, 16, t) end
    local a = core.stream(s(1) .. s(4) .. s(5) .. s(9), lay)
    local b = core.stream(s(2) .. s(3) .. s(6) .. s(7) .. s(8), lay)
    local times = {}
    for rec in core.merge({ a, b }) do times[#times + 1] = rec.time end
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, times)
    assert.same({ nil, "hangup" }, { core.poll({ a, b }, 0) })
    a = core.stream(s(1) .. s(4), lay)
    b = core.stream(s(2) .. s(3), lay)
    times = {}
    for t in core.merge({ a, b }, "time") do times[#times + 1] = t end
    assert.same({ 1, 2, 3, 4 }, times)
  end)
end)

describe("the reused table", function()
  -- a sample (ip, tid, time, a callchain), a comm record, a lost record,
  -- a sample again: uapi perf_event.h's layouts, packed here
  local lay = { sample_type = { "ip", "tid", "time", "callchain" } }
  local function sample(ip, time, chain)
    local body = string.pack("<I8I4I4I8I8", ip, 7, 8, time, #chain)
    for _, a in ipairs(chain) do body = body .. string.pack("<I8", a) end
    return record(core.PERF_RECORD_SAMPLE, core.PERF_RECORD_MISC_USER, body)
  end
  local bytes = sample(0x1000, 10, { 0x1000, 0x2000, 0x3000 })
    .. record(core.PERF_RECORD_COMM, 0, string.pack("<I4I4", 7, 8) .. "worker\0\0")
    .. record(core.PERF_RECORD_LOST, 0, string.pack("<I8I8", 1, 5))
    .. sample(0x4000, 20, { 0x4000 })

  it("yields what fresh tables hold, record by record, keys of the last one cleared", function()
    local fresh = {}
    for rec in core.stream(bytes, lay):records() do fresh[#fresh + 1] = rec end
    assert.same({ "sample", "comm", "lost", "sample" },
      { fresh[1].type, fresh[2].type, fresh[3].type, fresh[4].type })
    -- what was packed
    assert.same({ 0x1000, 7, 8, 10, { 0x1000, 0x2000, 0x3000 }, "user" },
      { fresh[1].ip, fresh[1].pid, fresh[1].tid, fresh[1].time, fresh[1].callchain, fresh[1].cpumode })
    assert.same({ "worker", 7, 8 }, { fresh[2].comm, fresh[2].pid, fresh[2].tid })
    assert.same({ 1, 5 }, { fresh[3].id, fresh[3].lost })
    local t, n, chains = {}, 0, {}
    for rec in core.stream(bytes, lay):records(t) do
      n = n + 1
      assert.equal(t, rec)
      assert.same(fresh[n], copy(rec))                -- no key of the record before
      chains[n] = rec.callchain
    end
    assert.equal(4, n)
    -- nested values are fresh tables: the first callchain is intact
    assert.same({ 0x1000, 0x2000, 0x3000 }, chains[1])
    assert.are_not.equal(chains[1], chains[4])
  end)

  it("keeps the caller's own keys: only keys a record set are cleared", function()
    local t = { mine = true }
    local n = 0
    for rec in core.stream(bytes, lay):records(t) do
      assert.is_true(rec.mine)
      n = n + 1
    end
    assert.equal(4, n)
  end)

  it("refuses anything but a table", function()
    local rb = core.stream(bytes, lay)
    assert.has_error(function() rb:records("t") end)
    assert.has_error(function() rb:records(42) end)
  end)

  it("gives the same records as fresh tables on a kernel ring", function()
    -- two events on one tracepoint: the same samples in two rings
    local fields = { "ip", "tid", "cpu", "period", "raw" }
    local a <close> = tp(fields)
    local b <close> = tp(fields)
    local ra, rb = assert(a:mmap(2)), assert(b:mmap(2))
    assert(a:enable()) assert(b:enable())
    opens(30)
    assert(a:disable()) assert(b:disable())
    local fresh = {}
    for rec in ra:records() do fresh[#fresh + 1] = rec end
    assert.equal(30, #fresh)
    local t, n = {}, 0
    for rec in rb:records(t) do
      n = n + 1
      assert.same(fresh[n], copy(rec))
      assert.equal(PID, rec.tid)
    end
    assert.equal(30, n)
  end)
end)

describe("rb:samples", function()
  it("yields the fields the tables hold, skipping other records", function()
    local lay = { sample_type = { "ip", "tid", "time" } }
    local function sample(ip, time)
      return record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8I4I4I8", ip, 3, 4, time))
    end
    local bytes = sample(0x10, 1) .. record(core.PERF_RECORD_LOST, 0, string.pack("<I8I8", 0, 2))
      .. sample(0x20, 2) .. sample(0x30, 3)
    local want = {}
    for rec in core.stream(bytes, lay):records() do
      if rec.type == "sample" then want[#want + 1] = { rec.time, rec.ip, rec.tid, rec.pid } end
    end
    local got = {}
    local rb = core.stream(bytes, lay)
    for time, ip, tid, pid in rb:samples("time", "ip", "tid", "pid") do got[#got + 1] = { time, ip, tid, pid } end
    assert.same({ { 1, 0x10, 4, 3 }, { 2, 0x20, 4, 3 }, { 3, 0x30, 4, 3 } }, got)
    assert.same(want, got)
    assert.equal(2, (rb:lost()))                      -- the lost record counted on the way
  end)

  it("names a field the layout lacks, and suggests one for a misspelt name", function()
    local rb = core.stream("", { sample_type = { "ip" } })
    assert.has_error(function() rb:samples("tim") end, "samples: no sample field 'tim' (did you mean 'tid' or 'time'?)")
    local ok, err = pcall(rb.samples, rb, "time")
    assert.is_false(ok)
    assert.matches("time", err)
  end)
end)

describe("rb:records", function()
  it("reads up to the head it found when the loop began", function()
    local ev <close> = tp({ "tid" })
    local rb = assert(ev:mmap(4))
    assert(ev:enable())
    opens(5)
    local first = 0
    for _ in rb:records() do
      first = first + 1
      opens(1)                                     -- written, not yielded now
    end
    local second = 0
    for _ in rb:records() do second = second + 1 end
    assert(ev:disable())
    assert.same({ 5, 5 }, { first, second })
  end)

  it("say what they are and whether they are open, done or closed", function()
    local rb = core.stream(record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8", 1)), { sample_type = { "ip" } })
    local f, it, _, closing = rb:records()
    assert.equal(it, closing)
    assert.equal("perf.ring.iter records (open)", tostring(it))
    assert.truthy(f())
    assert.is_nil(f())
    assert.equal("perf.ring.iter records (done)", tostring(it))
    do local _ <close> = closing end
    assert.equal("perf.ring.iter records (closed)", tostring(it))
    local lay = { sample_type = { "time" } }
    local _, m = core.merge({ core.stream("", lay) })
    assert.equal("perf.ring.iter merge (open)", tostring(m))
  end)

  it("refuse an overwrite ring, and snapshot refuses the other kind", function()
    local fwd <close> = tp({ "tid" })
    local rf = assert(fwd:mmap(1))
    assert.has_error(function() rf:snapshot() end,
      "rb:snapshot() reads an overwrite ring: open the event with write_backward = true")
    local back <close> = tp({ "tid" }, { write_backward = true })
    local rbk = assert(back:mmap(1))
    assert.has_error(function() rbk:records() end,
      "this ring is in overwrite mode (write_backward): read it with rb:snapshot()")
    assert.has_error(function() rbk:samples("tid") end,
      "this ring is in overwrite mode (write_backward): read it with rb:snapshot()")
  end)
end)

describe("perf.core.merge, more", function()
  local lay = { sample_type = { "time", "ip" } }
  -- sample fields come in the order of the sample_type bits: ip, then time
  local function s(t, ip) return record(core.PERF_RECORD_SAMPLE, 0, string.pack("<I8I8", ip, t)) end

  it("fills a reused table as records() does, and keeps ties in ring order", function()
    local function rings()
      return { core.stream(s(1, 0xa1) .. s(5, 0xa5) .. s(5, 0xa6), lay), core.stream(s(2, 0xb2) .. s(5, 0xb5), lay) }
    end
    local fresh = {}
    for rec in core.merge(rings()) do fresh[#fresh + 1] = rec end
    -- without a table, each record is a table of its own, holding no ring
    assert.are_not.equal(fresh[1], fresh[2])
    assert.is_nil(fresh[1][1])
    local t, got = {}, {}
    for rec in core.merge(rings(), t) do
      assert.equal(t, rec)
      got[#got + 1] = copy(rec)
    end
    assert.same(fresh, got)
    local ips = {}
    for _, rec in ipairs(got) do ips[#ips + 1] = rec.ip end
    -- times 1, 2, then the three at 5; each ring's own order is kept
    assert.equal(0xa1, ips[1])
    assert.equal(0xb2, ips[2])
    local pos = {}
    for i, ip in ipairs(ips) do pos[ip] = i end
    assert.is_true(pos[0xa5] < pos[0xa6])
    assert.equal(5, #ips)
  end)

  it("merges kernel rings of two events in time order, counting each", function()
    local a <close> = tp({ "time", "tid" })
    local b <close> = tp({ "time", "tid" })
    local ra, rb = assert(a:mmap(2)), assert(b:mmap(2))
    assert(a:enable())
    opens(7)
    assert(b:enable())
    opens(9)
    assert(a:disable()) assert(b:disable())
    local n, last = 0, 0
    for time, tid in core.merge({ ra, rb }, "time", "tid") do
      n = n + 1
      assert.is_true(time >= last)
      assert.equal(PID, tid)
      last = time
    end
    assert.equal(7 + 9 + 9, n)
  end)
end)
