-- perf.cpus (lua/perf/counting/cpus.lua): one event per CPU, their rings merged by
-- time; counts checked exactly with tracepoints, CPU placement with this
-- process pinned by taskset.
local perf = require "perf"
local cpus = require "perf.cpus"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

describe("perf.cpus", function()
  it("parses CPU lists and knows the online CPUs", function()
    assert.same({ 0, 1, 2, 3, 5, 7, 8 }, cpus.parse_list("0-3,5,7-8\n"))
    assert.has_error(function() cpus.parse_list("0-x") end)
    local f = assert(io.open("/sys/devices/system/cpu/online"))
    assert.same(cpus.parse_list(f:read("l")), cpus.online())
    f:close()
    assert.equal(cpus, perf.cpus)
    assert.equal(perf.capabilities().cpus, #cpus.online())
  end)

  it("opens one event per CPU and merges their samples by time", function()
    local set = assert(cpus.open { type = "tracepoint", config = OPENAT, sample_period = 1,
                                   sample_type = { "tid", "time", "cpu", "identifier" } })
    assert.equal(#cpus.online(), #set)
    assert.matches("^perf%.cpus %(%d+ CPUs, 0 rings%)", tostring(set))
    assert.has_error(function() set:records() end, "perf.cpus: no rings yet: call set:mmap() first")
    assert(set:mmap(4))
    set:enable()
    for _ = 1, 40 do io.open("/dev/null"):close() end
    set:disable()
    local value = set:read()
    assert.equal(40, value)
    assert.equal(40 * 40, set:pending())            -- 40-byte samples
    local n, last = 0, 0
    for time, cpu in set:samples("time", "cpu") do
      n = n + 1
      assert.is_true(time >= last)
      assert.is_true(cpu >= 0 and cpu < #set)
      last = time
    end
    assert.equal(40, n)
    assert.same({ 0, 0, 0 }, { set:lost() })
    assert.same({ false }, { set:poll(0) })
    assert.is_true(set:close())
    assert.is_true(set:close())
  end)

  it("refuses a single cpu in the target and reports failures per CPU", function()
    assert.has_error(function() cpus.open({ type = "software", config = 1 }, { cpu = 0 }) end)
    local set, msg, errno = cpus.open({ type = "software", config = 1 }, { cpus = { 4095 } })
    assert.is_nil(set)
    assert.matches("%(on CPU 4095%)$", msg)
    assert.equal("integer", math.type(errno))
  end)
end)

-- Open file descriptors of this process.
local function fds()
  return #require("perf.util.fs").listdir("/proc/self/fd")
end

-- Runs fn with this process pinned to CPU `cpu` (taskset), then restores
-- the affinity it had.
local function pinned(cpu, fn)
  local mask = H.sh(("taskset -p %d"):format(H.PID)):match(":%s*(%x+)")
  assert(mask, "taskset reads the affinity")
  assert(os.execute(("taskset -p -c %d %d >/dev/null"):format(cpu, H.PID)))
  local ok, err = pcall(fn)
  assert(os.execute(("taskset -p %s %d >/dev/null"):format(mask, H.PID)))
  assert(ok, err)
end

describe("perf.cpus, one CPU at a time", function()
  it("parses lists as sysfs and perf -C write them", function()
    assert.same({}, cpus.parse_list(""))
    assert.same({ 7 }, cpus.parse_list("7"))
    assert.same({ 1, 1, 2 }, cpus.parse_list("1, 1-2\n"))
    assert.same({ 4 }, cpus.parse_list("4-4"))
    assert.has_error(function()
      perf.record({ "true" }, "syscalls:sys_enter_openat", { cpus = "1-0", stdout = "/dev/null" })
    end)
    -- a range going down is refused, as perf's CPU map parser refuses it
    -- (perf stat -C 1-0: "failed to parse CPUs map"), not taken as no CPU
    for _, bad in ipairs { "1-", "-1", "a", "1-2-3", "0x1", "1.5", "1-0", "0,3-2" } do
      assert.has_error(function() cpus.parse_list(bad) end, ("perf.cpus: malformed CPU list %q"):format(bad))
    end
  end)

  it("opens on the CPUs listed only, each event counting on its own CPU", function()
    local online = cpus.online()
    if #online < 2 then return pending("needs two online CPUs") end
    local a, b = online[1], online[2]
    local set <close> = assert(cpus.open({ type = "tracepoint", config = OPENAT }, { cpus = { b, a } }))
    assert.equal(2, #set)
    assert.same({ b, a }, set.cpus)
    pinned(a, function()
      assert(set:reset())
      assert(set:enable())
      for _ = 1, 25 do io.open("/dev/null"):close() end
      assert(set:disable())
    end)
    assert.equal(0, (set[1]:read()))                   -- CPU b: nothing ran there
    assert.equal(25, (set[2]:read()))                  -- CPU a: every call
    assert.equal(25, (set:read()))
    assert(set:reset())
    assert.equal(0, (set:read()))
  end)

  it("gives each sample the CPU of the ring it came from", function()
    local online = cpus.online()
    local last = online[#online]
    local set <close> = assert(cpus.open({ type = "tracepoint", config = OPENAT, sample_period = 1,
      sample_type = { "cpu", "time" } }))
    assert(set:mmap(1))
    assert.matches(("^perf%%.cpus %%(%d CPUs, %d rings%%)"):format(#online, #online), tostring(set))
    pinned(last, function()
      assert(set:enable())
      for _ = 1, 12 do io.open("/dev/null"):close() end
      assert(set:disable())
    end)
    local n = 0
    for cpu in set:samples("cpu") do
      assert.equal(last, cpu)
      n = n + 1
    end
    assert.equal(12, n)
    assert.equal(0, set:pending())
  end)

  it("needs rings for what reads them, and says so", function()
    local set <close> = assert(cpus.open({ type = "software", config = 9 }, { cpus = { 0 } }))
    for _, m in ipairs { "records", "samples", "poll", "lost", "pending" } do
      assert.has_error(function() set[m](set) end, "perf.cpus: no rings yet: call set:mmap() first")
    end
  end)

  it("raises on a malformed event after closing what it opened", function()
    local before = fds()
    assert.has_error(function() cpus.open("task-clock:zz") end)
    assert.equal(before, fds())
    local set = assert(cpus.open("task-clock"))
    assert.equal(before + #cpus.online(), fds())
    assert(set:mmap(1))
    assert.is_true(set:close())
    assert.equal(before, fds())
  end)
end)
