-- perf.naming: the name of an event given in kernel terms, as perf prints
-- it, on top of perf.core.event_name (spec/event_names_spec.lua). One
-- namer: perf.open, perf.parse, perf.record, perf.data and the core's own
-- open all answer alike.
local perf = require "perf"
local core = require "perf.core"
local naming = require "perf.event.naming"
local H = require "spec.helpers"

describe("perf.naming", function()
  it("adds the cache, tracepoint and PMU names the core cannot find", function()
    assert.equal("L1-dcache-load-misses", naming.name_of { type = 3, config = 0x10000 })
    assert.equal("syscalls:sys_enter_openat",
      naming.name_of { type = 2, config = H.tracepoint_id("syscalls", "sys_enter_openat") })
    local msr = require("perf.event.pmu").find("msr")
    assert.equal("msr/config=0x0/", naming.name_of { type = msr.type, config = 0 })
    assert.equal("msr/config=0x3/", naming.name_of { type = "msr", config = 3 })
    assert.equal("hw_cache", naming.name_of({ type = 3, config = 0x7f }):match("^[^/]+"))
  end)

  it("falls back on the core for everything else", function()
    for _, attr in ipairs {
      { type = 1, config = 3 }, { type = "software", config = 99 }, { type = 4, config = 0xbeef },
      { type = 5, bp_addr = 0x1000, bp_len = 8, bp_type = "r" }, { type = 2, config = 0x7ffffff },
    } do
      assert.equal(core.event_name(attr), naming.name_of(attr))
    end
  end)

  it("answers nil for an attr the core would refuse, and never raises", function()
    assert.is_nil(naming.name_of { type = 5, bp_addr = 1, bp_len = 1, bp_type = "rwx!" })
    assert.is_nil(naming.name_of { type = "no-such-pmu", config = 1 })
    assert.is_nil(naming.name_of { type = {}, config = 1 })
  end)
end)

describe("every module names an unnamed event with the one namer", function()
  local cases = {
    { type = "software", config = 2 },
    { type = 3, config = 0x10000 },
    { type = "msr", config = 0 },
    { type = 5, bp_addr = 0x1000, bp_len = 8, bp_type = "w" },
  }

  it("perf.open and perf.attr", function()
    for _, attr in ipairs(cases) do
      local want = naming.name_of(attr)
      assert.equal(want, select(2, perf.attr(attr)))
      local ev = perf.open(attr)
      if ev then                       -- cache events need a PMU
        assert.equal(want, ev:name())
        ev:close()
      end
    end
  end)

  it("perf.record, for an event given as a table", function()
    local r = assert(perf.record({ "true" }, { { type = "software", config = 2 } }))
    assert.same({ "page-faults" }, r.events)
    assert.matches(" samples of page%-faults ", tostring(r))
  end)
end)
