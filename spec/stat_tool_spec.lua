-- perf.stat_tool (lua/perf/counting/stat_tool.lua): perf stat's tool events
-- (duration_time, user_time, system_time), which no kernel counts: taken
-- from the command's times, in the place they were given, as perf stat
-- does (compared with the perf tool).
local perf = require "perf"
local tool = require "perf.counting.stat_tool"
local H = require "helpers"

local QUIET = { stdout = "/dev/null", stderr = "/dev/null" }
local function given(e) return e.given end          -- the kernel event an entry is from
local perf_stat = H.perf_stat

describe("perf.stat with tool events", function()
  it("counts perf stat's tool events from the command's times, where they are given", function()
    local r = assert(perf.stat({ "ls", "/" }, { "syscalls:sys_enter_openat", "duration_time",
      "user_time", "system_time:u", "task-clock" }, QUIET))
    local names = {}
    for i, e in ipairs(r.events) do names[i] = e.name end
    assert.same({ "syscalls:sys_enter_openat", "duration_time", "user_time", "system_time:u",
      "task-clock" }, names)
    assert.same({ r.elapsed, r.user, r.sys }, { r[2], r[3], r[4] })
    assert.same({ r.elapsed, r.user, r.sys }, { r.duration_time, r.user_time, r["system_time:u"] })
    assert.are.equal("ns", r.events[2].unit)
    assert.is_true(r.elapsed >= r["task-clock"])
    local theirs = perf_stat({ "ls", "/" }, { "syscalls:sys_enter_openat", "duration_time" })
    assert.are.equal(theirs["syscalls:sys_enter_openat"], r[1])
    assert.is_true(theirs.duration_time > 0)        -- perf stat takes the same list
    -- alone, they still run the command
    local alone = assert(perf.stat({ "true" }, "duration_time", QUIET))
    assert.same({ alone.elapsed }, { alone[1], alone[2] })
    assert.are.equal(1, #alone.events)
    assert.is_nil(alone.dummy)
    assert.are.equal(alone.elapsed, alone.duration_time)
    assert.has_error(function() perf.open "duration_time" end)
    assert.has_error(function()
      perf.stat({ "true" }, { "duration_time" }, { interval = 10, on_interval = print })
    end, "perf.stat: duration_time, user_time and system_time are counted for the whole "
      .. "command; they do not go with interval")
  end)

  it("take the positions given also with several tool events and groups", function()
    local r = assert(perf.stat({ "true" }, { "user_time", "{task-clock,page-faults}", "duration_time" }, QUIET))
    local names = {}
    for i, e in ipairs(r.events) do names[i] = e.name end
    -- a group gives two results for one item: each tool event keeps its place
    assert.same({ "user_time", "task-clock", "page-faults", "duration_time" }, names)
    assert.same({ r.user, r.elapsed }, { r[1], r[4] })
    assert.is_true(r.events[1].tool and r.events[4].tool)
  end)

  it("places tool events among groups and patterns as perf stat does, with perf's times", function()
    local events = "duration_time,{task-clock,page-faults},user_time,syscalls:sys_enter_open*,system_time"
    local p = io.popen("perf stat -x, -e '" .. events .. "' ls / 2>&1 >/dev/null")
    local theirs = {}
    for line in p:lines() do theirs[#theirs + 1] = line:match("^[^,]*,[^,]*,([^,]+)") end
    p:close()
    local r = assert(perf.stat({ "ls", "/" }, events, QUIET))
    local names = {}
    for i, e in ipairs(r.events) do names[i] = e.name end
    assert.is_true(#theirs >= 8)
    assert.same(theirs, names)
    for _, e in ipairs(r.events) do       -- a tool event ran for its own value
      if e.tool then assert.same({ e.value, e.value }, { e.time_enabled, e.time_running }) end
    end
    -- a group first, the tool event after all its members
    r = assert(perf.stat({ "true" }, { "{task-clock,page-faults}", "duration_time" }, QUIET))
    assert.same({ "task-clock", "page-faults", "duration_time" },
      { r.events[1].name, r.events[2].name, r.events[3].name })
  end)
end)

describe("perf.stat_tool", function()
  it("splits tool events from the kernel's, by position, modifiers accepted", function()
    local ev = { type = "software", config = 1 }
    local kernel, tools = tool.split { "duration_time", "task-clock", "user_time:u", ev, "system_time:ku" }
    assert.same({ "task-clock", ev }, kernel)
    assert.same({ [1] = "duration_time", [3] = "user_time:u", [5] = "system_time:ku" }, tools)
    kernel, tools = tool.split { "task-clock", "duration_times", "duration_time:1", "sys:duration_time" }
    assert.same({ "task-clock", "duration_times", "duration_time:1", "sys:duration_time" }, kernel)
    assert.is_nil(tools)
  end)

  it("refuses the options a whole-command time cannot take part in", function()
    for _, k in ipairs { "interval", "per_thread", "aggregate" } do
      assert.has_error(function() tool.check { [k] = 1 } end,
        ("perf.stat: duration_time, user_time and system_time are counted for the whole "
          .. "command; they do not go with %s"):format(k))
      tool.check { [k] = false }
    end
    tool.check(nil)
    tool.check { duration = 1 }
  end)

  it("puts each tool event in its place, with the command's times", function()
    local r = { events = { { name = "a", value = 5, given = 1 }, { name = "b", value = 6, given = 2 } },
      5, 6, a = 5, b = 6, elapsed = 1000, user = 300, sys = 200 }
    tool.merge(r, { [2] = "duration_time", [4] = "system_time" }, nil, given)
    assert.same({ "a", "duration_time", "b", "system_time" },
      { r.events[1].name, r.events[2].name, r.events[3].name, r.events[4].name })
    assert.same({ 5, 1000, 6, 200 }, { r[1], r[2], r[3], r[4] })
    assert.same({ 1000, 200 }, { r.duration_time, r.system_time })
    assert.same({ value = 1000, raw = 1000, unit = "ns", supported = true, tool = true, name = "duration_time",
      time_enabled = 1000, time_running = 1000, fraction = 1 }, r.events[2])
    assert.same({ 200, 200 }, { r.events[4].time_enabled, r.events[4].time_running })
  end)

  it("keeps a group's or a pattern's entries together, the tool events between them", function()
    local r = { events = { { name = "a1", given = 1 }, { name = "a2", given = 1 }, { name = "b1", given = 2 },
      { name = "b2", given = 2 } }, elapsed = 9, user = 4, sys = 2 }
    tool.merge(r, { [1] = "user_time", [3] = "duration_time", [5] = "system_time" }, nil, given)
    local names = {}
    for i, e in ipairs(r.events) do names[i] = e.name end
    assert.same({ "user_time", "a1", "a2", "duration_time", "b1", "b2", "system_time" }, names)
  end)

  it("drops the placeholder counted when only tool events were given", function()
    local r = { events = { { name = "dummy", value = 0 } }, 0, dummy = 0, elapsed = 9, user = 4, sys = 2 }
    tool.merge(r, { [1] = "user_time", [2] = "duration_time" }, "dummy", given)
    assert.same({ 4, 9 }, { r[1], r[2] })
    assert.is_nil(r[3])
    assert.is_nil(r.dummy)
    assert.equal(2, #r.events)
  end)

  it("says a time that was not measured is not supported", function()
    local r = { events = { { name = "a", value = 1, given = 1 } }, 1, a = 1, elapsed = 50 }
    tool.merge(r, { [2] = "user_time" }, nil, given)
    assert.is_false(r.events[2].supported)
    assert.equal("user_time: the command's times were not measured (a running process is counted)", r.events[2].error)
    assert.is_false(r[2])
    assert.is_false(r.user_time)
  end)
end)
