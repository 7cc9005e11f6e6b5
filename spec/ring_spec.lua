-- The mmap ring buffer against the running kernel: real samples and
-- records, wrapping, lost accounting, poll, set_output demultiplexing,
-- refusals, lifecycle. (Overflow signals: signal_spec.lua; the record
-- iterators, the overwrite ring's snapshot and merge: ring_iter_spec.lua.)
local perf = require "perf"
local cpus = require "perf.cpus"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")
local CLOSE = H.tracepoint_id("syscalls", "sys_enter_close")

local opens = H.opens

local function self_pid()
  local f = assert(io.open("/proc/self/stat"))
  local pid = math.tointeger(f:read("n"))
  f:close()
  return pid
end
local PID = self_pid()

local tp = H.openat_sampler          -- an openat tracepoint sampling every hit

-- bytes of the tracepoint's entry (the raw sample carries it, padded),
-- from its tracefs format file
local function entry_size(sys, name)
  local f = assert(io.open(("%s/events/%s/%s/format"):format(H.tracefs(), sys, name)))
  local size = 0
  for off, sz in f:read("a"):gmatch("offset:(%d+);%s*size:(%d+);") do
    size = math.max(size, tonumber(off) + tonumber(sz))
  end
  f:close()
  return math.tointeger(size)
end

describe("ev:mmap", function()
  it("maps 1 + 2^n pages and refuses other counts", function()
    local ev = tp({ "tid" })
    assert.has_error(function() ev:mmap(3) end)
    assert.has_error(function() ev:mmap(0) end)
    local ok, err = pcall(ev.mmap, ev, 6)
    assert.is_false(ok)
    assert.matches("pages must be a power of two %(1, 2, 4, 8, %.%.%.%), got 6", err)
    local rb = assert(ev:mmap(2))
    assert.equal(2 * 4096, rb:stats().size)
    assert.equal(2, rb:stats().pages)
    ev:close()
  end)

  it("defaults to 8 pages", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap())
    assert.equal(8 * 4096, rb:stats().size)
    assert.matches('^perf%.ring "syscalls:sys_enter_openat" %(fd %d+, 8 pages, 0 bytes pending, 0 lost%)$', tostring(rb))
    ev:close()
  end)

  it("explains why an inherited event on cpu -1 cannot be mapped", function()
    local ev = assert(perf.open { type = "software", config = 1, sample_period = 100000, inherit = true })
    local msg, errno = H.fails(ev:mmap(1))
    assert.equal(22, errno)
    assert.matches("EINVAL%); an inherited per%-task event on cpu %-1 cannot be mapped: open one event per CPU", msg)
    ev:close()
  end)

  it("gives one ring per event, and a new one once it is closed", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    assert.has_error(function() ev:mmap(1) end)
    rb:close()
    local rb2 = assert(ev:mmap(2))
    assert.equal(2, rb2:stats().pages)
    ev:close()
  end)

  it("counts RLIMIT_MEMLOCK and what is pinned in what it says fits (unprivileged child)", function()
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      local function open()
        return assert(perf.open { type = "software", config = 1, sample_period = 100000,
                                  exclude_kernel = true, exclude_hv = true })
      end
      local keep = assert(open():mmap(1024))      -- past the user's share: pinned
      local ev = open()
      local rb, msg = ev:mmap(2048)
      local fit = math.tointeger(tonumber(msg:match("use at most (%d+) pages")))
      print(rb, fit)
      local ok = assert(ev:mmap(fit))              -- what it says fits, fits
      ok:close()
      print(ev:mmap(2 * fit) == nil)               -- and twice that does not
      keep:close()
    ]], "ulimit -l 8192;")
    if not out then return pending(why) end
    assert.matches("^nil\t%d+\ntrue\n$", out)
  end)

  it("says what fits under the locked-memory limit (unprivileged child)", function()
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      local ev = assert(perf.open { type = "software", config = 1, sample_period = 100000,
                                    exclude_kernel = true, exclude_hv = true })
      local rb, msg, errno = ev:mmap(1024)
      print(errno, msg)
      print(ev:mmap(64) and "64 ok")
    ]], "ulimit -l 0;")
    if not out then return pending(why) end
    local errno, msg = out:match("^(%d+)\t(.-)\n")
    assert.equal("1", errno, out)
    assert.matches("mmap 1024 pages: Operation not permitted %(EPERM%); 1024 data pages exceed "
      .. "the locked%-memory allowance %(perf_event_mlock_kb = %d+ KiB per CPU for the user", msg)
    assert.matches("use at most %d+ pages", msg)
    assert.matches("64 ok", out)
  end)
end)

describe("samples", function()
  it("carry every sample_type field this machine produces, as the test knows them", function()
    local fields = { "identifier", "ip", "tid", "time", "addr", "id", "stream_id", "cpu",
      "period", "read", "callchain", "raw", "regs_user", "stack_user", "weight", "data_src",
      "transaction", "regs_intr", "phys_addr", "cgroup", "data_page_size", "code_page_size", "aux" }
    local ev = tp(fields, { read_format = { "id", "lost", "total_time_enabled" },
                            sample_regs_user = 0x1ff, sample_regs_intr = 0x100,
                            sample_stack_user = 64 })
    local rb = assert(ev:mmap(16))
    local id = ev:id()
    local raw_len = entry_size("syscalls", "sys_enter_openat")
    raw_len = raw_len + 4 + (-(raw_len + 4) % 8) - 4
    local ncpu = #cpus.online()
    ev:enable()
    opens(10)
    ev:disable()
    local n, last_time = 0, 0
    for rec in rb:records() do
      n = n + 1
      assert.is_nil(rec.error)
      assert.equal("sample", rec.type)
      assert.same({ id, id, id }, { rec.identifier, rec.id, rec.stream_id })
      assert.is_true(rec.ip > 0)
      assert.same({ PID, PID }, { rec.pid, rec.tid })
      assert.is_true(rec.time >= last_time)
      last_time = rec.time
      assert.equal(0, rec.addr)
      assert.is_true(rec.cpu >= 0 and rec.cpu < ncpu)
      assert.equal(1, rec.period)
      assert.equal(n, rec.read.value)
      assert.equal(id, rec.read.id)
      assert.equal(0, rec.read.lost)
      assert.equal("user", rec.callchain[1])
      assert.equal(rec.ip, rec.callchain[2])
      assert.equal(raw_len, #rec.raw)
      assert.equal(OPENAT, string.unpack("<I2", rec.raw))
      assert.equal(-100, string.unpack("<i4", rec.raw, 17))   -- dfd = AT_FDCWD
      assert.equal(2, rec.regs_user.abi)
      assert.equal(rec.ip, rec.regs_user.ip)
      assert.is_true(rec.regs_user.sp > 0)
      assert.equal(2, rec.regs_intr.abi)
      assert.equal(64, rec.stack_user.size)
      assert.equal(64, #rec.stack_user.data)
      assert.is_true(rec.stack_user.dyn_size <= 64)
      assert.equal(0, rec.weight)
      assert.same({ "na" }, rec.mem.op)
      assert.equal(0, rec.transaction)
      assert.equal(0, rec.phys_addr)
      assert.equal("integer", math.type(rec.cgroup))
      assert.equal(0, rec.data_page_size)
      assert.equal(4096, rec.code_page_size)     -- written before aux
      assert.equal("", rec.aux)
    end
    assert.equal(10, n)
    ev:close()
  end)

  it("carry a group read (PERF_FORMAT_GROUP) with every member's count", function()
    local leader = tp({ "tid", "read" }, { read_format = { "group", "id", "total_time_enabled" } })
    local member = assert(perf.open({ type = "tracepoint", config = CLOSE, disabled = false,
                                      read_format = { "group", "id" } }, { group = leader }))
    local rb = assert(leader:mmap(2))
    leader:enable()
    opens(4)
    leader:disable()
    local n = 0
    for rec in rb:records() do
      n = n + 1
      local rd = rec.read
      assert.equal(2, #rd)
      assert.same({ leader:id(), n }, { rd[1].id, rd[1].value })
      assert.same({ member:id(), n - 1 }, { rd[2].id, rd[2].value })   -- the close comes after
      assert.is_true(rd.time_enabled > 0)
      assert.is_nil(rd.time_running)
    end
    assert.equal(4, n)
    member:close() leader:close()
  end)
end)

describe("records", function()
  it("name a library the test loads (mmap2)", function()
    local lib = os.tmpname() .. ".so"
    local cpath = (os.getenv("PERF_LUA_CPATH") or "./?.so"):gsub("%?%.so$", "")
    assert(os.execute(("cp %sperf/core.so %s"):format(cpath == "./" and "" or cpath, lib)))
    local ev = assert(perf.open { type = "software", config = 9, mmap = true, mmap2 = true,
                                  sample_id_all = true, sample_type = { "tid", "time" } })
    local rb = assert(ev:mmap(8))
    ev:enable()
    assert(package.loadlib(lib, "*"))
    ev:disable()
    local found
    for rec in rb:records() do
      if rec.type == "mmap2" and rec.filename == lib then found = rec end
    end
    os.remove(lib)
    assert.truthy(found)
    assert.same({ PID, PID }, { found.pid, found.tid })
    assert.equal(4, found.prot & 4)                  -- PROT_EXEC
    assert.is_true(found.len > 0 and found.addr > 0)
    assert.is_true(found.ino > 0)
    assert.equal(found.time, found.sample_id.time)
    ev:close()
  end)

  it("follow a child the test runs: fork, comm (exec), exit", function()
    local set = assert(cpus.open({ type = "software", config = 9, task = true, comm = true,
      inherit = true, sample_id_all = true, sample_type = { "tid", "time", "cpu" } }))
    assert(set:mmap(4))
    set:enable()
    os.execute("exec /bin/true")
    set:disable()
    local seen, last = {}, 0
    for rec in set:records() do
      assert.is_true(rec.time >= last)           -- merged by time
      last = rec.time
      seen[#seen + 1] = rec
    end
    local fork, comm, exit
    for _, r in ipairs(seen) do
      if r.type == "fork" and r.ppid == PID then fork = r end
    end
    assert.truthy(fork)
    for _, r in ipairs(seen) do
      if r.type == "comm" and r.pid == fork.pid and r.comm == "true" then comm = r end
      if r.type == "exit" and r.pid == fork.pid then exit = r end
    end
    assert.truthy(comm)
    assert.is_true(comm.comm_exec)
    assert.truthy(exit)
    assert.equal(PID, exit.ppid)
    assert.is_true(fork.time <= comm.time and comm.time <= exit.time)
    set:close()
  end)
end)

describe("a 1-page ring", function()
  it("is consumed while wrapping with every record intact", function()
    local ev = tp({ "tid", "read", "raw" }, { read_format = { "id", "lost" } })
    local rb = assert(ev:mmap(1))
    local size = rb:stats().size
    local expect, wrapped = 1, 0
    for _ = 1, 25 do
      ev:enable()
      opens(30)
      ev:disable()
      local before = rb:stats().tail
      for rec in rb:records() do
        local after = rb:stats().tail
        if before % size + (after - before) > size then wrapped = wrapped + 1 end
        before = after
        assert.is_nil(rec.error)
        assert.equal(expect, rec.read.value)
        assert.equal(OPENAT, string.unpack("<I2", rec.raw))
        assert.equal(PID, rec.tid)
        expect = expect + 1
      end
    end
    assert.equal(751, expect)
    assert.is_true(wrapped > 0, "no record wrapped")
    local lost, kernel = rb:lost()
    assert.same({ 0, 0 }, { lost, kernel })
    ev:close()
  end)
end)

describe("lost records", function()
  it("show in tostring(rb) as rb:lost() knows them, before any is read", function()
    local ev <close> = tp({ "ip", "tid", "time", "raw" }, { read_format = { "id", "lost" } })
    local rb <close> = assert(ev:mmap(1))
    assert(ev:enable())
    opens(500)
    assert(ev:disable())
    local _, kernel = rb:lost()
    assert.is_true(kernel > 0)
    assert.matches((", %d lost%%)$"):format(kernel), tostring(rb))
  end)

  it("add up: received + lost = generated, and PERF_RECORD_LOST agrees", function()
    local ev = tp({ "tid", "read" }, { read_format = { "id", "lost" } })
    local rb = assert(ev:mmap(1))
    ev:enable()
    opens(1000)
    ev:disable()
    local received = 0
    for _ in rb:records() do received = received + 1 end
    local reported, kernel = rb:lost()
    assert.is_true(kernel > 0)
    assert.equal(1000, received + kernel)
    assert.equal(0, reported)                -- the LOST record waits for room
    ev:enable()
    opens(1)
    ev:disable()
    local types = {}
    for rec in rb:records() do
      types[#types + 1] = rec.type
      if rec.type == "lost" then assert.equal(kernel, rec.lost) end
      if rec.type == "sample" then assert.equal(1001, rec.read.value) end
    end
    assert.same({ "lost", "sample" }, types)
    reported, kernel = rb:lost()
    assert.equal(kernel, reported)
    assert.equal(1000 - received, rb:stats().lost)
    ev:close()
  end)
end)

describe("rb:poll", function()
  it("times out with false, and is true when data waits", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    ev:enable()
    assert.is_false(rb:poll(20))
    opens(1)
    assert.is_true(rb:poll(1000))
    ev:disable()
    assert.equal(16, rb:pending())
    for _ in rb:records() do end
    assert.equal(0, rb:pending())
    assert.is_false(rb:poll(0))
    ev:close()
  end)

  it("reports a hangup when the monitored process exits", function()
    local p = io.popen("sh -c 'echo $$; exec sleep 0.2'")
    local pid = math.tointeger(p:read("n"))
    local ev = assert(perf.open({ type = "software", config = 9, task = true, disabled = false },
                                { pid = pid }))
    local rb = assert(ev:mmap(1))
    local result, types = {}, {}
    for _ = 1, 50 do
      result = { rb:poll(5000) }
      for rec in rb:records() do types[#types + 1] = rec.type end
      if result[1] == nil then break end
    end
    p:close()
    assert.same({ nil, "hangup" }, result)
    assert.same({ "exit" }, types)
    ev:close()
  end)

  it("reports a hangup when a refresh count runs out (with overflow signals)", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    assert(ev:notify())
    assert(ev:refresh(3))
    opens(10)
    local n, exhausted = ev:overflows()
    assert.same({ 3, true }, { n, exhausted })
    assert.is_true(rb:poll(0))
    local count = 0
    for _ in rb:records() do count = count + 1 end
    assert.equal(3, count)
    assert.same({ nil, "hangup" }, { rb:poll(1000) })
    ev:close()
  end)
end)

describe("set_output", function()
  it("demultiplexes two events with different sample_types by id", function()
    local a = tp({ "identifier", "ip", "tid", "period" })
    local b = assert(perf.open { type = "tracepoint", config = CLOSE, sample_period = 1,
                                 sample_type = { "identifier", "tid", "time", "raw" } })
    local rb = assert(a:mmap(4))
    assert(rb:attach(b))
    a:enable() b:enable()
    opens(5)
    a:disable() b:disable()
    local na, nb = 0, 0
    for rec in rb:records() do
      assert.is_nil(rec.error)
      if rec.identifier == a:id() then
        na = na + 1
        assert.same({ 1, PID }, { rec.period, rec.tid })
        assert.is_true(rec.ip > 0)
        assert.is_nil(rec.raw)
      else
        nb = nb + 1
        assert.equal(b:id(), rec.identifier)
        assert.equal(CLOSE, string.unpack("<I2", rec.raw))
        assert.is_true(rec.time > 0)
        assert.is_nil(rec.ip)
      end
    end
    assert.same({ 5, 5 }, { na, nb })
    a:close() b:close()
  end)

  it("decodes the records of an event redirected with set_output, by id", function()
    local a = tp({ "identifier", "tid" })
    local b = assert(perf.open { type = "tracepoint", config = CLOSE, sample_period = 1,
                                 sample_type = { "identifier", "raw" } })
    local rb = assert(a:mmap(2))
    assert.is_true(b:set_output(a))
    assert.is_true(b:set_output(a))                -- again: still one layout
    a:enable() b:enable()
    opens(2)
    a:disable() b:disable()
    local n = { [a:id()] = 0, [b:id()] = 0 }
    for rec in rb:records() do
      assert.is_nil(rec.error)
      assert.equal(rec.identifier, rec.id)         -- the kernel's name, and the alias
      n[rec.id] = n[rec.id] + 1
      if rec.id == b:id() then
        assert.equal(CLOSE, string.unpack("<I2", rec.raw))
        assert.is_nil(rec.tid)
      else
        assert.equal(PID, rec.tid)
      end
    end
    assert.same({ 2, 2 }, { n[a:id()], n[b:id()] })
    -- the id is a sample field too
    a:enable() b:enable()
    opens(1)
    a:disable() b:disable()
    local ids = {}
    for id in rb:samples("id") do ids[#ids + 1] = id end
    table.sort(ids)
    assert.same({ math.min(a:id(), b:id()), math.max(a:id(), b:id()) }, ids)
    a:close() b:close()
  end)

  it("decodes the records of an event opened with flags fd_output, by id", function()
    local a = tp({ "identifier", "tid" })
    local rb = assert(a:mmap(2))
    for _, flags in ipairs { { "fd_output", "fd_no_group" }, { "fd_output" } } do
      local b <close> = assert(perf.open({ type = "tracepoint", config = CLOSE,
        sample_period = 1, sample_type = { "identifier", "raw" } },
        { group = a, flags = flags }))
      a:enable() b:enable()
      opens(3)
      a:disable() b:disable()
      local n = { [a:id()] = 0, [b:id()] = 0 }
      for rec in rb:records() do
        assert.is_nil(rec.error)
        n[rec.id] = n[rec.id] + 1
        if rec.id == b:id() then assert.equal(CLOSE, string.unpack("<I2", rec.raw)) end
      end
      assert.same({ 3, 3 }, { n[a:id()], n[b:id()] })
    end
    rb:close() a:close()
  end)

  it("suggests a sample field for a misspelt one", function()
    local a <close> = tp({ "ip" })
    local rb <close> = assert(a:mmap(1))
    assert.has_error(function() rb:samples("ipp") end, "samples: no sample field 'ipp' (did you mean 'ip'?)")
  end)

  -- perf's tests/keep-tracking.c: a dummy event tracks (comm, mmap, task)
  -- in the ring a sampler writes to; the sampler is disabled and the
  -- dummy still tracks. Their samples differ (ip) and carry no id, but
  -- only the sampler samples, and their sample_id trailers agree.
  it("shares a ring between a dummy tracking event and a sampler (perf's keep-tracking)", function()
    local dummy <close> = assert(perf.open { "dummy", sample_type = { "tid", "time" },
      comm = true, mmap = true, task = true, sample_id_all = true, exclude_kernel = true })
    local clock <close> = assert(perf.open { "cpu-clock", sample_type = { "ip", "tid", "time" },
      sample_period = 100000, sample_id_all = true, exclude_kernel = true })
    local rb <close> = assert(dummy:mmap(8))
    assert.is_true(clock:set_output(dummy))
    local f = assert(io.open("/proc/self/comm"))
    local saved = f:read("l")
    f:close()
    local function set_comm(name)
      local w = assert(io.open("/proc/self/comm", "w"))
      w:write(name)
      w:close()
    end
    -- the comm records of this process named `comm`; every record decodes
    local function find_comm(comm)
      local found = 0
      for rec in rb:records() do
        assert.is_nil(rec.error)
        if rec.type == "comm" and rec.pid == PID and rec.tid == PID and rec.comm == comm then
          found = found + 1
        elseif rec.type == "sample" then
          assert.is_true(rec.ip > 0)
          assert.equal(PID, rec.tid)
        end
      end
      return found
    end
    dummy:enable() clock:enable()
    set_comm("Test COMM 1")
    local x = 0
    for i = 1, 2e6 do x = x + i end           -- samples of the sampler too
    dummy:disable() clock:disable()
    assert.equal(1, find_comm("Test COMM 1"))
    -- tracking goes on with the sampler disabled
    dummy:enable() clock:enable()
    clock:disable()
    set_comm("Test COMM 2")
    dummy:disable()
    set_comm(saved)
    assert.equal(1, find_comm("Test COMM 2"))
  end)

  it("still refuses two samplers whose samples differ and carry no id", function()
    local a <close> = assert(perf.open { "cpu-clock", sample_type = { "ip", "tid" }, sample_period = 100000 })
    local b <close> = assert(perf.open { "task-clock", sample_type = { "tid", "time" }, sample_period = 100000 })
    local rb = assert(a:mmap(1))
    assert.error_matches(function() b:set_output(a) end, "differ in layout")
    -- a counting event (no period) writes no samples: accepted
    local c <close> = assert(perf.open { "task-clock", sample_type = { "tid", "time" } })
    assert.is_true(c:set_output(a))
    rb:close()
  end)

  it("refuses to attach an event it could not tell apart", function()
    local a = tp({ "ip", "tid" })
    local b = assert(perf.open { type = "tracepoint", config = CLOSE, sample_period = 1,
                                 sample_type = { "tid", "raw" } })
    local rb = assert(a:mmap(1))
    local ok, err = pcall(rb.attach, rb, b)
    assert.is_false(ok)
    assert.matches('add "identifier" to every sample_type', err)
    a:close() b:close()
  end)
end)

describe("refusals and lifecycle", function()
  it("refuse a closed ring, and close is idempotent", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    assert.is_true(rb:close())
    assert.is_true(rb:close())
    assert.equal("perf.ring (closed)", tostring(rb))
    local n = 0
    for m, f in pairs(getmetatable(rb).__index) do       -- every method but close
      if m ~= "close" then
        local ok, err = pcall(f, rb, ev)
        assert.is_false(ok, m)
        assert.matches("attempt to use a closed perf ring", err)
        n = n + 1
      end
    end
    assert.is_true(n >= 10)                          -- records, poll, ..., event
    ev:close()
  end)

  it("refuse a forked child", function()
    local forker, dir = H.load_fixture("forker")
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    ev:enable() opens(2) ev:disable()
    local out = forker.run(function() for _ in rb:records() do end end)
    assert.matches("perf ring used in a forked child %(mapped by pid " .. PID .. "%)", out)
    assert.matches("ok", forker.run(function() rb:close() end))
    local n = 0
    for _ in rb:records() do n = n + 1 end
    assert.equal(2, n)                            -- the parent's ring is intact
    ev:close()
    os.execute("rm -rf " .. dir)
  end)

  it("keeps its event alive, and releases every fd", function()
    local before = H.fd_count()
    do
      local rb = (function() return assert(tp({ "tid" }):mmap(1)) end)()
      collectgarbage()
      collectgarbage()
      local ev = rb:event()
      assert.matches("^perf%.event", tostring(ev))
      ev:enable() opens(2) ev:disable()
      local n = 0
      for _ in rb:records() do n = n + 1 end
      assert.equal(2, n)
      local rb2_ <close> = assert(tp({ "tid" }):mmap(1))
    end
    assert.equal(before, H.fd_count())
  end)

  it("lets a dropped ring be collected, so the event can be mapped again", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))                  -- luacheck: ignore 231
    rb = nil                                        -- drops the only reference
    collectgarbage()
    collectgarbage()
    assert.equal(4, assert(ev:mmap(4)):stats().pages)
    ev:close()
  end)

  it("drains after its event is closed, then reports a hangup", function()
    local ev = tp({ "tid" })
    local rb = assert(ev:mmap(1))
    ev:enable() opens(3) ev:disable()
    ev:close()
    assert.is_true(rb:poll(0))
    local n = 0
    for _ in rb:records() do n = n + 1 end
    assert.equal(3, n)
    assert.same({ nil, "hangup" }, { rb:poll(100) })
    assert.has_error(function() rb:attach(tp({ "tid" })) end, "the ring's event is closed")
    rb:close()
  end)

  it("<close> closes the ring", function()
    local ev = tp({ "tid" })
    local keep
    do
      local rb <close> = assert(ev:mmap(1))
      keep = rb
    end
    assert.equal("perf.ring (closed)", tostring(keep))
    ev:close()
  end)
end)
