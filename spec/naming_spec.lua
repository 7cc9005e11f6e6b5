-- perf.naming and perf.core.event_name: the name of an event given in
-- kernel terms, as perf prints it. One namer: perf.open, perf.parse,
-- perf.record, perf.data and the core's own open all answer alike.
local perf = require "perf"
local core = require "perf.core"
local naming = require "perf.naming"
local H = require "spec.helpers"

describe("perf.core.event_name", function()
  it("names generic, breakpoint and raw events as perf does", function()
    assert.equal("task-clock", core.event_name { type = 1, config = 1 })
    assert.equal("cpu-cycles", core.event_name { type = "hardware", config = 0 })
    assert.equal("cgroup-switches", core.event_name { type = 1, config = 11 })
    assert.equal("mem:0x1000/8:w", core.event_name { type = 5, bp_addr = 0x1000, bp_len = 8, bp_type = 2 })
    assert.equal("mem:0x2000/1:rw", core.event_name { type = 5, config1 = 0x2000, config2 = 1, bp_type = "wr" })
    assert.equal("mem:0x10/4:x", core.event_name { type = 5, bp_addr = 0x10, bp_len = 4, bp_type = 4 })
    assert.equal("r1a2", core.event_name { type = 4, config = 0x1a2 })
  end)

  it("spells a number it has no name for by type and config", function()
    assert.equal("software/config=0x63/", core.event_name { type = 1, config = 99 })
    assert.equal("tracepoint/config=0x12c/", core.event_name { type = 2, config = 300 })
    assert.equal("hw_cache/config=0x0/", core.event_name { type = 3, config = 0 })
    assert.equal("type 99/config=0x5/", core.event_name { type = 99, config = 5 })
  end)

  it("raises on a field open would refuse", function()
    assert.has_error(function() core.event_name { type = 1, confg = 1 } end)
    assert.has_error(function() core.event_name "task-clock" end)
  end)

  it("is how core.open names an event given without a name", function()
    local ev <close> = assert(core.open { type = 1, config = 2 })
    assert.equal("page-faults", ev:name())
    local s = string.rep("x", 8)
    local bp <close> = assert(core.open { type = 5, bp_type = 2, bp_addr = core.addressof(s), bp_len = 1 })
    assert.equal(("mem:0x%x/1:w"):format(core.addressof(s)), bp:name())
    -- a moved breakpoint is named anew, by the same namer
    assert(bp:modify_attributes { bp_addr = core.addressof(s) + 2, bp_type = 3 })
    assert.equal(("mem:0x%x/1:rw"):format(core.addressof(s) + 2), bp:name())
  end)
end)

describe("perf.naming", function()
  it("adds the cache, tracepoint and PMU names the core cannot find", function()
    assert.equal("L1-dcache-load-misses", naming.name_of { type = 3, config = 0x10000 })
    assert.equal("syscalls:sys_enter_openat",
      naming.name_of { type = 2, config = H.tracepoint_id("syscalls", "sys_enter_openat") })
    local msr = require("perf.pmu").find("msr")
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
