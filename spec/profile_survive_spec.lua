-- Every way of profiling survives an error in fn, the collection of a
-- profiler never stopped, and a storm of samples: afterwards nothing runs,
-- no hook, wrapper or descriptor is left, and profiling works again.

local perf = require "perf"
local core = require "perf.core"
local H = require "helpers"

local fx = dofile("spec/fixtures/profiled2.lua")

-- opts, and whether it needs tracefs
local WAYS = {
  { "cpu-clock", {} },
  { "cpu-clock with counters", { counters = { "page-faults", "context-switches" } } },
  { "a tracepoint with counters", { event = "syscalls:sys_enter_close",
    counters = { "syscalls:sys_enter_openat", "page-faults" } }, true },
  { "native chains with counters", { native = true, counters = { "page-faults" } } },
  { "the timer", { event = "timer" } },
  { "the timer with counters", { event = "timer", counters = { "page-faults" } } },
  { "off-cpu", { mode = "off-cpu" } },
  { "wall with counters", { mode = "wall", counters = { "context-switches" } } },
  { "alloc with counters", { mode = "alloc", counters = { "page-faults" } } },
}

local function idle(before, allocator, resume)
  assert.is_false(core.profile_running())
  assert.is_nil(debug.gethook())
  assert.equal(resume, coroutine.resume)
  assert.same(allocator, { core.profile_allocator() })
  assert.equal(before, H.fd_count())
end

local function work()                    -- blocks, opens, allocates, computes
  fx.nap(0.01)
  fx.open_a(20)
  fx.big_strings(4, 1 << 20)
  fx.compute(0.02)
end

describe("every way of profiling", function()
  for _, way in ipairs(WAYS) do
    local name, opts, tracefs = way[1], way[2], way[3]
    local test = (not tracefs or perf.capabilities().tracefs) and it or pending

    test(name .. ": survives an error in fn and a collection unstopped", function()
      local allocator, resume = { core.profile_allocator() }, coroutine.resume
      collectgarbage()
      local before = H.fd_count()
      local ok, err = pcall(perf.profile, function() work() error("boom") end, opts)
      assert.is_false(ok)
      H.assert_has("boom", err)
      collectgarbage()
      idle(before, allocator, resume)
      do
        local p = assert(perf.profiler(opts))
        p:start()
        work()
      end
      collectgarbage()
      collectgarbage()
      idle(before, allocator, resume)
      local prof = assert(perf.profile(work, opts))      -- and it works again
      assert.is_true(prof.samples > 0, tostring(prof))
      collectgarbage()
      idle(before, allocator, resume)
    end)
  end

  it("survives a storm of timer and wall samples at 20 kHz", function()
    for _, opts in ipairs { { event = "timer", freq = 20000 }, { mode = "wall", freq = 20000 },
        { freq = 20000, counters = { "page-faults" } } } do
      local prof = assert(perf.profile(fx.compute, opts, 0.1))
      assert.is_true(prof.samples > 100, tostring(prof))
      assert.is_false(core.profile_running())
      assert.is_nil(debug.gethook())
    end
  end)
end)
