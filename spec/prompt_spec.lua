-- What the library gives at the Lua prompt: exactly the results of a call
-- (no trailing nils to print), and the modules the README reaches through
-- `perf`.
local perf = require "perf"

local function count(...) return select("#", ...) end

describe("a successful call", function()
  it("returns exactly its results", function()
    assert.equal(1, count(perf.open "task-clock"))
    assert.equal(1, count(perf.open({ "task-clock" }, { pid = 0 })))
    assert.equal(1, count(perf.group { "task-clock", "page-faults" }))
    assert.equal(1, count(perf.stat({ "true" }, { "task-clock" })))
    assert.equal(1, count(perf.measure({ "task-clock" }, function() end)))
    assert.equal(2, count(perf.measure({ "task-clock" }, function() return "r" end)))
    assert.equal(1, count(perf.uprobe("libc.so.6", "getenv")))
    local s = "watched"
    assert.equal(1, count(perf.watch(perf.addressof(s), { mode = "rw", len = 1 })))
    assert.equal(1, count(perf.tracepoint "sched:sched_switch"))
    local ev <close> = assert(perf.open "task-clock")
    assert.equal(1, count(ev:enable()))
  end)

  it("and a failure its three values", function()
    assert.equal(3, count(perf.open { type = "software", config = 999 }))
    assert.equal(3, count(perf.group { "task-clock", { type = "software", config = 999 } }))
  end)
end)

describe("perf", function()
  it("reaches perf.elf", function()
    assert.equal(require "perf.elf", perf.elf)
    local e = assert(perf.elf.open("/proc/self/exe"))
    assert.is_table(e)
  end)
end)
