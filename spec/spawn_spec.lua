-- perf.core.spawn: the child process perf.stat counts, on its own: a child
-- held before its exec, waits with and without a timeout, its clock, and
-- closing it in each state; a parent that ignores SIGCHLD. (The advice
-- when a file cannot run: exec_hint_spec.lua.)
local core = require "perf.core"
local H = require "helpers"

describe("perf.core.spawn", function()
  it("holds the child before its exec until start, then waits for it", function()
    local marker = os.tmpname()
    os.remove(marker)
    local c = assert(core.spawn({ "touch", marker }))
    assert.matches("^perf%.child %(pid %d+, waiting to start%)$", tostring(c))
    assert.is_nil(c:elapsed())
    assert.is_nil(io.open(marker))              -- not run yet
    assert.is_true(c:start())
    assert.matches("^perf%.child %(pid %d+, running%)$", tostring(c))
    local w = assert(c:wait())
    assert.are.equal(0, w.status)
    assert.is_true(w.elapsed > 0)
    assert.are.equal(w.elapsed, c:elapsed())
    assert.are.equal("perf.child (done)", tostring(c))
    assert.is_nil(c:pid())
    assert(io.open(marker)):close()
    os.remove(marker)
    assert.are.same(w, c:wait())                -- waiting again gives the same
    c:close()
  end)

  it("waits with a timeout: false while the child runs, its status once it ends", function()
    local c <close> = assert(core.spawn({ "sleep", "0.2" }))
    assert(c:start())
    assert.are.equal(false, c:wait(0))
    local t = c:elapsed()
    assert.are.equal(false, c:wait(50))
    assert.is_true(c:elapsed() - t >= 50e6, "waited " .. (c:elapsed() - t))
    local n, w = 0
    repeat
      w, n = c:wait(30), n + 1
    until w
    assert.are.equal(0, w.status)
    assert.is_true(n >= 2 and n <= 8, "waits: " .. n)
    assert.is_true(w.elapsed >= 200e6 and w.elapsed < 400e6, "elapsed " .. w.elapsed)
    assert.has_error(function() c:wait(-1) end)
  end)

  it("reports the signal that ended it, also through a timed wait", function()
    local c <close> = assert(core.spawn({ "sh", "-c", "kill -KILL $$" }))
    assert(c:start())
    local w
    repeat w = c:wait(100) until w
    assert.are.equal("SIGKILL", w.status)
    assert.are.equal(9, w.signo)
  end)

  it("closes a child that never started without running it, and kills a running one", function()
    local marker = os.tmpname()
    os.remove(marker)
    local c = assert(core.spawn({ "touch", marker }))
    c:close()
    assert.is_nil(io.open(marker))
    assert.are.equal("perf.child (done)", tostring(c))
    c = assert(core.spawn({ "sleep", "10" }))
    assert(c:start())
    local t0 = os.time()
    c:close()
    c:close()
    assert.is_true(os.time() - t0 < 5)
    assert.has_error(function() c:start() end, "attempt to start a child twice")
  end)

  it("ignores SIGINT while the child runs, and restores it once it is reaped", function()
    local out = H.run_lua([[
      local core = require "perf.core"
      local me = io.open("/proc/self/stat"):read("n")
      local c = assert(core.spawn({ "sleep", "0.3" }))
      assert(c:start())
      assert(c:wait(10) == false)
      io.popen("kill -INT " .. me):close()     -- ignored: the interpreter goes on
      -- (not os.execute: system(3) ignores SIGINT itself while it runs)
      print("survived")
      repeat until c:wait(50)
      io.stdout:flush()
      io.popen("kill -INT " .. me):close()     -- the interpreter's own handler again
      print("not reached")
    ]])
    -- lua.c's handler turns the second SIGINT into an "interrupted!" error
    assert.matches("^survived\n.*interrupted!", out)
    assert.not_matches("not reached", out)
  end)

  it("waits for its child in a process that ignores SIGCHLD, and leaves it ignored", function()
    -- bash sets SIGCHLD ignored and execs the interpreter, which inherits it
    local out = H.run_lua([[
      local perf = require "perf"
      local function ignored()
        local mask = io.open("/proc/self/status"):read("a"):match("SigIgn:%s*(%x+)")
        return (tonumber(mask, 16) >> 16) & 1 == 1       -- bit 17: SIGCHLD
      end
      print("ignored before", ignored())
      local r, msg = perf.stat({ "sh", "-c", "for i in 1 2 3; do cat /dev/null; done" },
        { "syscalls:sys_enter_execve" })
      print("counts", r and r[1], r and r.status, msg)
      print("ignored after", ignored())
    ]], [[bash -c 'trap "" CHLD; exec "$0" "$@"']])
    assert.matches("ignored before\ttrue\n", out, 1, true)
    assert.matches("counts\t3\t0\tnil\n", out, 1, true)        -- the 3 cats, as perf stat counts
    assert.matches("ignored after\ttrue\n", out, 1, true)
  end)
end)
