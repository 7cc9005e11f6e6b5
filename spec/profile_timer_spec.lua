-- perf.profile { event = "timer" }: a CPU-time POSIX timer drives the
-- sampling hook, and stands in for cpu-clock where perf_event_open is
-- refused (a seccomp filter here, as in a container).

local perf = require "perf"
local H = require "helpers"

local FX = "spec/fixtures/profiled.lua"
local fx = dofile(FX)

local find = H.find

describe("the timer", function()
  it("splits CPU time 3:1 between two functions doing 3:1 of the work", function()
    local prof = assert(perf.profile(fx.split, { event = "timer" }, 3))
    assert.equal("timer", prof.event)
    assert.equal(999, prof.freq)
    assert.is_nil(prof.note)
    assert.is_true(prof.samples > 50, tostring(prof))
    local fns = prof:functions()
    local three = assert(find(fns, { source = FX, line = 29 }))
    local one = assert(find(fns, { source = FX, line = 34 }))
    local ratio = three.total / one.total
    assert.is_true(ratio > 2 and ratio < 4.5, ("3:1 of the work gave %d:%d"):format(three.total, one.total))
    H.assert_has("# perf.profile: timer at 999 Hz", tostring(prof))
  end)

  it("takes a freq, and writes pprof in nanoseconds of CPU", function()
    local prof = assert(perf.profile(fx.one, { event = "timer", freq = 100 }))
    assert.equal(100, prof.freq)
    assert.same({ type = "timer", unit = "nanoseconds", scale = 10000000 },
      require("perf.profiling.pprof").main_type(prof))
    H.assert_has("samples by freq", select(2, pcall(perf.profile, fx.one, { event = "timer", period = 5 })))
    H.assert_has("give no event", select(2, pcall(perf.profile, fx.one, { event = "timer", mode = "alloc" })))
  end)

  it("stops with the profiler: nothing is charged after stop", function()
    local p <close> = assert(perf.profiler { event = "timer" })
    p:start()
    fx.one()
    local prof = p:stop()
    local n = prof.samples
    assert.is_true(n > 0)
    fx.one()
    assert.equal(n, p:stop().samples)
  end)

  local so, dir = H.build_fixture("seccomp_errno")
  local function child(errno, body)
    return H.run_lua(([[
local seccomp = package.loadlib(%q, "luaopen_seccomp_errno")()
local perf = require "perf"
local fx = dofile "spec/fixtures/profiled.lua"
seccomp.deny_perf(%d)
%s]]):format(so, errno, body))
  end

  it("stands in for cpu-clock when perf_event_open is refused, and says so", function()
    local out = child(13, [[
local prof = assert(perf.profile(fx.split, nil, 1))
print(prof.event, prof.samples > 10, prof:lines()[1].line)
print(prof.note)
local prof = assert(perf.profile(fx.one, { event = "task-clock", freq = 200 }))
print(prof.event, prof.freq)
print(perf.profile(fx.one, { event = "page-faults" }))
]])
    assert.equal(table.concat({
      "timer\ttrue\t25",
      "cpu-clock refused (EACCES): a CPU-time timer samples instead",
      "timer\t200",
    }, "\n"), out:match("^(.-)\n[^\n]*\n$"), out)
    assert.matches("nil\tperf.profile \"page%-faults\": Permission denied %(EACCES%).*\t13\n$", out)
  end)

  it("does not stand in for other refusals", function()
    local out = child(1, [[print(perf.profile(fx.one, { event = "cpu-clock", native = true }))]])
    assert.matches("^nil\t.*EPERM.*\t1\n$", out)
    os.execute("rm -rf " .. dir)
  end)
end)
