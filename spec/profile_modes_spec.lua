-- perf.profile's modes: allocated bytes (the allocator wrapped, and given
-- back exactly), off-CPU time at the line that blocked, wall time.

local perf = require "perf"
local core = require "perf.core"
local H = require "helpers"

local FX = "spec/fixtures/profiled2.lua"
local fx = dofile(FX)
local MiB = 1 << 20
local PERIOD = 524288

local function line_of(prof, line)
  for _, l in ipairs(prof:lines()) do
    if l.source == FX and l.line == line then return l.count end
  end
  return 0
end

local function weight(prof)
  local n = 0
  for _, s in ipairs(prof.stacks) do n = n + s.count end
  return n
end

describe("mode = 'alloc'", function()
  it("charges the bytes a line allocates to it, a sample every period bytes", function()
    local a = string.rep("x", MiB)
    local allocator = { core.profile_allocator() }
    local prof = assert(perf.profile(function()
      return fx.concat(a, 64)          -- 64 strings of 2 MiB, one allocation each
    end, { mode = "alloc" }))
    assert.same(allocator, { core.profile_allocator() })   -- given back
    assert.equal("bytes", prof.unit)
    assert.equal("alloc", prof.mode)
    assert.equal(PERIOD, prof.period)
    assert.equal(0, prof.lost)
    -- every byte is counted; those after the last sample are not charged.
    -- Beside the 64 strings the line allocates a few KiB: the strings'
    -- headers, and what the VM allocates on its first run (in a fresh
    -- process 128 MiB + 4360 bytes)
    local at = line_of(prof, 40)
    assert.is_true(at >= 128 * MiB - PERIOD and at <= 128 * MiB + 16 * 1024, tostring(at))
    assert.is_true(prof.samples >= 256 and prof.samples <= 258, tostring(prof.samples))
    H.assert_has("allocated bytes, a sample every 524288 bytes", tostring(prof))
    H.assert_has("MiB charged", tostring(prof))
  end)

  it("takes a period in bytes", function()
    local a = string.rep("x", MiB)
    local prof = assert(perf.profile(fx.concat, { mode = "alloc", period = 4 * MiB }, a, 16))
    assert.is_true(prof.samples >= 7 and prof.samples <= 8, tostring(prof.samples))
    assert.is_true(line_of(prof, 40) >= 28 * MiB, tostring(line_of(prof, 40)))
  end)

  it("gives the allocator back on stop, close, error and collection", function()
    local allocator = { core.profile_allocator() }
    local p = assert(perf.profiler { mode = "alloc" })
    p:start()
    assert.are_not.same(allocator, { core.profile_allocator() })
    local prof = p:stop()
    assert.same(allocator, { core.profile_allocator() })
    p:start()
    p:close()
    assert.same(allocator, { core.profile_allocator() })
    assert.has_error(function()
      perf.profile(function() error("boom") end, { mode = "alloc" })
    end, "boom")
    assert.same(allocator, { core.profile_allocator() })
    do
      local q = assert(perf.profiler { mode = "alloc" })
      q:start()
    end
    collectgarbage()
    collectgarbage()
    assert.same(allocator, { core.profile_allocator() })
    assert.is_false(core.profile_running())
    assert.is_table(prof)
  end)

  it("refuses what it cannot do", function()
    H.assert_has("did you mean 'alloc'?", select(2, pcall(perf.profile, fx.nap, { mode = "aloc" })))
    H.assert_has("give no event", select(2, pcall(perf.profile, fx.nap, { mode = "alloc", event = "page-faults" })))
    H.assert_has("samples by period", select(2, pcall(perf.profile, fx.nap, { mode = "alloc", freq = 10 })))
    H.assert_has("native", select(2, pcall(perf.profile, fx.nap, { mode = "wall", native = true })))
  end)
end)

-- Runs compute(cpu) then nap(sleep) under a profile of `mode`; returns
-- the profile and the wall time each took, measured on the clock the
-- weights use. Time under load is time too: the charges are compared with
-- what was measured, not with the nominal seconds.
local function compute_then_nap(mode, cpu, sleep)
  local t = {}
  local prof = assert(perf.profile(function()
    t[1] = core.profile_now()
    fx.compute(cpu)
    t[2] = core.profile_now()
    fx.nap(sleep)
    t[3] = core.profile_now()
  end, { mode = mode }))
  return prof, t[2] - t[1], t[3] - t[2]
end

local function compute_charge(prof)
  local n = 0
  for _, l in ipairs(prof:lines()) do
    if l.name == "compute" then n = n + l.count end
  end
  return n
end

local function near(measured, charged, prof)
  local slack = 20000000 + measured // 10
  assert.is_true(math.abs(charged - measured) <= slack,
    ("charged %d ns for %d ns measured\n%s"):format(charged, measured, tostring(prof)))
end

describe("mode = 'off-cpu'", function()
  it("charges the time off the CPU to the line that blocked", function()
    local prof, _, napped = compute_then_nap("off-cpu", 0.05, 0.3)
    assert.equal("nanoseconds", prof.unit)
    assert.equal("context-switches", prof.event)
    assert.is_true(prof.samples >= 1)
    local nap = line_of(prof, 34)
    assert.is_true(nap >= 300000000, tostring(prof))          -- sleep 0.3 waits as long
    near(napped, nap, prof)
    H.assert_has("off-CPU time, at every context switch", tostring(prof))
  end)
end)

describe("mode = 'wall'", function()
  it("adds the time on the CPU and off it: 0.1 s computing and 0.3 s sleeping about 1:3", function()
    local prof, computed, napped = compute_then_nap("wall", 0.1, 0.3)
    assert.equal("nanoseconds", prof.unit)
    assert.equal(999, prof.freq)
    local nap, compute = line_of(prof, 34), compute_charge(prof)
    assert.is_true(nap >= 300000000, tostring(prof))
    near(napped, nap, prof)
    near(computed, compute, prof)     -- about 0.1 s where the machine is idle
    near(computed + napped, weight(prof), prof)
  end)

  it("writes pprof with the time in nanoseconds", function()
    local prof = assert(perf.profile(fx.nap, { mode = "wall" }, 0.05))
    local d = require("perf.profiling.pprof").main_type(prof)
    assert.same({ type = "wall", unit = "nanoseconds", scale = 1 }, d)
  end)
end)
