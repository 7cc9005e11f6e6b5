-- perf.core.ring_write: a ring drained from its mapping into a file,
-- counted on the way: exact tracepoint counts, data that wraps past the
-- end of the ring, files, pipes and stdio streams, write errors, refusals.
local perf = require "perf"
local core = require "perf.core"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")
local PERF = "/usr/bin/perf"

local opens = H.opens

-- an openat tracepoint on this thread, every hit a sample
local function tp()
  return assert(perf.open({ type = "tracepoint", config = OPENAT, sample_period = 1,
                            sample_type = { "identifier", "tid", "time" }, disabled = true }))
end

local slurp = H.read_file

-- the records of a byte string, decoded with ev's layout: samples, tids seen
local function decode(bytes, ev)
  local n, tids = 0, {}
  for rec in core.stream(bytes, ev):records() do
    assert.equal("sample", rec.type)
    n = n + 1
    tids[rec.tid] = true
  end
  return n, tids
end

describe("perf.core.ring_write", function()
  it("writes every sample of a tracepoint, as many as the kernel counted", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(4))
    local path = os.tmpname()
    local f <close> = assert(io.open(path, "wb"))
    assert(ev:enable())
    opens(37)
    assert(ev:disable())
    local count = ev:read()
    assert.equal(37, count)
    local bytes, samples, lost, records = core.ring_write(rb, f)
    assert.equal(37, samples)
    assert.equal(0, lost)
    assert.equal(37, records)
    assert.equal(0, rb:pending())
    assert.equal(37, rb:stats().records)
    f:close()
    local out = slurp(path)
    assert.equal(bytes, #out)
    local n, tids = decode(out, ev)
    assert.equal(37, n)
    assert.same({ [H.PID] = true }, tids)
    -- nothing more to write: nothing written
    assert.same({ 0, 0, 0, 0 }, { core.ring_write(rb, 1) })
    os.remove(path)
  end)

  it("writes data that wraps past the end of the ring whole, in order", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(1))
    local size = rb:stats().size
    local path = os.tmpname()
    local f <close> = assert(io.open(path, "wb"))
    local total, wrapped, samples = 0, 0, 0
    for _ = 1, 40 do
      assert(ev:enable())
      opens(23)                                   -- well under one ring per round
      assert(ev:disable())
      local tail = rb:stats().tail
      local bytes, n = core.ring_write(rb, f)
      if tail % size + bytes > size then wrapped = wrapped + 1 end
      total, samples = total + bytes, samples + n
    end
    assert.equal(40 * 23, samples)
    assert.equal(40 * 23, ev:read())
    assert.is_true(total > 4 * size)
    assert.is_true(wrapped >= 4, "expected drains that wrap, got " .. wrapped)
    f:close()
    local out = slurp(path)
    assert.equal(total, #out)
    assert.equal(40 * 23, (decode(out, ev)))
    -- in time order: the file holds the records as the kernel wrote them
    local last = 0
    for rec in core.stream(out, ev):records() do
      assert.is_true(rec.time >= last)
      last = rec.time
    end
    os.remove(path)
  end)

  it("counts and consumes without a file, and keeps rb:lost's count of PERF_RECORD_LOST", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(1))
    assert(ev:enable())
    opens(400)                                    -- more than a page holds
    assert(ev:disable())
    local bytes, samples, lost, records = core.ring_write(rb, nil)
    assert.is_true(bytes > 0)
    assert.equal(0, rb:pending())
    -- the kernel writes its PERF_RECORD_LOST once there is room again
    assert(ev:enable())
    opens(1)
    assert(ev:disable())
    local _, samples2, lost2, records2 = core.ring_write(rb, nil)
    samples, lost, records = samples + samples2, lost + lost2, records + records2
    assert.is_true(lost > 0)
    assert.equal(401, samples + lost)             -- the kernel tells every drop
    assert.equal(samples + 1, records)            -- in one PERF_RECORD_LOST
    assert.equal(lost, (rb:lost()))
  end)

  it("writes through a pipe, whatever the pipe's size, and keeps a stdio stream's offset right", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(64))
    local path = os.tmpname()
    assert(ev:enable())
    opens(3000)                                   -- more than a pipe buffers (64 kB)
    assert(ev:disable())
    local p = assert(io.popen("cat > " .. path, "w"))
    local bytes, samples = core.ring_write(rb, p)
    assert.is_true(bytes > 65536)
    assert.equal(3000, samples)
    p:close()
    assert.equal(3000, (decode(slurp(path), ev)))
    -- a stream's buffered bytes come first, and its offset follows the write
    local f <close> = assert(io.open(path, "w+b"))
    assert(f:write("head"))
    assert(ev:enable())
    opens(5)
    assert(ev:disable())
    bytes = core.ring_write(rb, f)
    assert(f:write("tail"))
    assert.equal(4 + bytes + 4, f:seek("cur"))
    assert(f:seek("set", 0))
    assert(f:write("HEAD"))
    f:close()
    local out = slurp(path)
    assert.equal(4 + bytes + 4, #out)
    assert.equal("HEAD", out:sub(1, 4))
    assert.equal("tail", out:sub(-4))
    assert.equal(5, (decode(out:sub(5, -5), ev)))
    os.remove(path)
  end)

  it("fails on a write error with nil, message, errno, and leaves the ring unread", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(4))
    assert(ev:enable())
    opens(9)
    assert(ev:disable())
    local pending = rb:pending()
    -- a full device
    local full <close> = assert(io.open("/dev/full", "wb"))
    local msg, errno = H.fails(core.ring_write(rb, full))
    assert.equal(core.errno.ENOSPC, errno)
    assert.matches("^core%.ring_write: .- %(ENOSPC%); the file system is full$", msg)
    -- a file open for reading only
    local ro <close> = assert(io.open("/etc/hostname", "rb"))
    msg, errno = H.fails(core.ring_write(rb, ro))
    assert.equal(core.errno.EBADF, errno)
    assert.matches("%(EBADF%); the file descriptor is closed or not open for writing$", msg)
    -- a closed descriptor
    local gone = tp()
    local fd = gone:fileno()
    gone:close()
    msg, errno = H.fails(core.ring_write(rb, fd))
    assert.equal(core.errno.EBADF, errno)
    assert.matches("^core%.ring_write: Bad file descriptor %(EBADF%); the file descriptor is closed", msg)
    -- nothing was consumed: a good file still gets all of it
    assert.equal(pending, rb:pending())
    local path = os.tmpname()
    local f <close> = assert(io.open(path, "wb"))
    local _, samples = core.ring_write(rb, f)
    assert.equal(9, samples)
    f:close()
    assert.equal(9, (decode(slurp(path), ev)))
    os.remove(path)
  end)

  it("takes back a partial write cut short by the file size limit (EFBIG)", function()
    local path = os.tmpname()
    -- SIGXFSZ ignored, so that the write past the limit fails with EFBIG;
    -- ulimit -f counts 512-byte blocks in sh: 16 kB
    local out = H.run_lua(([[
      local perf, core = require "perf", require "perf.core"
      local ev = assert(perf.open({ type = "tracepoint", config = %d, sample_period = 1,
                                    sample_type = { "identifier", "tid", "time" }, disabled = true }))
      local rb = assert(ev:mmap(32))
      assert(ev:enable())
      for _ = 1, 2000 do io.open("/dev/null"):close() end   -- 64 kB of samples
      assert(ev:disable())
      local pending = rb:pending()
      local f = assert(io.open(%q, "wb"))
      assert(f:write(("x"):rep(100)))
      local ok, msg, errno = core.ring_write(rb, f)
      print(ok, errno == core.errno.EFBIG, msg)
      print(f:seek("cur"), rb:pending() == pending, pending > 16384)
      f:close()
    ]]):format(OPENAT, path), "trap '' XFSZ; ulimit -f 32;")
    local ok, efbig, msg, offset, unread, big = out:match("^(%S+)\t(%S+)\t([^\n]*)\n(%S+)\t(%S+)\t(%S+)\n$")
    assert.equal("nil", ok, out)
    assert.equal("true", efbig, out)
    assert.matches("%(EFBIG%); the file grew past the size limit", msg)
    assert.equal("100", offset)                   -- the stream's offset, as the fd's
    assert.equal("true", unread)                  -- nothing consumed
    assert.equal("true", big)                     -- the write was partial, not refused
    assert.equal(100, #slurp(path))               -- the part written was cut off again
    os.remove(path)
  end)

  it("raises on misuse: a closed ring or file, a bad target, an overwrite ring, a forked child", function()
    local ev <close> = tp()
    local rb = assert(ev:mmap(1))
    assert.has_error(function() core.ring_write(rb, "x") end)
    assert.has_error(function() core.ring_write(rb, -1) end)
    assert.has_error(function() core.ring_write({}, nil) end)
    local f = assert(io.open("/dev/null", "wb"))
    f:close()
    assert.has_error(function() core.ring_write(rb, f) end, "attempt to use a closed file")
    local forker, dir = H.load_fixture("forker")
    assert(ev:enable()) opens(2) assert(ev:disable())
    local out = forker.run(function() core.ring_write(rb, nil) end)
    assert.matches("perf ring used in a forked child %(mapped by pid " .. H.PID .. "%)", out)
    assert.equal(2, select(2, core.ring_write(rb, nil)))   -- the parent's ring is intact
    os.execute("rm -rf " .. dir)
    rb:close()
    assert.has_error(function() core.ring_write(rb, nil) end, "attempt to use a closed perf ring")
    local back <close> = assert(perf.open({ type = "tracepoint", config = OPENAT, sample_period = 1,
                                            write_backward = true }))
    local brb = assert(back:mmap(1))
    assert.has_error(function() core.ring_write(brb, nil) end,
      "core.ring_write reads a forward ring; this one is in overwrite mode (use rb:snapshot())")
  end)
end)

describe("perf.record -a into a file", function()
  if not io.open(PERF) then
    pending("needs the perf tool at " .. PERF)
    return
  end

  it("writes every hit of the command on every CPU's ring; perf report and perf script read it quietly", function()
    local path = os.tmpname()
    local st = assert(perf.stat({ "ls", "/" }, "syscalls:sys_enter_openat", { stdout = "/dev/null" }))
    local r = assert(perf.record({ "ls", "/" }, "syscalls:sys_enter_openat",
      { all_cpus = true, stdout = "/dev/null", output = path }))
    assert.equal(0, r.lost)
    local mine = 0
    local f <close> = assert(perf.data.open(path))
    assert.is_true(#f.attrs[1].ids >= 2)          -- one event, one ring per CPU
    for pid in f:samples("pid") do
      if pid == r.pid then mine = mine + 1 end
    end
    assert.is_true(mine > 5)
    assert.equal(st["syscalls:sys_enter_openat"], mine)
    local err = os.tmpname()
    local script = H.sh(("%s script -i %s -F pid 2>%s"):format(PERF, path, err))
    assert.equal("", slurp(err))
    local n = 0
    for pid in script:gmatch("%d+") do if math.tointeger(tonumber(pid)) == r.pid then n = n + 1 end end
    assert.equal(mine, n)
    H.sh(("%s report -i %s --stdio >/dev/null 2>%s"):format(PERF, path, err))
    assert.equal("", slurp(err))
    os.remove(err)
    os.remove(path)
  end)
end)
