-- csrc/process.c: the library's idea of its own pid, kept current across
-- fork(2) (an atfork hook), which is how handles tell a forked child from
-- the process that opened them. Children come from the forker fixture.
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

local function tp()
  return assert(perf.open { type = "tracepoint", config = OPENAT, sample_period = 1, sample_type = { "tid" } })
end

describe("the process a handle belongs to", function()
  local forker, dir
  setup(function() forker, dir = H.load_fixture("forker") end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("is the parent's for handles made before a fork: the child may not map nor read them", function()
    local ev <close> = tp()
    assert.equal("cannot map an event in a forked child",
      forker.run(function() ev:mmap(1) end):match("cannot map an event in a forked child"))
    local rb = assert(ev:mmap(1))
    local out = forker.run(function() rb:pending() end)
    assert.matches(("perf ring used in a forked child (mapped by pid %d)"):format(H.PID), out, 1, true)
    assert.equal(0, rb:pending())
  end)

  it("is the child's own for what the child opens, so it maps and reads it", function()
    local out = forker.run(function()
      local ev = tp()
      local rb = assert(ev:mmap(1))
      assert(ev:enable())
      for _ = 1, 6 do io.open("/dev/null"):close() end
      assert(ev:disable())
      local n, tids = 0, {}
      for rec in rb:records() do
        n = n + 1
        tids[rec.tid] = true
      end
      -- the child's own pid, from procfs
      local f = assert(io.open("/proc/self/stat"))
      local pid = math.tointeger(f:read("n"))
      f:close()
      assert(n == 6, "records: " .. n)
      assert(tids[pid] and pid ~= H.PID, "the samples are the child's")
      ev:close()
    end)
    assert.equal("ok", out)
  end)
end)
