-- perf.profile { counters = {...} }: counter deltas charged with each
-- sample, per function and line; exact with tracepoints.

local perf = require "perf"
local H = require "helpers"

local FX = "spec/fixtures/profiled.lua"
local FX2 = "spec/fixtures/profiled2.lua"
local fx, fx2 = dofile(FX), dofile(FX2)
local OPENAT = "syscalls:sys_enter_openat"
local CLOSE = "syscalls:sys_enter_close"
local with_tracefs = perf.capabilities().tracefs and it or pending

local find = H.find

describe("profile counters", function()
  with_tracefs("charges each sample's deltas to its line, exactly with tracepoints", function()
    -- sampled at every openat, counting openat and close: each openat
    -- sample carries 1 openat, and the close of the file before it
    local prof = assert(perf.profile(function() fx.both() end,
      { event = OPENAT, counters = { OPENAT, CLOSE } }))
    assert.equal(40, prof.samples)
    assert.same({ OPENAT, CLOSE }, prof.counter_names)
    assert.equal(40, prof.counters[OPENAT])
    assert.equal(39, prof.counters[CLOSE])        -- the last close comes after the last sample
    local lines = prof:lines()
    assert.same({ [OPENAT] = 30, [CLOSE] = 29 }, lines[1].counters)   -- thirty's io.open
    assert.same({ [OPENAT] = 10, [CLOSE] = 10 }, lines[2].counters)   -- ten's: 1 close of thirty's
    local thirty = find(prof:functions(), { name = "thirty" })
    assert.same({ [OPENAT] = 30, [CLOSE] = 29 }, thirty.counters)
    local both = find(prof:functions(), { name = "both" })
    assert.is_nil(both.counters)                  -- self only: both has no self samples

    local text = tostring(prof)
    H.assert_has("\n# syscalls:sys_enter_openat  syscalls:sys_enter_close  Line\n", text)
    assert.matches("\n%s+40%s+39  %(all%)\n", text)
    assert.matches("\n%s+30%s+29  " .. FX:gsub("%p", "%%%0") .. ":7  thirty\n", text)
  end)

  it("counts page faults per line with a cpu-clock sampler, over restarts", function()
    local p <close> = assert(perf.profiler { counters = { "page-faults" } })
    -- 40 MiB is past malloc's largest mmap threshold (32 MiB): each run
    -- maps fresh pages for string.rep's buffer and for the string, 2 x 10240
    for _ = 1, 2 do
      p:start()
      fx2.fault_then_spin(10240, 0.03)           -- then samples in the same function
      p:stop()
    end
    local prof = p:stop()
    local f = assert(find(prof:functions(), { name = "fault_then_spin" }))
    -- every fault comes before a sample in the same function; the second
    -- start counts as the first (the counters are not enabled twice)
    assert.is_true(f.counters["page-faults"] >= 4 * 10240, tostring(prof))
    -- (a sanitizer's allocator and shadow memory fault about twice as often)
    assert.is_true(prof.counters["page-faults"] < 12 * 10240, tostring(prof))
  end)

  with_tracefs("counts exactly over restarts with a cpu-clock sampler", function()
    local p <close> = assert(perf.profiler { counters = { OPENAT } })
    for _ = 1, 3 do
      p:start()
      fx2.open_then_spin(25, 0.02)
      p:stop()
    end
    local f = assert(find(p:stop():functions(), { name = "open_then_spin" }))
    assert.equal(75, f.counters[OPENAT])
  end)

  -- the sampling event leads the group: each sample record carries the
  -- members' values (PERF_SAMPLE_READ, PERF_FORMAT_GROUP|ID)
  with_tracefs("reads the counters from the samples: page faults per line match a count of the same work", function()
    local A, B = 16384, 8448      -- pages, each touched twice: all past 32 MiB
    local function alone(f, pages)                -- the faults of f counted alone
      local ev = assert(perf.open "page-faults")
      ev:enable()
      f(pages)
      ev:disable()
      local n = ev:read()
      ev:close()
      return n
    end
    fx2.faults_a(A) fx2.faults_b(B)               -- the allocators' first growth, once
    local a1, b1 = alone(fx2.faults_a, A), alone(fx2.faults_b, B)
    local prof = assert(perf.profile(function() fx2.faults_a(A) fx2.faults_b(B) end, { event = CLOSE,
      counters = { "page-faults", OPENAT, "context-switches" } }))
    assert.equal(2, prof.samples)
    local a = assert(find(prof:lines(), { source = FX2, line = 69 }))
    local b = assert(find(prof:lines(), { source = FX2, line = 75 }))
    assert.equal(1, a.counters[OPENAT])           -- tracepoints: exact
    assert.equal(1, b.counters[OPENAT])
    local pa, pb = a.counters["page-faults"], b.counters["page-faults"]
    assert.is_true(pa >= 2 * A and pb >= 2 * B, tostring(prof))
    -- the same work counted alone: the same faults, to the few that
    -- malloc's state and the profiler's own tables add or spare
    local msg = ("profiled %d and %d, alone %d and %d"):format(pa, pb, a1, b1)
    assert.is_true(math.abs(pa - a1) < 64, msg)
    assert.is_true(math.abs(pb - b1) < 64, msg)
    assert.equal(pa + pb, prof.counters["page-faults"])
  end)

  with_tracefs("charges the context switches of sleeps, and tracepoints exactly, per line", function()
    local prof = assert(perf.profile(fx2.sleep_then_close, { event = CLOSE,
      counters = { "context-switches", OPENAT } }, 5))
    assert.equal(5, prof.samples)
    local l = assert(find(prof:lines(), { source = FX2, line = 83 }))
    assert.equal(5, l.count)
    assert.equal(5, l.counters[OPENAT])
    -- each sleep waits for a child at least once
    assert.is_true(l.counters["context-switches"] >= 5, tostring(prof))
    assert.equal(l.counters["context-switches"], prof.counters["context-switches"])
  end)

  with_tracefs("rides along native call chains in the same sample records", function()
    local prof = assert(perf.profile(function() fx.both() end,
      { event = OPENAT, native = true, counters = { CLOSE } }))
    assert.equal(40, prof.samples)
    assert.equal(39, prof.counters[CLOSE])
    assert.same({ [CLOSE] = 29 }, assert(find(prof:lines(), { source = FX, line = 7 })).counters)
    assert.matches("open", prof:folded())          -- libc's open, under io.open
  end)

  with_tracefs("survives a storm of samples: 20000 in a row, every count charged", function()
    local prof = assert(perf.profile(fx2.open_a, { event = CLOSE,
      counters = { OPENAT, "page-faults" } }, 20000))
    assert.equal(20000, prof.samples + prof.lost)
    assert.equal(20000, prof.counters[OPENAT] + prof.lost)
    if prof.lost == 0 then
      assert.same(20000, assert(find(prof:lines(), { source = FX2, line = 7 })).counters[OPENAT])
    end
  end)

  with_tracefs("stops and releases the group after an error in fn, and when collected unstopped", function()
    local before = H.fd_count()
    local ok, err = pcall(perf.profile, function()
      io.open("/dev/null"):close()
      error("boom")
    end, { event = CLOSE, counters = { OPENAT, "page-faults" } })
    assert.is_false(ok)
    H.assert_has("boom", err)
    assert.is_false(perf.core.profile_running())
    collectgarbage()
    assert.equal(before, H.fd_count())
    do
      local p = assert(perf.profiler { event = CLOSE, counters = { OPENAT, "page-faults" } })
      p:start()
      fx2.open_a(10)
    end
    collectgarbage()
    collectgarbage()
    assert.is_false(perf.core.profile_running())
    assert.is_nil(debug.gethook())
    assert.equal(before, H.fd_count())
    local prof = assert(perf.profile(fx2.open_a, { event = CLOSE, counters = { OPENAT } }, 10))
    assert.equal(10, prof.counters[OPENAT])      -- and it works again
  end)

  it("counts with the timer too, reading the counters when each sample is charged", function()
    local prof = assert(perf.profile(fx2.fault_then_spin, { event = "timer", freq = 1000,
      counters = { "page-faults" } }, 10240, 0.05))
    local f = assert(find(prof:functions(), { source = FX2, line = 45 }))
    assert.is_true(f.counters["page-faults"] >= 2 * 10240, tostring(prof))
  end)

  it("charges the context switch of a sleep to its line in an off-CPU profile", function()
    local prof = assert(perf.profile(fx2.nap, { mode = "off-cpu", counters = { "context-switches" } }, 0.05))
    local nap = assert(find(prof:lines(), { source = FX2, line = 34 }))
    assert.is_true(nap.counters["context-switches"] >= 1, tostring(prof))
    -- every switch counted is charged to some line (a preemption under
    -- load adds switches, so their number is not the samples')
    local sum = 0
    for _, l in ipairs(prof:lines()) do sum = sum + (l.counters and l.counters["context-switches"] or 0) end
    assert.equal(prof.counters["context-switches"], sum, tostring(prof))
  end)

  it("writes one pprof sample type per counter", function()
    local prof = assert(perf.profile(fx2.fault_then_spin, { counters = { "page-faults", "minor-faults" } }, 100, 0.01))
    local bytes = require("perf.profiling.pprof").encode(prof)
    H.assert_has("page-faults", bytes)
    H.assert_has("minor-faults", bytes)
    H.assert_has("count", bytes)
  end)

  -- no PMU here: the report's IPC and misses per 1000 instructions, on a
  -- profile made from the C side's stack keys
  it("reports IPC and misses per 1000 instructions where they are counted", function()
    local k1, k2 = "Lf\ta.lua\t1\t3\n", "Lg\ta.lua\t5\t7\n"
    local prof = require("perf.profiling.profile").new({ [k1] = 10, [k2] = 5 }, { samples = 15, lost = 0,
      event = "cycles", freq = 999, counter_names = { "cycles", "instructions", "cache-misses" },
      counters = { cycles = 3000, instructions = 6000, ["cache-misses"] = 30 },
      counters_by_key = { [k1] = { cycles = 2000, instructions = 5000, ["cache-misses"] = 10 },
        [k2] = { cycles = 1000, instructions = 1000, ["cache-misses"] = 20 } } })
    local text = tostring(prof)
    H.assert_has("\n#       cycles  instructions  cache-misses       IPC  cache-m/1k ins  Line\n", text)
    H.assert_has("\n          3000          6000            30      2.00          5.00  (all)\n", text)
    H.assert_has("\n          2000          5000            10      2.50          2.00  a.lua:3  f\n", text)
    H.assert_has("\n          1000          1000            20      1.00         20.00  a.lua:7  g\n", text)
  end)

  it("refuses misuse", function()
    H.assert_has("counters must be a list", select(2, pcall(perf.profile, fx2.nap, { counters = "page-faults" })))
    H.assert_has("unknown", select(2, pcall(perf.profile, fx2.nap, { counters = { "page-fualts" } })))
    -- at the caller's line, from perf.profile as from perf.profiler
    local _, err = pcall(function() perf.profile(fx2.nap, { counters = { "page-fualts" } }) end)
    assert.matches("^spec/profile_counters_spec%.lua:%d+: perf%.profile: counters: bad event", err)
    _, err = pcall(function() perf.profiler { counters = { "page-fualts" } } end)
    assert.matches("^spec/profile_counters_spec%.lua:%d+: perf%.profile: counters: bad event", err)
  end)

  it("returns what the kernel refuses: a hardware counter without a PMU #hardware", function()
    if H.needs_no_pmu(pending) then return end
    local p, msg, errno = perf.profiler { counters = { "page-faults", "cycles" } }
    assert.is_nil(p)
    H.assert_has("perf.profile: counters: ", msg)
    assert.equal(2, errno)                         -- ENOENT: no hardware PMU here
  end)
end)
