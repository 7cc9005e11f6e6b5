-- perf.measure and perf.calibrate: counts of one call, fn's results passed
-- through, errors in fn, and calibration that subtracts the bracket's own
-- cost without ever making a count negative.
local perf = require "perf"
local H = require "helpers"

local OPENAT, IOCTL = "syscalls:sys_enter_openat", "syscalls:sys_enter_ioctl"

local opens = H.opens

local function fds()
  collectgarbage()
  collectgarbage()
  return math.min(H.fd_count(), H.fd_count(), H.fd_count())
end

describe("perf.measure", function()
  it("counts what fn does and passes its results through", function()
    local t, a, b, c = perf.measure({ OPENAT, "syscalls:sys_enter_close", "task-clock" },
      function(x, y)
        opens(6)
        return x + y, nil, "z"
      end, 40, 2)
    assert.are.equal(6, t[1])
    assert.are.equal(6, t[OPENAT])
    assert.are.equal(6, t["syscalls:sys_enter_close"])
    assert.is_true(t["task-clock"] > 0)
    assert.are.equal(t.time_enabled, t.time_running)
    assert.is_true(t.time_enabled >= t["task-clock"])
    assert.are.equal(42, a)
    assert.is_nil(b)
    assert.are.equal("z", c)
    assert.is_nil(t.overhead)
    assert.are.equal(4, select("#", perf.measure({ OPENAT }, function() return 1, nil, nil end)))
  end)

  it("takes event tables and a {a,b} group string", function()
    local t = perf.measure({ { type = "tracepoint", config = H.tracepoint_id("syscalls", "sys_enter_openat"), name = "o" } },
      opens, 3)
    assert.are.equal(3, t.o)
    t = perf.measure("{syscalls:sys_enter_openat,syscalls:sys_enter_close}", opens, 2)
    assert.are.equal(2, t[1])
    assert.are.equal(2, t[2])
  end)

  it("counts the bracket alone: the disable ioctl, and nothing before", function()
    local before = fds()
    opens(5)                              -- before the bracket: not counted
    local t = perf.measure({ OPENAT, IOCTL }, function() end)
    assert.are.equal(0, t[OPENAT])
    assert.are.equal(1, t[IOCTL])         -- the ioctl that disables the group
    assert.are.equal(before, fds())
  end)

  it("propagates fn's error unchanged after closing the group", function()
    local before = fds()
    local ok, err = pcall(perf.measure, { OPENAT, "task-clock" }, function()
      opens(1)
      error("boom")
    end)
    assert.is_false(ok)
    assert.matches("measure_spec%.lua:%d+: boom$", err)
    local obj = {}
    ok, err = pcall(perf.measure, { OPENAT }, function() error(obj) end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    assert.are.equal(before, fds())
  end)

  it("returns nil, message, errno without calling fn when the events cannot open #hardware", function()
    if H.needs_no_pmu(pending) then return end
    local called = false
    local t, msg, errno = perf.measure({ OPENAT, "cycles" }, function() called = true end)
    assert.is_nil(t)
    assert.matches('perf.open "cycles"', msg)
    assert.are.equal(2, errno)            -- ENOENT: no hardware PMU
    assert.is_false(called)
  end)

  it("raises on misuse at the caller's line", function()
    local ok, err = pcall(perf.measure, { OPENAT }, 42)
    assert.is_false(ok)
    assert.are.equal("perf.measure: a function to measure expected, got number", err)
    ok, err = pcall(perf.measure, { "task-clock:q" }, print)
    assert.is_false(ok)
    assert.matches("task%-clock:q", err)
    assert.has_error(function() perf.measure({ OPENAT, calibrate = "yes" }, print) end)
    assert.has_error(function() perf.measure({ OPENAT, calibrate = { -1 } }, print) end,
      "perf.measure: calibrate[1] must be a count (an integer >= 0)")
    assert.has_error(function() perf.measure({}, print) end)
    -- a callable table is a function to measure
    local t = perf.measure({ OPENAT }, setmetatable({}, { __call = function() opens(2) end }))
    assert.are.equal(2, t[1])
  end)
end)

describe("perf.measure with calibration", function()
  it("subtracts the cost of the empty bracket", function()
    local t = perf.measure({ OPENAT, IOCTL, "task-clock", calibrate = true }, function()
      opens(4)
    end)
    assert.are.equal(4, t[OPENAT])
    assert.are.equal(0, t[IOCTL])         -- the disable ioctl is the overhead
    assert.are.equal(1, t.overhead[IOCTL])
    assert.are.equal(1, t.overhead[2])
    assert.are.equal(0, t.overhead[OPENAT])
    assert.is_true(t.overhead["task-clock"] > 0)
  end)

  it("takes a number of rounds, or a table from perf.calibrate", function()
    local over = assert(perf.calibrate({ OPENAT, IOCTL }, 3))
    assert.are.same({ 0, 1, [OPENAT] = 0, [IOCTL] = 1 }, over)
    local t = perf.measure({ OPENAT, IOCTL, calibrate = over }, opens, 2)
    assert.are.equal(2, t[1])
    assert.are.equal(0, t[2])
    t = perf.measure({ OPENAT, IOCTL, calibrate = 2 }, opens, 2)
    assert.are.equal(0, t[IOCTL])
  end)

  it("never makes a count negative", function()
    -- an overhead larger than the count leaves 0, not a negative number
    local t = perf.measure({ OPENAT, IOCTL, calibrate = { 100, [IOCTL] = 5 } }, opens, 3)
    assert.are.equal(0, t[OPENAT])
    assert.are.equal(0, t[IOCTL])
    assert.are.equal(100, t.overhead[1])
    for _ = 1, 20 do
      local r = perf.measure({ "task-clock", "page-faults", "context-switches", calibrate = true }, function() end)
      for i = 1, 3 do assert.is_true(r[i] >= 0) end
    end
  end)

  it("perf.calibrate returns nil, message, errno when the events cannot open", function()
    local over, msg, errno = perf.calibrate { "cycles" }
    assert.is_nil(over)
    assert.are.equal("string", type(msg))
    assert.are.equal(2, errno)
    assert.has_error(function() perf.calibrate({ OPENAT }, 0) end)
  end)
end)

describe("perf.measure unprivileged", function()
  it("counts user space only where kernel-mode counting is refused, and says so (child as nobody)", function()
    local out = H.run_without_kernel_counting([[
      local perf = require "perf"
      local t = assert(perf.measure({ "task-clock", "page-faults" }, function()
        return #string.rep("x", 1 << 20)
      end))
      print(t["task-clock"] > 0, t["page-faults"] > 0, #t.notes)
      print(t.notes[1])
    ]], pending)
    if not out then return end
    assert.are.equal("true\ttrue\t2\ntask-clock: kernel-mode counting is not permitted here "
      .. "(perf_event_paranoid); counting user space only\n", out)
  end)
end)
