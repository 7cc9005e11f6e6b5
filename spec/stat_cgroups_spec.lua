-- perf.cli.stat_cgroups: -G names paired with the -e events as perf stat
-- pairs them (the n-th name to the n-th event, one name for every event
-- before it, empty names skipping), and what it refuses.
local pair = require "perf.cli.stat_cgroups"

describe("perf-lua stat -G pairing", function()
  local function both(options)
    return { pair(options) }
  end

  it("gives one cgroup to every event before it", function()
    assert.same({ { "a", "b" }, { "x", "x" } }, both { { e = "a,b" }, { G = "x" } })
    assert.same({ { "a", "b" }, { "x", false } }, both { { e = "a" }, { G = "x" }, { e = "b" } })
  end)

  it("gives the n-th name to the n-th event, over all the -G options", function()
    assert.same({ { "a", "b", "c" }, { "x", "y", false } }, both { { e = "a,b,c" }, { G = "x,y" } })
    assert.same({ { "a", "b" }, { "x", "y" } }, both { { e = "a" }, { G = "x" }, { e = "b" }, { G = "y" } })
    assert.same({ { "a", "b", "c" }, { "x", false, "y" } }, both { { e = "a,b,c" }, { G = "x,,y" } })
    assert.same({ { "a", "b" }, { false, "y" } }, both { { e = "a,b" }, { G = ",y" } })
    assert.same({ { "a", "b" }, { false, false } }, both { { e = "a,b" }, { G = "" } })
  end)

  it("counts a group's members and a pattern's matches as perf numbers events", function()
    assert.same({ { "{a,b}", "c" }, { "x", "y" } }, both { { e = "{a,b},c" }, { G = "x,x,y" } })
    local events, cgroups = pair { { e = "syscalls:sys_enter_openat*" }, { G = ",x" } }
    -- perf numbers a pattern's matches in tracefs's directory order
    local order = {}
    local ls = io.popen("ls -U " .. require("perf.event.tracefs").path() .. "/events/syscalls")
    for name in ls:lines() do
      if name:match("^sys_enter_openat") then order[#order + 1] = "syscalls:" .. name end
    end
    ls:close()
    assert.same(order, events)
    assert.same({ false, "x" }, cgroups)
  end)

  it("refuses what perf refuses, saying why", function()
    assert.same({ nil, "must define events before cgroups" }, both { { G = "x" }, { e = "a" } })
    assert.same({ nil, "more cgroups than events: x,y names cgroup 2, for event 2 of 1" },
      both { { e = "a" }, { G = "x,y" } })
    assert.same({ nil, "the events of the group {a,b} are in one cgroup, not several" },
      both { { e = "{a,b}" }, { G = "x,y" } })
  end)
end)
