-- Blocking calls under a storm of signals: SIGALRM 2000 times a second
-- from an interval timer, its handler installed without SA_RESTART
-- (spec/fixtures/storm.c), so any wait the library does not retry fails
-- with EINTR or returns early. Each call still gives its right result and
-- keeps its timeout. Then the profiler's own overflow signal, which must
-- not break the profiled code's blocking reads, and descriptors that a
-- command started from Lua must not inherit.
local H = require "helpers"
local perf = require "perf"
local data = require "perf.data"

local storm, dir = H.load_fixture("storm")
local MS = 1000000

-- fn(...) under the storm; its results, after asserting that the storm
-- ran while it did (at least a signal every 2 ms of the call: most are
-- dropped when the handler is late).
local function stormy(fn, ...)
  local t0 = storm.now()
  storm.start(2000)
  local r = table.pack(pcall(fn, ...))
  local n = storm.stop()
  assert(r[1], r[2])
  local want = (storm.now() - t0) // 2000000
  assert.is_true(n >= want, ("%d signals, %d expected"):format(n, want))
  return table.unpack(r, 2, r.n)
end

describe("under a signal storm", function()
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("perf.stat waits for its command to the end, with the right counts", function()
    local t0 = storm.now()
    local r = stormy(perf.stat, { "sleep", "0.3" },
      { "syscalls:sys_enter_clock_nanosleep", "context-switches" })
    assert(r, "perf.stat failed")
    assert.is_true(storm.now() - t0 >= 300 * MS)
    assert.equal(0, r.status)
    assert.is_true(r.elapsed >= 300 * MS)
    assert.equal(1, r["syscalls:sys_enter_clock_nanosleep"])
    assert.is_true(r["context-switches"] >= 1)
  end)

  it("perf.stat's intervals each end at their time, not before", function()
    local seen = {}
    local r = stormy(perf.stat, { "sleep", "0.25" }, { "syscalls:sys_enter_clock_nanosleep" },
      { interval = 100, on_interval = function(i) seen[#seen + 1] = i end })
    assert(r, "perf.stat failed")
    local whole = r.elapsed // (100 * MS)
    assert.is_true(#seen == whole + 1 or #seen == whole, ("%d intervals in %d ns"):format(#seen, r.elapsed))
    assert.is_true(#seen >= 3)
    local sum = 0
    for k, i in ipairs(seen) do
      assert.equal(k, i.interval)
      if k < #seen then assert.is_true(i.time >= k * 100 * MS, ("interval %d at %d ns"):format(k, i.time)) end
      sum = sum + i[1]
    end
    assert.equal(1, sum)
    assert.equal(1, r[1])
  end)

  it("rb:poll with a timeout returns when it has passed, not before", function()
    local ev <close> = assert(perf.open { type = "software", config = perf.core.PERF_COUNT_SW_DUMMY,
                                          sample_period = 1 })
    local rb = assert(ev:mmap(2))
    for _, ms in ipairs { 0, 50, 300 } do
      local t0 = storm.now()
      local ok, msg = stormy(rb.poll, rb, ms)
      assert.equal(false, ok, msg)
      assert.is_true(storm.now() - t0 >= ms * MS, ("poll(%d) returned after %d ns"):format(ms, storm.now() - t0))
    end
  end)

  it("perf.record samples a command to its end and writes a file that reads back whole", function()
    local out = os.tmpname()
    local st = assert(perf.stat({ "ls", "/" }, "syscalls:sys_enter_openat", { stdout = "/dev/null" }))
    local r = stormy(perf.record, { "ls", "/" }, "syscalls:sys_enter_openat",
      { stdout = "/dev/null", output = out })
    assert(r, "perf.record failed")
    assert.equal(0, r.status)
    assert.equal(st[1], r.samples)
    assert.equal(0, r.lost)
    local function samples()
      local f <close> = assert(data.open(out))
      local n = 0
      for rec in f:records() do
        if rec.type == "sample" then n = n + 1 end
      end
      return n
    end
    assert.equal(r.samples, samples())
    assert.equal(r.samples, stormy(samples))
    os.remove(out)
  end)
end)

describe("the profiler's overflow signal", function()
  it("does not break a blocking read in the profiled code", function()
    -- every switch away from this process is a sample, the one of the
    -- blocked read included: its signal lands while the read waits
    local line
    local prof = perf.profile(function()
      local p = assert(io.popen("sleep 0.3; echo slow"))
      line = p:read("l")
      p:close()
    end, { event = "context-switches", period = 1 })
    assert.equal("slow", line)
    assert.is_true(prof.samples >= 1)
  end)

  -- A script in a file of its own; its path.
  local function script(text)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    return path
  end

  -- What perf stat counts of `tp` in the script's own process, less what
  -- a script of as many bytes that does nothing counts (the interpreter's
  -- start, its reads of the script and its exit).
  local function stat_of(tp, path, size)
    local empty = script(("-"):rep(size - 1) .. "\n")
    local n = H.perf_stat({ H.lua, path }, { tp }, "--no-inherit")[tp]
    local base = H.perf_stat({ H.lua, empty }, { tp }, "--no-inherit")[tp]
    os.remove(empty)
    return n - base
  end

  -- perf-lua profile -e tp of the script: samples, lost, status line.
  local function profiled(tp, path)
    local p = io.popen(("%s bin/perf-lua profile -e %s %s 2>&1; echo \"exit $?\""):format(H.example, tp, path))
    local out = p:read("a")
    p:close()
    local samples, lost = out:match("# (%d+) samples, (%d+) lost")
    return math.tointeger(tonumber(samples)), math.tointeger(tonumber(lost)), out
  end

  -- A blocking call sampled at its own entry: the signal of that entry
  -- interrupts it, the kernel restarts it (SA_RESTART) and the restart's
  -- entry is no new call. It was a storm: 34,275 samples for 8 reads.
  for _, case in ipairs {
    { "syscalls:sys_enter_read", 'local p = io.popen("sleep 0.5") p:read("a") p:close()' },
    { "syscalls:sys_enter_wait4", 'os.execute("sleep 0.5")' },
  } do
    local tp, code = case[1], case[2]
    it(("samples %s of a blocking call as perf stat counts it"):format(tp), function()
      local path = script(code .. "\n")
      local want = stat_of(tp, path, #code + 1)
      local samples, lost, out = profiled(tp, path)
      os.remove(path)
      assert.is_true(want >= 1, out)
      assert.equal(want, samples, out)
      assert.equal(0, lost, out)
      assert.matches("exit 0\n$", out)
    end)
  end

  it("leaves a blocked call blocked: the half second asleep costs no CPU time", function()
    local cpu = assert(perf.open { "task-clock" })
    cpu:enable()
    local prof = perf.profile(function()
      local p = assert(io.popen("sleep 0.5; echo up"))
      assert.equal("up\n", p:read("a"))
      p:close()
    end, { event = "syscalls:sys_enter_read" })
    cpu:disable()
    local ns = cpu:read()
    cpu:close()
    assert.equal(2, prof.samples)              -- the line, then the end of file
    -- the storm spent the sleep in the kernel (0.2-0.5 s of CPU time)
    assert.is_true(ns < 100 * MS, ("%d ns of CPU time"):format(ns))
  end)

  it("samples raw_syscalls to the end: the handler's own return is no syscall of the program", function()
    local path = script('for _ = 1, 20 do io.open("/dev/null"):close() end\n')
    for _, tp in ipairs { "raw_syscalls:sys_enter", "raw_syscalls:sys_exit" } do
      local samples, _, out = profiled(tp, path)
      -- 20 opens and 20 closes, and the profiler's stop (it looped forever)
      assert.is_true(samples and samples >= 40 and samples <= 44, out)
      assert.matches("exit 0\n$", out)
    end
    os.remove(path)
  end)

  it("refuses rt_sigreturn's tracepoints, which every overflow signal fires", function()
    assert.error_matches(function()
      perf.profile(function() end, { event = "syscalls:sys_enter_rt_sigreturn" })
    end, "profiler's own signal handler")
  end)
end)

describe("perf descriptors", function()
  -- The targets of a command's descriptors, as it lists them itself.
  local function child_fds()
    return H.sh("ls -l /proc/self/fd/")
  end

  it("are not inherited by commands started from Lua (close-on-exec)", function()
    local ev <close> = assert(perf.open("task-clock"))
    local g_ <close> = assert(perf.group { "task-clock", "page-faults" })
    local s <close> = assert(perf.open { type = "software", config = perf.core.PERF_COUNT_SW_DUMMY })
    assert(s:mmap(1))
    -- what such a descriptor looks like
    H.assert_has("anon_inode:[perf_event]", H.sh(("ls -l /proc/%d/fd/%d"):format(H.PID, ev:fileno())))
    local listing = child_fds()
    assert.matches("/proc/%d+/fd", listing)
    assert.not_matches("perf_event", listing)
  end)

  it("are not inherited by the command of perf.stat", function()
    local out = os.tmpname()
    local ev_ <close> = assert(perf.open("task-clock"))
    local r = assert(perf.stat({ "ls", "-l", "/proc/self/fd/" }, "task-clock", { stdout = out }))
    assert.equal(0, r.status)
    local f = assert(io.open(out))
    local listing = f:read("a")
    f:close()
    os.remove(out)
    assert.matches(out:gsub("%p", "%%%0"), listing)  -- its standard output
    assert.not_matches("perf_event", listing)
  end)
end)
