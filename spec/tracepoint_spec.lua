-- Tracepoints: formats from tracefs, decoding of raw samples, exact counts
-- and filters.

local perf = require "perf"
local tracepoint = require "perf.tracepoint"
local H = require "helpers"

local PID = H.PID

local caps = perf.capabilities()
local tracefs = caps.tracefs
local with_tracefs = tracefs and it or pending

local sh = H.sh

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

-- The field lines of a format file, counted without the parser.
local function field_lines(sys, ev)
  local n = 0
  for _ in read(("%s/events/%s/%s/format"):format(tracefs, sys, ev)):gmatch("\tfield:") do
    n = n + 1
  end
  return n
end

local function field(tp, name)
  local f = tp.field[name]
  return { f.offset, f.size, f.signed }
end

describe("perf.tracepoint formats", function()
  with_tracefs("sched:sched_switch: char arrays, pid_t, signed long", function()
    local tp = assert(perf.tracepoint "sched:sched_switch")
    assert.equal(H.tracepoint_id("sched", "sched_switch"), tp.id)
    assert.equal("sched:sched_switch", tp.name)
    assert.equal(field_lines("sched", "sched_switch"), #tp.fields)
    -- the common fields every tracepoint starts with
    assert.same({ "common_type", "common_flags", "common_preempt_count", "common_pid" },
      { tp.fields[1].name, tp.fields[2].name, tp.fields[3].name, tp.fields[4].name })
    assert.same({ 0, 2, false }, field(tp, "common_type"))
    assert.same({ 2, 1, false }, field(tp, "common_flags"))
    assert.same({ 4, 4, true }, field(tp, "common_pid"))
    assert.is_true(tp.field.common_pid.common)
    local comm = tp.field.prev_comm
    assert.same({ "char prev_comm[16]", 16, 16, "char", true },
      { comm.type, comm.size, comm.array, comm.elem_type, comm.is_string })
    assert.same({ "pid_t next_pid", 4, true }, { tp.field.next_pid.type, tp.field.next_pid.size,
      tp.field.next_pid.signed })
    assert.same({ "long prev_state", 8, true }, { tp.field.prev_state.type,
      tp.field.prev_state.size, tp.field.prev_state.signed })
    assert.matches("^\"prev_comm=%%s", tp.print_fmt)
  end)

  with_tracefs("sched:sched_process_exec: a __data_loc string", function()
    local tp = assert(perf.tracepoint "sched:sched_process_exec")
    assert.equal(field_lines("sched", "sched_process_exec"), #tp.fields)
    local f = tp.field.filename
    assert.same({ "data_loc", "__data_loc char[]", 4, true, "char" },
      { f.dynamic, f.type, f.size, f.is_string, f.elem_type })
  end)

  with_tracefs("syscalls: pointers and 8-byte arguments", function()
    local tp = assert(perf.tracepoint "syscalls:sys_enter_openat")
    local f = tp.field.filename
    assert.same({ "const char * filename", 8, false, true },
      { f.type, f.size, f.signed, f.pointer })
    local ex = assert(perf.tracepoint "syscalls:sys_exit_openat")
    assert.same({ 8, true }, { ex.field.ret.size, ex.field.ret.signed })
  end)

  it("raises on malformed names and returns nil, message, errno for unknown ones", function()
    assert.has_error(function() perf.tracepoint "sched_switch" end,
      'perf.tracepoint: "sched_switch" is not of the form "subsystem:event"')
    assert.has_error(function() perf.tracepoint(7) end,
      'perf.tracepoint: expected a name like "sched:sched_switch", got number')
    if tracefs then
      local msg, errno = H.fails(perf.tracepoint "sched:no_such_event")
      assert.equal(2, errno)
      assert.equal("perf.tracepoint sched:no_such_event: no tracepoint sched:no_such_event", msg)
    end
  end)

  it("suggests the nearest tracepoint for a misspelt one", function()
    if not tracefs then return pending("no tracefs") end
    local msg, errno = H.fails(perf.tracepoint "sched:sched_swich")
    assert.equal(2, errno)
    assert.equal("perf.tracepoint sched:sched_swich: no tracepoint sched:sched_swich "
      .. "(did you mean 'sched_switch'?)", msg)
    msg = H.fails(perf.tracepoint "shced:sched_switch")
    assert.matches("no tracepoint shced:sched_switch %(did you mean 'sched", msg)
  end)

  it("return nil, message, errno where tracefs cannot be read (unprivileged child)", function()
    if not sh("stat -c %a " .. H.tracefs()):match("^%d%d0") then
      return pending("tracefs is readable by others here")
    end
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      print(perf.open "sched:sched_switch")
      print(perf.tracepoint "sched:sched_switch")
      print(pcall(perf.parse, "sched:sched_switch"))
    ]])
    if not out then return pending(why) end
    local denied = "cannot read /sys/kernel/tracing (permission denied): tracepoints need root, " ..
      "or read access to tracefs"
    assert.equal(table.concat({
      'nil\tperf.open "sched:sched_switch": ' .. denied .. "\t13",
      "nil\tperf.tracepoint sched:sched_switch: " .. denied .. "\t13",
      'false\t"sched:sched_switch": ' .. denied, "" }, "\n"), out)
  end)

  with_tracefs("returns the same object for the same name", function()
    assert.equal(perf.tracepoint "sched:sched_switch", perf.tracepoint "sched:sched_switch")
    assert.equal('perf.tracepoint "sched:sched_switch" (id ' ..
      H.tracepoint_id("sched", "sched_switch") .. ", " .. field_lines("sched", "sched_switch") ..
      " fields)", tostring(perf.tracepoint "sched:sched_switch"))
  end)
end)

describe("tp:decode on a fake tracefs", function()
  setup(function() tracepoint.set_root("spec/fixtures/tracefs") end)
  teardown(function() tracepoint.set_root(nil) end)

  -- a sample of demo:demo_event, laid out as its format says
  local function sample()
    local fixed = string.pack("<I2BBi4 b x i2 i4 i8 I8 c16 c6 xx I4I4I4 I4 I4 I4 I8 B xxxxxxx",
      4242, 1, 2, -1234,
      -5, -300, -70000, -2, -1,
      "lua5.4", "\1\2\3\4\5\6",
      1, 2, 0x80000000,
      7 << 16 | 96,            -- path: 7 bytes at 96
      3 << 16 | (103 - 76),    -- note: 3 bytes at 103, relative to the field's end
      12 << 16 | 108,          -- ids: 3 u32 at 108
      0x7fff12345678, 1)
    assert(#fixed == 96)
    return fixed .. "/tmp/x\0" .. "hi\0\0\0" .. string.pack("<I4I4I4", 7, 8, 0xffffffff)
  end

  it("finds the tracepoint and its id", function()
    local tp = assert(perf.tracepoint "demo:demo_event")
    assert.equal(4242, tp.id)
    assert.equal(17, #tp.fields)
    assert.same({ "demo" }, tracepoint.systems())
    assert.same({ "demo:demo_event" }, tracepoint.all())
    assert.equal("demo:demo_event", tracepoint.name_of(4242))
  end)

  it("prints its fields and a decoded sample at the prompt", function()
    local tp = assert(perf.tracepoint "demo:demo_event")
    local f = tp.fields[1]
    assert.equal("perf.tracepoint.field", getmetatable(f).__name)
    assert.matches('^perf.tracepoint.field { .*name = "common_type", offset = 0,', tostring(f))
    local d = tp:decode(sample())
    assert.equal("perf.tracepoint.entry", getmetatable(d).__name)
    assert.matches('^perf.tracepoint.entry { .*comm = "lua5.4",', tostring(d))
    local into = {}
    assert.equal(into, tp:decode(sample(), into))
    assert.is_nil(getmetatable(into))              -- a table given is left alone
  end)

  it("decodes every kind of field", function()
    local tp = assert(perf.tracepoint "demo:demo_event")
    assert.same({
      common_type = 4242, common_flags = 1, common_preempt_count = 2, common_pid = -1234,
      small = -5, half = -300, word = -70000, big = -2,
      ubig = -1,                                   -- 2^64 - 1 wraps, as counters do
      comm = "lua5.4", mac = "\1\2\3\4\5\6", counts = { 1, 2, 0x80000000 },
      path = "/tmp/x", note = "hi", ids = { 7, 8, 0xffffffff },
      ptr = 0x7fff12345678, flag = 1,
    }, tp:decode(sample()))
  end)

  it("fills a given table", function()
    local tp = assert(perf.tracepoint "demo:demo_event")
    local t = {}
    assert.equal(t, tp:decode(sample(), t))
    assert.equal("/tmp/x", t.path)
  end)

  it("refuses short samples and dynamic fields pointing outside", function()
    local tp = assert(perf.tracepoint "demo:demo_event")
    assert.has_error(function() tp:decode(sample():sub(1, 40)) end,
      "demo:demo_event: raw sample has 40 bytes, field 'comm' needs 48")
    local bad = sample():sub(1, 68) .. string.pack("<I4", 200 << 16 | 96) .. sample():sub(73)
    assert.has_error(function() tp:decode(bad) end,
      "demo:demo_event: field 'path' points past the end of the raw sample (96+200 > 120)")
    assert.has_error(function() tp:decode(nil) end,
      "demo:demo_event:decode: expected the raw sample as a string, got nil")
  end)
end)

-- Raw samples written by the kernel, as perf record stores them, and what
-- perf script makes of them.
describe("tp:decode on real samples", function()
  local have_perf = tracefs and sh("command -v perf") ~= ""
  local check = have_perf and it or pending

  -- Runs perf record on `cmd` and returns { name =, raw =, text = } for
  -- each sample, `raw` being the PERF_SAMPLE_RAW bytes (the last field).
  local function record(events, cmd)
    local data = os.tmpname()
    sh(("perf record -q -o %s -e %s -- sh -c '%s'"):format(data, events, cmd))
    local dump = sh(("perf script -i %s -D"):format(data))
    os.remove(data)
    local samples, bytes = {}, nil
    for line in dump:gmatch("[^\n]*") do
      if line:match("^%. %.%.%. raw event: size %d+ bytes") then
        bytes = {}
      elseif bytes and line:match("^%.%s+%x%x%x%x:  ") then
        for b in line:sub(10, 57):gmatch("%x%x") do bytes[#bytes + 1] = string.char(tonumber(b, 16)) end
      elseif bytes and line:match("PERF_RECORD_SAMPLE") then
        local rec = table.concat(bytes)
        local raw
        for off = #rec - 8, 8, -4 do
          local size = string.unpack("<I4", rec, off + 1)
          if off + 4 + size == #rec then raw = rec:sub(off + 5) break end
        end
        samples[#samples + 1] = { raw = raw }
        bytes = nil
      elseif not bytes and #samples > 0 and not samples[#samples].name then
        local name, text = line:match("%s([%w_]+:[%w_]+):%s(.*)$")
        if name then samples[#samples].name, samples[#samples].text = name, text end
      end
    end
    return samples
  end

  check("sched_switch and sched_process_exec agree with perf script", function()
    local s = record("sched:sched_switch,sched:sched_process_exec", "sleep 0.01; /bin/true")
    local seen = {}
    for _, smp in ipairs(s) do
      if smp.name then
        seen[smp.name] = (seen[smp.name] or 0) + 1
        local d = perf.tracepoint(smp.name):decode(smp.raw)
        if smp.name == "sched:sched_switch" then
          local pc, pp, pr, nc, np, npr = smp.text:match(
            "^prev_comm=(.-) prev_pid=(%d+) prev_prio=(%d+) prev_state=%S+ ==> next_comm=(.-) next_pid=(%d+) next_prio=(%d+)$")
          assert.same({ pc, tonumber(pp), tonumber(pr), nc, tonumber(np), tonumber(npr) },
            { d.prev_comm, d.prev_pid, d.prev_prio, d.next_comm, d.next_pid, d.next_prio })
        else
          local fn, pid, old = smp.text:match("^filename=(%S+) pid=(%d+) old_pid=(%d+)$")
          assert.same({ fn, tonumber(pid), tonumber(old) }, { d.filename, d.pid, d.old_pid })
        end
        assert.equal(perf.tracepoint(smp.name).id, d.common_type)
      end
    end
    assert.is_true((seen["sched:sched_switch"] or 0) >= 1)
    assert.equal(3, seen["sched:sched_process_exec"])     -- sh, sleep, true
  end)

  check("sys_exit_openat's ret keeps its sign", function()
    local s = record("syscalls:sys_exit_openat", "cat /no/such/file; true")
    local negative = 0
    for _, smp in ipairs(s) do
      if smp.name == "syscalls:sys_exit_openat" then
        local d = perf.tracepoint(smp.name):decode(smp.raw)
        assert.equal(tonumber(smp.text:match("^(0x%x+)")), d.ret)  -- perf prints it as %lx
        if d.ret == -2 then negative = negative + 1 end               -- ENOENT
      end
    end
    assert.is_true(negative >= 1)
  end)
end)

describe("tp:decode on samples from this library's ring buffer", function()
  with_tracefs("sys_enter_openat: the pointer to each path, AT_FDCWD, O_RDONLY", function()
    local tp = assert(perf.tracepoint "syscalls:sys_enter_openat")
    local ev <close> = assert(perf.open "syscalls:sys_enter_openat")
    local rb <close> = assert(ev:mmap(8))
    local paths = {}
    for i = 1, 12 do paths[i] = "/proc/self/stat" .. string.rep("/", i) .. "." end
    assert(ev:enable())
    for i = 1, #paths do
      local f = io.open(paths[i])
      if f then f:close() end
    end
    assert(ev:disable())
    local n = 0
    for rec in rb:records() do
      n = n + 1
      local d = tp:decode(rec.raw)
      -- dfd is an int the format stores as 8 unsigned bytes: AT_FDCWD
      -- (-100) arrives zero-extended from 32 bits
      assert.same({ tp.id, PID, perf.addressof(paths[n]), 0xffffff9c, 0 },
        { d.common_type, d.common_pid, d.filename, d.dfd, d.flags })
    end
    assert.equal(#paths, n)
  end)

  with_tracefs("sched_process_exec: __data_loc file names of a child's execs", function()
    local tp = assert(perf.tracepoint "sched:sched_process_exec")
    local set = {}
    for _, cpu in ipairs(require("perf.cpus").online()) do
      local ev = perf.open({ "sched:sched_process_exec", sample_type = { "tid", "raw" } },
        { pid = -1, cpu = cpu })
      if not ev then return pending("CPU-wide tracepoints need privileges") end
      set[#set + 1] = { ev = ev, rb = assert(ev:mmap(8)) }   -- closed below
    end
    for _, e in ipairs(set) do assert(e.ev:enable()) end
    local tag = "/bin/true"
    os.execute("exec " .. tag .. " perf-lua-exec-test")
    for _, e in ipairs(set) do assert(e.ev:disable()) end
    local found = {}
    for _, e in ipairs(set) do
      for rec in e.rb:records() do
        local d = tp:decode(rec.raw)
        assert.equal(rec.pid, d.pid)
        if d.filename == tag then found[#found + 1] = d end
      end
      e.rb:close()
      e.ev:close()
    end
    assert.equal(1, #found)
    assert.equal(found[1].pid, found[1].old_pid)
  end)
end)

describe("tracepoint events", function()
  local count = H.count

  with_tracefs("count exactly", function()
    local enter <close> = assert(perf.open "syscalls:sys_enter_openat")
    local close <close> = assert(perf.open "syscalls:sys_enter_close")
    for _, n in ipairs { 1, 10, 100 } do
      assert(enter:reset()); assert(close:reset())
      assert(enter:enable()); assert(close:enable())
      for _ = 1, n do io.open("/proc/self/stat"):close() end
      assert(enter:disable()); assert(close:disable())
      assert.equal(n, (enter:read()))
      assert.equal(n, (close:read()))
    end
  end)

  with_tracefs("count only what a filter lets through", function()
    local ev <close> = assert(perf.open "syscalls:sys_enter_openat")
    assert.is_true(ev:set_filter("flags == 0"))          -- O_RDONLY
    local tmp = os.tmpname()
    assert.equal(6, count(ev, function()
      for _ = 1, 6 do io.open(tmp, "r"):close() end
      for _ = 1, 4 do io.open(tmp, "w"):close() end     -- O_WRONLY|O_CREAT|O_TRUNC
    end))
    os.remove(tmp)
  end)

  with_tracefs("say which field a refused filter names", function()
    local ev <close> = assert(perf.open "syscalls:sys_enter_openat")
    local msg, errno = H.fails(ev:set_filter("flagz == 0 && mode > 1"))
    assert.equal(22, errno)
    assert.matches("syscalls:sys_enter_openat has no field 'flagz' %(its fields: __syscall_nr, dfd, filename, flags, mode%)", msg)
    local ev2 <close> = assert(perf.open "syscalls:sys_enter_openat")
    msg = H.fails(ev2:set_filter("flags === 0"))
    assert.matches("a filter is field op value", msg)
  end)

  it("check_filter ignores quoted values", function()
    local tp = assert(tracepoint.from_format(read("spec/fixtures/tracefs/events/demo/demo_event/format"),
      "demo:demo_event"))
    assert.is_true(tp:check_filter('comm == "a=b" && small < 3'))
    assert.same({ nil, "demo:demo_event has no field 'smal' (its fields: small, half, word, big, ubig, comm, mac, counts, path, note, ids, ptr, flag)" },
      { tp:check_filter("smal < 3") })
  end)
end)

describe("examples/tracepoints.lua", function()
  it("makes sched:sched_switch fire: its workload also waits for a child", function()
    local p = io.popen(H.example .. " examples/tracepoints.lua sched:sched_switch 2>&1")
    local out = p:read("a")
    p:close()
    local n = math.tointeger(tonumber(out:match("\n(%d+) samples;")))
    assert.is_true(n ~= nil and n >= 3, out)
    assert.matches('prev_comm="lua5.4"', out)
  end)
end)
