-- perf.data_writer: events opened by hand, written to a file perf reads.
local H = require "helpers"
local perf = require "perf"

local PERF = "/usr/bin/perf"

describe("perf.data.writer", function()
  if not io.open(PERF) then
    pending("needs the perf tool at " .. PERF)
    return
  end

  it("drains a perf.cpus set into a file perf script reads", function()
    local path = os.tmpname()
    local set <close> = assert(perf.cpus.open({ "syscalls:sys_enter_openat", sample_period = 1,
      sample_type = { "identifier", "ip", "tid", "time", "cpu", "period" },
      sample_id_all = true, comm = true, mmap2 = true }, { pid = 0 }))
    assert(set:mmap(16))
    local w = assert(perf.data.writer(path, set))
    assert(w:synthesize(H.PID))
    assert(set:enable())
    for _ = 1, 25 do io.open("/etc/hostname"):close() end
    assert(set:disable())
    assert(w:write(set))
    assert.equal(25, w.samples)
    assert.matches("perf.data.writer .- %(open, 25 samples", tostring(w))
    assert.is_true(w:close())
    assert.is_true(w:close())
    assert.has_error(function() w:write(set) end, "attempt to use a closed perf.data writer")
    local out = H.sh(("%s script -i %s -F tid,event 2>&1"):format(PERF, path))
    assert.equal(25, select(2, out:gsub("sys_enter_openat", "")))
    assert.equal(25, select(2, out:gsub(tostring(H.PID), "")))
    local f <close> = assert(perf.data.open(path))
    assert.equal(1, #f.attrs)
    assert.equal(#set, #f.attrs[1].ids)
    assert.equal("syscalls:sys_enter_openat", f.attrs[1].name)
    local comm
    for r in f:records() do if r.type == "comm" and r.pid == H.PID then comm = r.comm end end
    assert.equal(H.sh("cat /proc/" .. H.PID .. "/comm"):gsub("\n", ""), comm)
    os.remove(path)
  end)

  it("writes the kernel's lost count of an event as perf record does, for perf report", function()
    local path = os.tmpname()
    local set <close> = assert(perf.cpus.open({ "syscalls:sys_enter_openat", sample_period = 1,
      sample_type = { "identifier", "ip", "tid", "time", "cpu", "period", "raw" },
      sample_id_all = true }, { pid = 0 }))
    assert(set:mmap(16))
    local w = assert(perf.data.writer(path, set))
    assert(set:enable())
    for _ = 1, 5 do io.open("/etc/hostname"):close() end
    assert(set:disable())
    assert(w:write(set))
    assert(w:lost_samples(set[1]:id(), 7))
    assert(w:lost_samples(set[#set]:id(), 5))
    assert.has_error(function() w:lost_samples(-1, 1) end, "perf.data.writer: no event of this file has id -1")
    assert(w:close())
    local f <close> = assert(perf.data.open(path))
    local lost = {}
    for r in f:records() do
      if r.type == "lost_samples" then lost[#lost + 1] = r.lost end
    end
    assert.same({ 7, 5 }, lost)
    local rep = H.sh(("%s report -i %s --stdio 2>/dev/null"):format(PERF, path))
    assert.matches("# Total Lost Samples: 12\n", rep)
    os.remove(path)
  end)

  it("raises on misuse and fails on an unwritable path", function()
    assert.has_error(function() perf.data.writer(1, {}) end)
    assert.has_error(function() perf.data.writer("/tmp/x.data", {}) end)
    local ev <close> = assert(perf.open("task-clock"))
    local msg = H.fails(perf.data.writer("/nonexistent/dir/x.data", { ev }))
    H.assert_has("perf.data.writer", msg)
    -- the writer's own messages, not a Lua argument error of a helper
    local path = os.tmpname()
    local w = assert(perf.data.writer(path, { ev }))
    assert.has_error(function() w:synthesize(nil) end,
      "perf.data.writer: synthesize takes the pid of a running process, not nil")
    assert.has_error(function() w:synthesize("1") end,
      "perf.data.writer: synthesize takes the pid of a running process, not string")
    assert.has_error(function() w:write({ ev }) end,
      "perf.data.writer: write takes a ring, a list of rings or a perf.cpus set, "
      .. "not a perf.event as item 1 (ev:mmap() gives an event's ring)")
    assert.has_error(function() w:write(42) end,
      "perf.data.writer: write takes a ring, a list of rings or a perf.cpus set, not a number")
    assert.is_true(w:close())
    os.remove(path)
  end)
end)
