-- Handle lifecycle: idempotent close, <close>, methods after close, garbage
-- collection without fd leaks, a member keeping its leader alive.
local perf = require "perf"
local H = require "helpers"

local function sw(target)
  return assert(perf.open({ type = "software", config = 1 }, target))
end

describe("event lifecycle", function()
  it("close is idempotent and returns true", function()
    local ev = sw()
    assert.is_true(ev:close())
    assert.is_true(ev:close())
    assert.are.equal('perf.event "task-clock" (closed)', tostring(ev))
  end)

  it("every method but close raises on a closed event", function()
    local ev = sw()
    ev:close()
    for _, m in ipairs { "read", "scaled", "enable", "disable", "reset", "id",
        "attr", "name", "fileno", "query_bpf" } do
      assert.has_error(function() ev[m](ev) end, "attempt to use a closed perf event")
    end
    assert.has_error(function() ev:refresh(1) end, "attempt to use a closed perf event")
    assert.has_error(function() ev:set_filter("x") end, "attempt to use a closed perf event")
    assert.has_error(function() ev:modify_attributes {} end, "attempt to use a closed perf event")
    local n = 0
    for m, f in pairs(getmetatable(ev).__index) do       -- and every other method
      if m ~= "close" then
        assert.has_error(function() f(ev, 1, 1) end, "attempt to use a closed perf event")
        n = n + 1
      end
    end
    assert.is_true(n >= 20)
  end)

  it("perf.open raises on a target that is not a table", function()
    assert.has_error(function() perf.open("task-clock", 5) end,
      "perf.open: target must be a table ({ pid =, cpu =, group =, cgroup =, flags = }), got number")
  end)

  it("<close> closes at the end of the scope, also after an explicit close", function()
    local fd_before = H.fd_count()
    local kept
    do
      local ev <close> = sw()
      kept = ev
      assert.are.equal(fd_before + 1, H.fd_count())
    end
    assert.are.equal(fd_before, H.fd_count())
    assert.matches("closed", tostring(kept))
    do
      local ev <close> = sw()
      ev:close()
    end
    assert.are.equal(fd_before, H.fd_count())
  end)

  it("thousands of dropped events are collected without an fd leak", function()
    collectgarbage()
    local before = H.fd_count()
    -- opened in a function of their own, so no stack slot of this one
    -- still holds the last of them
    local function drop() sw() end
    for _ = 1, 5000 do drop() end
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, H.fd_count())
  end)

  it("a member keeps its leader alive", function()
    local member
    do
      local leader = sw()
      member = sw { group = leader }
    end
    collectgarbage()
    collectgarbage()
    assert(member:read())
    -- the leader is still open: one fd for each
    local before = H.fd_count()
    member:close()
    member = nil -- luacheck: ignore 311 -- drops the last reference
    collectgarbage()
    collectgarbage()
    assert.are.equal(before - 2, H.fd_count())
  end)

  it("closing the leader first leaves the member counting alone", function()
    local openat = H.tracepoint_id("syscalls", "sys_enter_openat")
    local leader = assert(perf.open { type = "tracepoint", config = openat })
    local member = assert(perf.open({ type = "tracepoint", config = openat,
      read_format = { "group", "id" }, disabled = false }, { group = leader }))
    leader:close()
    assert(member:enable())
    -- the kernel schedules the promoted member in at the task's next
    -- context switch: until then it is enabled but not running
    os.execute("sleep 0.01")
    for _ = 1, 3 do assert(io.open("/dev/null")):close() end
    assert(member:disable())
    assert.are.equal(3, (member:read()))
    member:close()
  end)

  it("tostring names the event, its fd, state and value", function()
    local ev <close> = assert(perf.open({ type = "software", config = 1 }, nil))
    assert.matches('^perf.event "task%-clock" %(fd %d+, disabled, 0%)$', tostring(ev))
    local raw <close> = assert(perf.core.open({ type = 1, config = 1 }))
    assert.matches('^perf.event "task%-clock" %(fd %d+, enabled, %d+%)$', tostring(raw))
    local pmu <close> = assert(perf.open { type = "msr", config = 0 })
    assert.are.equal("msr/config=0x0/", pmu:name())
    local named <close> = assert(perf.core.open({ type = 1, config = 1 }, nil, "my clock"))
    assert.matches('^perf.event "my clock" %(fd %d+, enabled, %d+%)$', tostring(named))
    assert.are.equal("my clock", named:name())
    assert.is_true(named:fileno() > 2)
  end)
end)
