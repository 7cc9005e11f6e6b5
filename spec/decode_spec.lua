-- The record decoder on synthesized bytes: every sample_type field, every
-- record type, the sample_id_all trailer, demultiplexing by id, and
-- malformed input. Layouts are given as tables (perf.core.decode).
local core = require "perf.core"

local R = {
  mmap = 1, lost = 2, comm = 3, exit = 4, throttle = 5, unthrottle = 6,
  fork = 7, read = 8, sample = 9, mmap2 = 10, aux = 11, itrace_start = 12,
  lost_samples = 13, switch = 14, switch_cpu_wide = 15, namespaces = 16,
  ksymbol = 17, bpf_event = 18, cgroup = 19, text_poke = 20,
  aux_output_hw_id = 21,
}

local function u64(...)
  return string.pack("<" .. ("i8"):rep(select("#", ...)), ...)
end
local function u32(...)
  return string.pack("<" .. ("I4"):rep(select("#", ...)), ...)
end
-- a NUL-terminated string padded to 8 bytes, as the kernel writes names
local function str8(s)
  local n = #s + 1
  return s .. ("\0"):rep(n + (-n % 8) - #s)
end
local record = require("helpers").record_bytes

local ALL = {
  "identifier", "ip", "tid", "time", "addr", "id", "stream_id", "cpu",
  "period", "read", "callchain", "raw", "branch_stack", "regs_user",
  "stack_user", "weight_struct", "data_src", "transaction", "regs_intr",
  "phys_addr", "cgroup", "data_page_size", "code_page_size", "aux",
}

describe("decoding samples", function()
  local regs_mask = (1 << 0) | (1 << 1) | (1 << 7) | (1 << 8) | (1 << 23) | (1 << 32) | (1 << 33)
  local layout = {
    sample_type = ALL,
    read_format = { "total_time_enabled", "total_time_running", "id", "lost", "group" },
    branch_sample_type = { "any", "hw_index", "counters" },
    sample_regs_user = regs_mask,
    sample_regs_intr = (1 << 8),
    id = 77,
  }
  -- branch flags: mispred, in_tx, cycles 1234, type 5, spec 2, new_type 3, priv 6
  local flags = 1 | (1 << 2) | (1234 << 4) | (5 << 20) | (2 << 24) | (3 << 26) | (6 << 30)
  local data_src = 2 | (0xa << 5) | (2 << 19) | (1 << 24) | (0xa << 26) |
                   (1 << 33) | (1 << 38) | (1 << 40) | (2 << 43)
  local raw = "tracepoint bytes" .. ("\0"):rep(4)          -- 20 bytes
  local body = u64(77, 0x401000) .. u32(1234, 1235) .. u64(5000000, 0xdead, 77, 88)
    .. u32(1, 0) .. u64(100)
    -- read, group: nr, enabled, running, {value, id, lost} x 2
    .. u64(2, 1000, 900, 11, 77, 0, 22, 78, 3)
    -- callchain with context markers
    .. u64(5, -128, 0xffffffff81000000, -512, 0x401000, 0x401234)
    .. string.pack("<I4", #raw) .. raw
    -- branch stack: nr, hw_idx, entries, counters
    .. u64(2, 7, 0x1000, 0x2000, flags, 0x3000, 0x4000, 0, 42, 43)
    -- regs_user: abi 64, 7 registers
    .. u64(2, 1, 2, 3, 4, 5, 6, 7)
    -- stack_user: size 16, data, dyn_size 8
    .. u64(16) .. ("S"):rep(16) .. u64(8)
    -- weight_struct: var1_dw 0x11223344, var2_w 0x5566, var3_w 0x7788
    .. u64(0x11223344 | 0x5566 << 32 | 0x7788 << 48)
    .. u64(data_src, 0x3, 2, 0x401000)                -- data_src, transaction, regs_intr (abi 2, ip)
    .. u64(0x12345000, 9, 4096, 2097152)             -- phys_addr, cgroup, data/code page size
    .. u64(8) .. "AUXDATA!"                          -- aux last

  local rec, size = core.decode(record(R.sample, 2 | (1 << 14), body), layout)

  it("decodes every field in the kernel's order", function()
    assert.is_nil(rec.error)
    assert.equal(8 + #body, size)
    assert.equal("sample", rec.type)
    assert.equal("user", rec.cpumode)
    assert.is_true(rec.exact_ip)
    assert.equal(77, rec.identifier)
    assert.equal(0x401000, rec.ip)
    assert.equal(1234, rec.pid)
    assert.equal(1235, rec.tid)
    assert.equal(5000000, rec.time)
    assert.equal(0xdead, rec.addr)
    assert.equal(77, rec.id)
    assert.equal(88, rec.stream_id)
    assert.equal(1, rec.cpu)
    assert.equal(100, rec.period)
    assert.equal(0x3, rec.transaction)
    assert.equal(0x12345000, rec.phys_addr)
    assert.equal(9, rec.cgroup)
    assert.equal(4096, rec.data_page_size)
    assert.equal(2097152, rec.code_page_size)
    assert.equal("AUXDATA!", rec.aux)
    assert.equal(raw, rec.raw)
  end)

  it("shapes a group read like g:read", function()
    assert.same({ time_enabled = 1000, time_running = 900,
                  { value = 11, id = 77, lost = 0 }, { value = 22, id = 78, lost = 3 } }, rec.read)
  end)

  it("exposes callchain context markers as strings, never as addresses", function()
    assert.same({ "kernel", 0xffffffff81000000, "user", 0x401000, 0x401234 }, rec.callchain)
  end)

  it("decodes a branch stack with hw_idx, flags and counters", function()
    local b = rec.branch_stack
    assert.equal(7, b.hw_idx)
    assert.equal(2, #b)
    assert.same({ from = 0x1000, to = 0x2000, mispred = true, predicted = false,
                  in_tx = true, abort = false, cycles = 1234, type = 5, spec = 2,
                  new_type = 3, priv = 6, counters = 42 }, b[1])
    assert.equal(0x3000, b[2].from)
    assert.is_false(b[2].mispred)
    assert.equal(43, b[2].counters)
  end)

  it("names registers from the mask", function()
    assert.same({ abi = 2, ax = 1, bx = 2, sp = 3, ip = 4, r15 = 5, xmm0 = 6, xmm0_hi = 7 },
                rec.regs_user)
    assert.same({ abi = 2, ip = 0x401000 }, rec.regs_intr)
  end)

  it("keeps the user stack with its dynamic size", function()
    assert.same({ size = 16, data = ("S"):rep(16), dyn_size = 8 }, rec.stack_user)
  end)

  it("splits weight_struct into its parts", function()
    assert.same({ var1_dw = 0x11223344, var2_w = 0x5566, var3_w = 0x7788 }, rec.weight_struct)
    assert.equal(0x11223344 | 0x5566 << 32 | 0x7788 << 48, rec.weight)
  end)

  it("decodes data_src into its parts", function()
    local m = rec.mem
    assert.equal(data_src, rec.data_src)
    assert.same({ "load" }, m.op)
    assert.same({ "hit", "l1" }, m.lvl)
    assert.same({ "none" }, m.snoop)
    assert.same({ "na" }, m.lock)
    assert.same({ "hit", "l1" }, m.dtlb)
    assert.equal("l1", m.lvl_num)
    assert.is_false(m.remote)
    assert.same({ "fwd" }, m.snoopx)
    assert.same({ "na" }, m.blk)
    assert.equal(2, m.hops)
    assert.equal(2, m.mem_op)
    assert.equal(0xa, m.mem_lvl)
  end)
end)

describe("decoding sample variants", function()
  it("reads a plain weight and a non-group read", function()
    local lay = { sample_type = { "tid", "read", "weight" },
                  read_format = { "total_time_enabled", "id" } }
    local rec = core.decode(record(R.sample, 1, u32(5, 6) .. u64(42, 1000, 9, 123)), lay)
    assert.is_nil(rec.error)
    assert.equal("kernel", rec.cpumode)
    assert.same({ value = 42, time_enabled = 1000, id = 9 }, rec.read)
    assert.equal(123, rec.weight)
    assert.is_nil(rec.weight_struct)
  end)

  it("takes no register values when the abi is none, no dyn_size for an empty stack", function()
    local lay = { sample_type = { "regs_user", "stack_user", "period" }, sample_regs_user = 0xff }
    -- period comes first: the kernel's order, not the list's
    local rec = core.decode(record(R.sample, 0, u64(55, 0, 0)), lay)
    assert.is_nil(rec.error)
    assert.same({ abi = 0 }, rec.regs_user)
    assert.same({ size = 0 }, rec.stack_user)
    assert.equal(55, rec.period)
  end)

  it("reads a branch stack without hw_idx", function()
    local lay = { sample_type = { "branch_stack" }, branch_sample_type = { "any" } }
    local rec = core.decode(record(R.sample, 0, u64(1, 0x10, 0x20, 2)), lay)
    assert.is_nil(rec.error)
    assert.is_nil(rec.branch_stack.hw_idx)
    assert.is_true(rec.branch_stack[1].predicted)
  end)
end)

describe("decoding other records", function()
  -- trailer: tid, time, id, stream_id, cpu, identifier
  local lay = { sample_type = { "tid", "time", "id", "stream_id", "cpu", "identifier", "ip" },
                sample_id_all = true, read_format = { "id" } }
  local trailer = u32(10, 11) .. u64(999, 5, 6) .. u32(1, 0) .. u64(5)
  local function dec(type, misc, body)
    local rec, size = core.decode(record(type, misc, body .. trailer), lay)
    assert.is_nil(rec.error)
    assert.equal(8 + #body + #trailer, size)
    return rec
  end

  it("keeps the trailer whole and lifts time, cpu, id, stream_id", function()
    local rec = dec(R.switch, 1 << 13, "")
    assert.same({ pid = 10, tid = 11, time = 999, id = 5, stream_id = 6, cpu = 1, identifier = 5 },
                rec.sample_id)
    assert.equal(999, rec.time)
    assert.equal(1, rec.cpu)
    assert.equal(5, rec.id)
    assert.equal(6, rec.stream_id)
    assert.is_nil(rec.pid)
    assert.is_true(rec.switch_out)
  end)

  it("never overwrites body fields with the trailer", function()
    local rec = dec(R.exit, 0, u32(1, 2, 3, 4) .. u64(12345))
    assert.same({ "exit", 1, 2, 3, 4, 12345, 1 },
                { rec.type, rec.pid, rec.ppid, rec.tid, rec.ptid, rec.time, rec.cpu })
    rec = dec(R.cgroup, 0, u64(4242) .. str8("/sys/fs/cgroup/x"))
    assert.equal(4242, rec.id)
    assert.equal("/sys/fs/cgroup/x", rec.path)
    assert.equal(5, rec.sample_id.id)
  end)

  it("decodes mmap, mmap2 and its build-id form", function()
    local rec = dec(R.mmap, 2, u32(7, 8) .. u64(0x1000, 0x2000, 0) .. str8("/lib/a.so"))
    assert.same({ 7, 8, 0x1000, 0x2000, 0, "/lib/a.so" },
                { rec.pid, rec.tid, rec.addr, rec.len, rec.pgoff, rec.filename })
    rec = dec(R.mmap2, 2 | (1 << 13), u32(7, 8) .. u64(0x1000, 0x2000, 0x300) ..
              u32(8, 1) .. u64(1234, 5) .. u32(5, 2) .. str8("/lib/b.so"))
    assert.same({ 8, 1, 1234, 5, 5, 2, "/lib/b.so", true },
                { rec.maj, rec.min, rec.ino, rec.ino_generation, rec.prot, rec.flags,
                  rec.filename, rec.mmap_data })
    local id = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14"
    rec = dec(R.mmap2, 2 | (1 << 14), u32(7, 8) .. u64(0x1000, 0x2000, 0) ..
              string.pack("<BBI2", 20, 0, 0) .. id .. u32(5, 2) .. str8("/lib/c.so"))
    assert.equal("0102030405060708090a0b0c0d0e0f1011121314", rec.build_id)
    assert.is_true(rec.mmap_build_id)
    assert.is_nil(rec.ino)
    assert.equal("/lib/c.so", rec.filename)
  end)

  it("decodes lost, comm, fork, throttle, read and aux", function()
    local rec = dec(R.lost, 0, u64(5, 17))
    assert.same({ 5, 17 }, { rec.id, rec.lost })
    rec = dec(R.comm, 1 << 13, u32(3, 4) .. str8("lua5.4"))
    assert.same({ 3, 4, "lua5.4", true }, { rec.pid, rec.tid, rec.comm, rec.comm_exec })
    rec = dec(R.fork, 0, u32(20, 10, 21, 10) .. u64(777))
    assert.same({ "fork", 20, 10, 21, 10, 777 }, { rec.type, rec.pid, rec.ppid, rec.tid, rec.ptid, rec.time })
    rec = dec(R.throttle, 0, u64(100, 5, 6))
    assert.same({ "throttle", 100, 5, 6 }, { rec.type, rec.time, rec.id, rec.stream_id })
    rec = dec(R.unthrottle, 0, u64(101, 5, 6))
    assert.equal("unthrottle", rec.type)
    rec = dec(R.read, 0, u32(3, 4) .. u64(55, 5))
    assert.same({ value = 55, id = 5 }, rec.read)
    rec = dec(R.aux, 0, u64(4096, 512, 1))
    assert.same({ 4096, 512, 1 }, { rec.aux_offset, rec.aux_size, rec.flags })
  end)

  it("decodes itrace_start, lost_samples, switch_cpu_wide, namespaces", function()
    local rec = dec(R.itrace_start, 0, u32(3, 4))
    assert.same({ "itrace_start", 3, 4 }, { rec.type, rec.pid, rec.tid })
    rec = dec(R.lost_samples, 0, u64(9))
    assert.same({ "lost_samples", 9 }, { rec.type, rec.lost })
    rec = dec(R.switch_cpu_wide, (1 << 13) | (1 << 14), u32(30, 31))
    assert.same({ 30, 31, true, true },
                { rec.next_prev_pid, rec.next_prev_tid, rec.switch_out, rec.switch_out_preempt })
    rec = dec(R.namespaces, 0, u32(3, 4) .. u64(2, 1, 100, 2, 200))
    assert.same({ { dev = 1, ino = 100, name = "net" }, { dev = 2, ino = 200, name = "uts" } },
                rec.namespaces)
  end)

  it("decodes ksymbol, bpf_event, text_poke, aux_output_hw_id", function()
    local rec = dec(R.ksymbol, 0, u64(0xffffffffa0000000) .. string.pack("<I4I2I2", 64, 1, 0)
                    .. str8("bpf_prog_x"))
    assert.same({ 0xffffffffa0000000, 64, 1, 0, "bpf_prog_x" },
                { rec.addr, rec.len, rec.ksym_type, rec.flags, rec.name })
    rec = dec(R.bpf_event, 0, string.pack("<I2I2I4", 1, 0, 33) .. "\xde\xad\xbe\xef\x01\x02\x03\x04")
    assert.same({ "bpf_event", 1, 33, "deadbeef01020304" }, { rec.type, rec.bpf_type, rec.id, rec.tag })
    rec = dec(R.text_poke, 0, u64(0xffffffff81000000) .. string.pack("<I2I2", 2, 3) .. "ABxyz\0\0\0")
    assert.same({ 2, 3, "ABxyz" }, { rec.old_len, rec.new_len, rec.bytes })
    rec = dec(R.aux_output_hw_id, 0, u64(12))
    assert.same({ "aux_output_hw_id", 12 }, { rec.type, rec.hw_id })
  end)

  it("yields unknown types with their raw bytes", function()
    local bytes = record(99, 0, u64(1, 2))
    local rec = core.decode(bytes, lay)
    assert.equal("unknown", rec.type)
    assert.equal(99, rec.type_id)
    assert.equal(bytes, rec.raw)
    assert.is_nil(rec.error)
  end)
end)

describe("decoding malformed input", function()
  local lay = { sample_type = { "ip", "callchain" } }

  it("reports a header size below 8", function()
    local rec = core.decode(string.pack("<I4I2I2", 9, 0, 4), lay)
    assert.matches("size smaller than a header", rec.error)
  end)

  it("reports bytes shorter than header.size", function()
    local bytes = record(9, 0, u64(1, 0))
    local rec = core.decode(bytes:sub(1, 12), lay)
    assert.matches("shorter than its header", rec.error)
    assert.equal(bytes:sub(1, 12), rec.raw)
    rec = core.decode("abc", lay)
    assert.matches("shorter than its header", rec.error)
  end)

  it("names the field that runs past the record", function()
    local rec = core.decode(record(9, 0, u64(0x1000, 1000000, 1)), lay)
    assert.matches("callchain: nr entries", rec.error)
    assert.equal("sample", rec.type)
    assert.is_nil(rec.ip)
    rec = core.decode(record(9, 0, u64(0x1000)), lay)
    assert.matches("callchain.nr", rec.error)
    rec = core.decode(record(9, 0, u64(0x1000, -1)), lay)       -- nr = 2^64-1
    assert.matches("callchain: nr entries", rec.error)
  end)

  it("reports a sample_id trailer larger than the record", function()
    local l = { sample_type = { "tid", "time", "cpu" }, sample_id_all = true }
    local rec = core.decode(record(R.switch, 0, u64(1)), l)
    assert.matches("trailer larger than the record", rec.error)
  end)

  it("reports a raw size past the record and a stack dyn_size past its size", function()
    local rec = core.decode(record(9, 0, string.pack("<I4", 100) .. "abcd"), { sample_type = { "raw" } })
    assert.matches("raw: size bytes", rec.error)
    rec = core.decode(record(9, 0, u64(8) .. "12345678" .. u64(9)), { sample_type = { "stack_user" } })
    assert.matches("dyn_size > size", rec.error)
  end)
end)

describe("demultiplexing by id", function()
  local a = { sample_type = { "identifier", "ip", "tid" }, sample_id_all = true, id = 100 }
  local b = { sample_type = { "identifier", "time", "raw" }, sample_id_all = true, id = 200 }

  it("decodes each record with its own event's layout", function()
    local ra = core.decode(record(9, 0, u64(100, 0x4000) .. u32(1, 2)), a, b)
    assert.same({ 100, 0x4000, 1, 2 }, { ra.identifier, ra.ip, ra.pid, ra.tid })
    assert.is_nil(ra.raw)
    local rb = core.decode(record(9, 0, u64(200, 555) .. string.pack("<I4", 4) .. "wxyz"), a, b)
    assert.same({ 200, 555, "wxyz" }, { rb.identifier, rb.time, rb.raw })
    assert.is_nil(rb.ip)
    -- a non-sample record: the identifier is the last word of its trailer
    local rc = core.decode(record(R.lost, 0, u64(200, 3) .. u64(555, 200)), a, b)
    assert.same({ 200, 3, 555, 200 }, { rc.id, rc.lost, rc.time, rc.sample_id.identifier })
  end)

  it("finds the id through PERF_SAMPLE_ID when fixed fields precede it", function()
    local c = { sample_type = { "tid", "id", "period" }, id = 1 }
    local d = { sample_type = { "tid", "id", "cpu" }, id = 2 }
    local r1 = core.decode(record(9, 0, u32(1, 1) .. u64(1, 10)), c, d)
    assert.same({ 1, 10 }, { r1.id, r1.period })
    local r2 = core.decode(record(9, 0, u32(1, 1) .. u64(2) .. u32(1, 0)), c, d)
    assert.same({ 2, 1 }, { r2.id, r2.cpu })
  end)

  it("marks records whose id matches no layout", function()
    local r = core.decode(record(9, 0, u64(300, 1) .. u32(1, 2)), a, b)
    assert.matches("matches no event", r.error)
    assert.equal("sample", r.type)
  end)

  it("refuses layouts it could not tell apart", function()
    assert.has_error(function()
      core.decode(record(9, 0, u64(1)), { sample_type = { "ip" } }, { sample_type = { "ip", "tid" } })
    end)
  end)
end)

describe("perf.core.stream", function()
  local lay = { sample_type = { "ip", "tid", "time" }, sample_id_all = true }
  local function sample(ip) return record(9, 2, u64(ip) .. u32(1, 2) .. u64(ip * 10)) end
  local bytes = sample(1) .. record(R.comm, 0, u32(1, 2) .. str8("x") .. u32(1, 2) .. u64(15))
                .. sample(2) .. sample(3)

  it("iterates every record of a byte string", function()
    local rb = core.stream(bytes, lay)
    local types = {}
    for rec in rb:records() do types[#types + 1] = rec.type .. ":" .. (rec.ip or rec.comm) end
    assert.same({ "sample:1", "comm:x", "sample:2", "sample:3" }, types)
    assert.equal(0, rb:pending())
    assert.same({ nil, "hangup" }, { rb:poll(0) })
    rb:close()
  end)

  it("refills one table on the fast path, clearing what the last record left", function()
    local rb = core.stream(bytes, lay)
    local t, seen = {}, {}
    for rec in rb:records(t) do
      assert.equal(t, rec)
      seen[#seen + 1] = { rec.type, rec.ip, rec.comm, rec.time }
    end
    assert.same({ { "sample", 1, nil, 10 }, { "comm", nil, "x", 15 },
                  { "sample", 2, nil, 20 }, { "sample", 3, nil, 30 } }, seen)
    assert.is_nil(t.sample_id)           -- the comm's trailer went with it
  end)

  it("yields sample fields as values on rb:samples, passing over other records", function()
    local rb = core.stream(bytes, lay)
    local got = {}
    for ip, tid, time, cpumode in rb:samples("ip", "tid", "time", "cpumode") do
      got[#got + 1] = { ip, tid, time, cpumode }
    end
    assert.same({ { 1, 2, 10, "user" }, { 2, 2, 20, "user" }, { 3, 2, 30, "user" } }, got)
    assert.equal(0, rb:pending())
  end)

  it("refuses sample fields the layout does not have, and raises on a bad sample", function()
    local rb = core.stream(bytes, lay)
    local ok, err = pcall(rb.samples, rb, "ip", "addr")
    assert.is_false(ok)
    assert.matches("field 'addr' is not in the sample_type", err)
    assert.has_error(function() rb:samples() end)
    assert.has_error(function() rb:samples("nosuchfield") end)
    local bad = core.stream(sample(1) .. record(9, 0, u64(5)) .. sample(2), lay)
    local n = 0
    ok, err = pcall(function() for _ in bad:samples("ip") do n = n + 1 end end)
    assert.is_false(ok)
    assert.matches("sample record: field runs past the end of the record: tid", err)
    assert.equal(1, n)
    for ip in bad:samples("ip") do assert.equal(2, ip) n = n + 1 end
    assert.equal(2, n)
  end)

  it("stops with an error on a header smaller than 8 and discards the rest", function()
    local rb = core.stream(sample(1) .. string.pack("<I4I2I2", 9, 0, 0) .. sample(2), lay)
    local n = 0
    assert.has_error(function() for _ in rb:records() do n = n + 1 end end,
                     "perf ring: record header size below 8 (at byte 32, size 0); the unread 40 bytes were discarded")
    assert.equal(1, n)
    assert.equal(0, rb:pending())
  end)

  it("stops with an error on a record larger than what is left", function()
    local rb = core.stream(sample(1) .. sample(2):sub(1, 16), lay)
    assert.has_error(function() for _ in rb:records() do end end)
  end)
end)
