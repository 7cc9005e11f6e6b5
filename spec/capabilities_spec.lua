-- perf.capabilities (lua/perf/event/capabilities.lua): what this machine's
-- kernel lets perf do, compared with procfs, sysfs, the perf tool and what
-- the kernel accepts.
local perf = require "perf"
local capabilities = require "perf.event.capabilities"
local H = require "helpers"

describe("perf.capabilities", function()
  local caps = perf.capabilities()

  local function read(path)
    local f = io.open(path)
    if not f then return nil end
    local s = f:read("l")
    f:close()
    return s
  end

  it("reports the kernel's settings", function()
    assert.are.equal(read("/proc/sys/kernel/osrelease"), caps.kernel)
    assert.are.equal(tonumber(read("/proc/sys/kernel/perf_event_paranoid")), caps.paranoid)
    assert.are.equal(tonumber(read("/proc/sys/kernel/perf_event_max_sample_rate")), caps.max_sample_rate)
    assert.are.equal(tonumber(read("/proc/sys/kernel/perf_event_mlock_kb")), caps.mlock_kb)
    assert.are.equal(136, caps.attr_size)
    assert.is_true(caps.cpus >= 1)
  end)

  it("agrees with sysfs about the PMU, and says why when there is none", function()
    local has_cpu = read("/sys/bus/event_source/devices/cpu/type") ~= nil
    assert.are.equal(has_cpu, caps.pmu)
    if not caps.pmu then
      assert.matches("no hardware PMU", caps.why.pmu)
      assert.is_false(caps.rdpmc)
      assert.is_string(caps.why.rdpmc)
    end
    local found = {}
    for _, name in ipairs(caps.pmus) do found[name] = true end
    assert.is_true(found.software and found.tracepoint and found.breakpoint)
  end)

  it("finds tracefs and the breakpoint slots", function()
    assert.are.equal("/sys/kernel/tracing", caps.tracefs)
    assert.is_true(caps.breakpoints)
    assert.are.equal(4, caps.max_breakpoints)    -- x86: four debug registers
    assert.is_true(caps.uprobes)
    assert.is_true(caps.read_lost)
  end)

  it("returns a fresh table each call", function()
    local a = perf.capabilities()
    a.why.extra = "x"
    a.pmu = "changed"
    assert.is_nil(perf.capabilities().why.extra)
    assert.are_not.equal("changed", perf.capabilities().pmu)
  end)
end)

describe("perf.capabilities probes", function()

  it("the breakpoint slots when asked: none while CPU-wide breakpoints hold them, all once freed", function()
    local bytes = string.rep("h", 64)
    local held = {}                  -- every slot of CPU 0, briefly
    for i = 1, 16 do
      local ev = perf.open({ type = "breakpoint", bp_type = "w", bp_addr = perf.addressof(bytes) + i,
        bp_len = 1, exclude_kernel = true }, { pid = -1, cpu = 0 })
      if not ev then break end
      held[i] = ev
    end
    local during = perf.capabilities()
    local msg, errno = H.fails(perf.watch(perf.addressof(bytes), { mode = "w" }))
    for _, ev in ipairs(held) do ev:close() end
    local after = perf.capabilities()
    assert.are.equal(4, #held)                   -- x86: four debug registers
    assert.is_false(during.breakpoints)
    assert.are.equal(0, during.max_breakpoints)
    assert.matches("no hardware breakpoint slot is free now", during.why.breakpoints, 1, true)
    assert.are.equal(28, errno)
    assert.matches("the CPU-wide ones of any process take them", msg, 1, true)
    assert.is_true(after.breakpoints)
    assert.are.equal(4, after.max_breakpoints)
    assert.is_nil(after.why.breakpoints)
  end)

  it("read_lost as an unprivileged user: probed in user space (child as nobody)", function()
    local out, why = H.run_as_nobody([[
      local caps = require("perf").capabilities()
      print(caps.read_lost, caps.why.read_lost)
    ]])
    if not out then return pending(why) end
    assert.are.equal("true\tnil\n", out)
  end)

  it("the first perf.open probes only what it needs (one perf_event_open more)", function()
    -- a child counts its own perf_event_open calls: the counting event
    -- comes from the core (which probes nothing), then perf.open opens
    -- task-clock, which needs to know whether read_format lost is readable
    local out = H.run_lua([[
      local core = require "perf.core"
      local f = io.open("/sys/kernel/tracing/events/syscalls/sys_enter_perf_event_open/id")
      local id = math.tointeger(f:read("n")) f:close()
      local calls = assert(core.open({ type = 2, config = id, disabled = false }, nil, "calls"))
      local perf = require "perf"
      local ev = assert(perf.open "task-clock")
      print((calls:read()))
      ev = assert(perf.open "page-faults")
      print((calls:read()))
    ]])
    assert.are.equal("2\n3\n", out)
  end)
end)

describe("perf.capabilities against the system", function()
  local caps = perf.capabilities()

  it("names the kernel as uname -r does, and the stack depth procfs gives", function()
    assert.equal(H.sh("uname -r"):gsub("\n$", ""), caps.kernel)
    assert.equal(tonumber(H.sh("cat /proc/sys/kernel/perf_event_max_stack")), caps.max_stack)
  end)

  it("agrees with the perf tool about the hardware PMU", function()
    -- perf stat prints its counts on standard error
    local p = assert(io.popen("perf stat -x, -e cycles true 2>&1 >/dev/null"))
    local out = p:read("a")
    p:close()
    assert.matches(",cycles,", out, 1, true)
    local unsupported = out:find("<not supported>", 1, true) ~= nil
    assert.equal(not unsupported, caps.pmu)
    if not caps.pmu then
      assert.matches("opening cpu%-cycles gives ENOENT", caps.why.pmu)
    end
  end)

  it("lists the PMUs sysfs has, sorted", function()
    local want = {}
    for name in H.sh("ls -1 /sys/bus/event_source/devices"):gmatch("[^\n]+") do want[#want + 1] = name end
    table.sort(want)
    assert.is_true(#want >= 3)
    assert.same(want, caps.pmus)
  end)

  it("counts the online CPUs as getconf and /proc/cpuinfo do", function()
    assert.equal(tonumber(H.sh("getconf _NPROCESSORS_ONLN")), caps.cpus)
    local want = {}
    for n in H.sh("grep ^processor /proc/cpuinfo"):gmatch("processor%s*:%s*(%d+)") do
      want[#want + 1] = math.tointeger(tonumber(n))
    end
    assert.same(want, capabilities.online_cpus())
  end)

  it("finds tracefs where /proc/mounts has it mounted", function()
    local mounted
    for line in io.lines("/proc/mounts") do
      local dir, kind = line:match("^%S+ (%S+) (%S+)")
      if kind == "tracefs" and (not mounted or #dir < #mounted) then mounted = dir end
    end
    assert.equal(mounted, caps.tracefs)
    assert.is_nil(caps.why.tracefs)
  end)

  it("says uprobes work exactly when the kernel takes a uprobe", function()
    local ev = perf.uprobe("libc.so.6", "getenv")
    assert.equal(ev ~= nil, caps.uprobes)
    if ev then ev:close() end
  end)

  it("gives a reason for each capability that is missing, and only for those", function()
    for _, k in ipairs { "pmu", "rdpmc", "tracefs", "breakpoints", "uprobes", "read_lost" } do
      if caps[k] then
        assert.is_nil(caps.why[k], k)
      else
        assert.equal("string", type(caps.why[k]), k)
      end
    end
    for k in pairs(caps.why) do
      assert.is_falsy(caps[k], k)
    end
  end)

  it("counts this thread's own breakpoints out of the free slots, one each", function()
    local bytes = string.rep("s", 64)
    local base = perf.capabilities().max_breakpoints
    assert.is_true(base >= 1)
    local held = {}
    for k = 1, base do
      held[k] = assert(perf.open({ type = "breakpoint", bp_type = "rw", bp_addr = perf.addressof(bytes) + k,
        bp_len = 1, exclude_kernel = true }))
      assert.equal(base - k, perf.capabilities().max_breakpoints)
    end
    local none = perf.capabilities()
    for _, ev in ipairs(held) do ev:close() end
    assert.is_false(none.breakpoints)
    assert.equal("string", type(none.why.breakpoints))
    assert.equal(base, perf.capabilities().max_breakpoints)
  end)

  it("prints as one line naming its values", function()
    local s = tostring(caps)
    assert.matches("^perf%.capabilities {", s)
    assert.matches("paranoid = " .. H.sh("cat /proc/sys/kernel/perf_event_paranoid"):gsub("%s", ""), s)
    assert.matches("cpus = " .. caps.cpus, s, 1, true)
    assert.no.matches("\n", s)
  end)
end)
