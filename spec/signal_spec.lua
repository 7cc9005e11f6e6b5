-- Overflow signals (csrc/signal.c): ev:notify routes an event's overflows
-- to a C handler that counts them; ev:overflows reads the count.
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

local opens = H.opens

local tp = H.openat_sampler          -- an openat tracepoint sampling every hit

describe("overflow signals", function()
  it("are counted by a C handler, one per overflow", function()
    local ev = tp({ "tid" })
    assert.has_error(function() ev:overflows() end)
    assert(ev:notify())
    ev:enable()
    opens(25)
    ev:disable()
    assert.same({ 25, false }, { ev:overflows() })
    ev:close()
  end)

  it("count sigtrap events with their sig_data", function()
    local ev = tp({ "tid" }, { sigtrap = true, remove_on_exec = true, sig_data = 0x5eed })
    local other = tp({ "tid" }, { sigtrap = true, remove_on_exec = true, sig_data = 0x5eef })
    assert(ev:notify())
    assert(other:notify())
    ev:enable()
    opens(7)
    ev:disable()
    local n = ev:overflows()
    assert.equal(7, n)
    assert.equal(0, (other:overflows()))
    ev:close() other:close()
  end)

  it("notify takes a usable signal number", function()
    local ev = assert(perf.open { type = "tracepoint", config = OPENAT, sample_period = 1 })
    assert.has_error(function() ev:notify(9) end)         -- SIGKILL
    assert.has_error(function() ev:notify(5) end)         -- SIGTRAP is for sigtrap events
    assert.has_error(function() ev:notify(0) end)
    ev:close()
    assert.has_error(function() ev:notify() end, "attempt to use a closed perf event")
  end)
end)
