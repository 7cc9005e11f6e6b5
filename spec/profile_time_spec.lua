-- csrc/profile_time.c: the clocks behind perf.profile's "off-cpu" and
-- "wall" modes: profile_now against the kernel's CLOCK_MONOTONIC (the
-- sample times of an event with clockid = monotonic, and /proc/timer_list),
-- and the clock handle's states. (The modes themselves, weighing real
-- sleeps: profile_modes_spec.lua.)
local perf = require "perf"
local core = perf.core
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

describe("perf.core.profile_now", function()
  it("reads the clock the kernel stamps monotonic samples with", function()
    local ev <close> = assert(perf.open { type = "tracepoint", config = OPENAT, sample_period = 1,
      sample_type = { "time" }, use_clockid = true, clockid = "monotonic" })
    local rb = assert(ev:mmap(1))
    local stamps = {}
    assert(ev:enable())
    for i = 1, 5 do
      stamps[#stamps + 1] = core.profile_now()
      io.open("/dev/null"):close()
      if i == 5 then stamps[#stamps + 1] = core.profile_now() end
    end
    assert(ev:disable())
    local times = {}
    for time in rb:samples("time") do times[#times + 1] = time end
    assert.equal(5, #times)
    for i = 1, 5 do
      -- each sample lies between the readings taken around its openat
      assert.is_true(stamps[i] <= times[i] and times[i] <= stamps[i + 1], i)
    end
  end)

  it("agrees with the kernel's monotonic 'now' in /proc/timer_list", function()
    local f = io.open("/proc/timer_list")
    if not f then return pending("no /proc/timer_list here") end
    local before = core.profile_now()
    local kernel = math.tointeger(tonumber(f:read("a"):match("now at (%d+) nsecs")))
    local after = core.profile_now()
    f:close()
    assert.is_true(before <= kernel and kernel <= after)
  end)
end)

describe("perf.core.profile_clock", function()
  it("says its kind and state, weighs nothing without a profiler charging", function()
    local c = core.profile_clock("off-cpu")
    assert.equal("perf.profclock (off-cpu, stopped, 0 ns)", tostring(c))
    c:start()
    assert.equal("perf.profclock (off-cpu, running, 0 ns)", tostring(c))
    os.execute("true")
    c:stop()
    assert.equal(0, c.ns)
    c:close()
    c:close()
    assert.equal("perf.profclock (off-cpu, closed, 0 ns)", tostring(c))
    local w <close> = core.profile_clock("wall")
    assert.equal("perf.profclock (wall, stopped, 0 ns)", tostring(w))
  end)

  it("runs one at a time and takes only its two kinds", function()
    local a <close> = core.profile_clock("wall")
    local b <close> = core.profile_clock("off-cpu")
    a:start()
    assert.has_error(function() b:start() end, "another profiler clock is running")
    a:stop()
    b:start()
    b:stop()
    local ok, err = pcall(core.profile_clock, "cpu")
    assert.is_false(ok)
    assert.matches("bad argument #1 to '[%w.]*profile_clock' %(invalid option 'cpu'%)", err)
  end)
end)
