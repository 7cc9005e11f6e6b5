-- perf.symbol, perf.addressof, the raw constants and perf.capabilities.
local perf = require "perf"

local function maps_of(addr)
  for line in io.lines("/proc/self/maps") do
    local lo, hi, perms, path = line:match("^(%x+)%-(%x+) (%S+) %S+ %S+ %S+%s*(.*)$")
    if addr >= tonumber(lo, 16) and addr < tonumber(hi, 16) then return perms, path end
  end
end

describe("perf.symbol", function()
  it("finds a C function in the process and in a named library", function()
    local a = assert(perf.symbol("getenv"))
    local perms, path = maps_of(a)
    assert.matches("x", perms)
    assert.matches("libc", path)
    assert.are.equal(a, perf.symbol("getenv", "libc.so.6"))
    assert.is_truthy(maps_of(assert(perf.symbol("lua_gettop"))))
  end)

  it("returns nil, message, errno for a missing symbol or library", function()
    local ok, msg, errno = perf.symbol("no_such_symbol_here")
    assert.is_nil(ok)
    assert.matches('perf.symbol "no_such_symbol_here": not found', msg)
    assert.are.equal(2, errno)
    ok, msg = perf.symbol("getenv", "libnothere.so.9")
    assert.is_nil(ok)
    assert.matches('cannot load "libnothere.so.9"', msg)
  end)
end)

describe("perf.addressof", function()
  it("gives the address of a string's bytes and a userdata's block", function()
    local s = "address me"
    local a = perf.addressof(s)
    assert.are.equal("rw-p", (maps_of(a)))
    assert.are.equal(a, perf.addressof(s))
    local f = assert(io.open("/dev/null"))
    assert.is_true(perf.addressof(f) > 0)
    f:close()
    assert.has_error(function() perf.addressof(5) end)
    assert.has_error(function() perf.addressof {} end)
  end)
end)

describe("perf.core constants", function()
  it("carry the kernel's values, including those newer than the header", function()
    local c = perf.core
    assert.are.same({ 0, 1, 2, 3, 4, 5 }, { c.PERF_TYPE_HARDWARE, c.PERF_TYPE_SOFTWARE,
      c.PERF_TYPE_TRACEPOINT, c.PERF_TYPE_HW_CACHE, c.PERF_TYPE_RAW, c.PERF_TYPE_BREAKPOINT })
    assert.are.equal(1 << 24, c.PERF_SAMPLE_WEIGHT_STRUCT)
    assert.are.equal(1 << 4, c.PERF_FORMAT_LOST)
    assert.are.equal(21, c.PERF_RECORD_AUX_OUTPUT_HW_ID)
    assert.are.equal(11, c.PERF_COUNT_SW_CGROUP_SWITCHES)
    assert.are.equal(0x2400, c.PERF_EVENT_IOC_ENABLE)
    assert.are.equal(0x2401, c.PERF_EVENT_IOC_DISABLE)
    assert.are.equal(0x40082404, c.PERF_EVENT_IOC_PERIOD)
    assert.are.equal(0x80082407, c.PERF_EVENT_IOC_ID)
    assert.are.equal(1, c.PERF_IOC_FLAG_GROUP)
    assert.are.equal(8, c.PERF_FLAG_FD_CLOEXEC)
    assert.are.equal(-128, c.PERF_CONTEXT_KERNEL)
    assert.are.equal(136, c.PERF_ATTR_SIZE_VER8)
  end)

  it("name every constant of the installed linux/perf_event.h", function()
    local c, names = perf.core, {}
    for line in io.lines("/usr/include/linux/perf_event.h") do
      local n = line:match("^%s*(PERF_[%w_]+)%s*=") or line:match("^%s*(PERF_[%w_]+),")
        or line:match("^#define%s+(PERF_[%w_]+)%s")
      if n then names[#names + 1] = n end
    end
    assert.is_true(#names > 300)
    local missing = {}
    for _, n in ipairs(names) do
      if math.type(c[n]) ~= "integer" then missing[#missing + 1] = n end
    end
    assert.same({}, missing)
    assert.same({ 1, 1, 7, 7, 0x0d, 32, 1 << 24 }, { c.PERF_AUX_FLAG_TRUNCATED,
      c.PERF_BPF_EVENT_PROG_LOAD, c.PERF_BR_SYSCALL, c.PERF_SAMPLE_BRANCH_PLM_ALL,
      c.PERF_MEM_LVLNUM_RAM, c.PERF_TXN_ABORT_SHIFT, c.PERF_SAMPLE_WEIGHT_STRUCT })
  end)
end)

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
  local H = require "helpers"

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
