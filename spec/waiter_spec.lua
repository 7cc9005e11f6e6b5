-- perf.core.waiter: a command, its rings and SIGINT/SIGTERM waited for at
-- once (what perf.record's loop waits on).
local core = require "perf.core"
local perf = require "perf"
local H = require "helpers"

describe("perf.core.waiter", function()
  it("says when the command has exited, and times out while it runs", function()
    local child = assert(core.spawn({ "sleep", "0.3" }))
    local w <close> = assert(core.waiter(child:pid()))
    assert.matches("^perf%.waiter %(pid %d+%)$", tostring(w))
    assert(child:start())
    assert.equal("timeout", w:wait({}, 0))
    assert.equal("exited", w:wait({}, -1))
    assert.equal(0, child:wait().status)
    w:close()
    assert.equal("perf.waiter (closed)", tostring(w))
    assert.has_error(function() w:wait({}, 0) end, "attempt to use a closed perf.waiter")
    w:close()
  end)

  it("turns SIGINT and SIGTERM into values while open, and kills the command", function()
    local child = assert(core.spawn({ "sleep", "30" }))
    local w = assert(core.waiter(child:pid()))
    assert(child:start())
    assert(os.execute("kill -INT " .. H.PID))      -- this process: blocked, not delivered
    assert.same({ "signal", 2 }, { w:wait({}, 1000) })
    assert(os.execute("kill -TERM " .. H.PID))
    assert.same({ "signal", 15 }, { w:wait({}, 1000) })
    assert(w:kill(15))
    assert.equal("exited", w:wait({}, -1))
    assert.equal("SIGTERM", child:wait().signal)
    w:close()
  end)

  it("wakes when a ring passes its watermark", function()
    local ev = assert(perf.open({ type = "tracepoint", config = H.tracepoint_id("syscalls", "sys_enter_openat"),
      sample_period = 1, sample_type = { "tid" }, wakeup_events = 1 }))
    local rb = assert(ev:mmap(1))
    local child = assert(core.spawn({ "sleep", "30" }))
    local w <close> = assert(core.waiter(child:pid()))
    assert.equal("timeout", w:wait({ rb }, 0))
    ev:enable()
    io.open("/dev/null"):close()
    ev:disable()
    assert.equal("data", w:wait({ rb }, 1000))
    child:close()
    ev:close()
  end)

  it("fails cleanly for a process that does not exist", function()
    local msg, errno = H.fails(core.waiter(0x7ffffff0))
    assert.matches("pidfd_open", msg)
    assert.equal(3, errno)                          -- ESRCH
    assert.has_error(function() core.waiter(0) end)
  end)
end)
