-- Counting: exact tracepoint and breakpoint counts, software events counting
-- real work, read/scaled shapes.
local perf = require "perf"
local H = require "helpers"

local function tracepoint(sys, name, extra)
  local attr = { type = "tracepoint", config = H.tracepoint_id(sys, name) }
  for k, v in pairs(extra or {}) do attr[k] = v end
  return assert(perf.open(attr))
end

describe("tracepoints", function()
  it("count exactly the openat and close syscalls this test makes", function()
    local openat <close> = tracepoint("syscalls", "sys_enter_openat")
    local closes <close> = tracepoint("syscalls", "sys_enter_close")
    assert(openat:enable()); assert(closes:enable())
    for _ = 1, 37 do assert(io.open("/dev/null")):close() end
    assert(openat:disable()); assert(closes:disable())
    assert.are.equal(37, (openat:read()))
    assert.are.equal(37, (closes:read()))
  end)

  it("count nothing while disabled", function()
    local ev <close> = tracepoint("syscalls", "sys_enter_openat")
    for _ = 1, 5 do assert(io.open("/dev/null")):close() end
    assert.are.equal(0, (ev:read()))
    assert(ev:enable())
    for _ = 1, 5 do assert(io.open("/dev/null")):close() end
    assert(ev:disable())
    for _ = 1, 5 do assert(io.open("/dev/null")):close() end
    assert.are.equal(5, (ev:read()))
  end)
end)

describe("breakpoints", function()
  it("an execute breakpoint on a C function counts every call", function()
    local getenv = assert(perf.symbol("getenv"))
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "x",
      bp_addr = getenv, bp_len = 8 })
    assert(ev:enable())
    for _ = 1, 250 do os.getenv("HOME") end
    assert(ev:disable())
    assert.are.equal(250, (ev:read()))
  end)

  it("a read/write watchpoint on a Lua string's first byte counts each read", function()
    local s = "watch me " .. tostring(os.time())
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "rw",
      bp_addr = perf.addressof(s), bp_len = 1 })
    assert(ev:enable())
    for _ = 1, 100 do local _ = s:byte(1) end
    assert(ev:disable())
    assert.are.equal(100, (ev:read()))
  end)

  it("a write watchpoint ignores reads and counts writes", function()
    local s = "read only " .. tostring(os.time())
    local reads <close> = assert(perf.open { type = "breakpoint", bp_type = "w",
      bp_addr = perf.addressof(s), bp_len = 1 })
    assert(reads:enable())
    for _ = 1, 50 do local _ = s:byte(1) end
    assert(reads:disable())
    assert.are.equal(0, (reads:read()))

    -- a file handle is a luaL_Stream { FILE *f; lua_CFunction closef; }:
    -- f:close() writes closef = NULL once
    local f = assert(io.open("/dev/null"))
    local closef = perf.addressof(f) + 8
    local writes <close> = assert(perf.open { type = "breakpoint", bp_type = "w",
      bp_addr = closef, bp_len = 8 })
    assert(writes:enable())
    f:close()
    assert(writes:disable())
    assert.are.equal(1, (writes:read()))
  end)
end)

describe("software events", function()
  it("page-faults counts the pages a fresh buffer touches", function()
    local ev <close> = assert(perf.open { type = "software", config = 2,
      exclude_kernel = true })
    assert(ev:enable())
    local mem = H.touch_pages(9000)          -- 18000 fresh pages (past malloc's mmap threshold)
    assert(ev:disable())
    local n = ev:read()
    -- at least one fault per page; the allocator adds a few (a sanitizer's
    -- shadow memory and quarantine add more)
    assert.is_true(n >= 18000 and n < 36000, "page faults: " .. n)
    assert.are.equal(9000 * 4096, #mem)
  end)

  it("task-clock measures the time spent running", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    local c0 = os.clock()
    assert(ev:enable())
    local x = 0
    while os.clock() - c0 < 0.05 do x = x + 1 end
    assert(ev:disable())
    local ns, enabled, running = ev:read()
    local cpu = (os.clock() - c0) * 1e9
    assert.is_true(ns > 0.5 * 0.05e9 and ns <= cpu * 1.2, ("task-clock %d ns for %.0f ns of cpu"):format(ns, cpu))
    assert.are.equal(enabled, running)
    assert.is_true(enabled >= ns)
  end)

  it("context-switches counts the switches of a blocking wait", function()
    local ev <close> = assert(perf.open { type = "software", config = 3 })
    assert(ev:enable())
    for _ = 1, 3 do os.execute("sleep 0.01") end
    assert(ev:disable())
    local n = ev:read()
    assert.is_true(n >= 3 and n < 100, "context switches: " .. n)
  end)
end)

describe("read", function()
  it("returns value, time_enabled, time_running and lost without a table", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    local v, en, run, lost = ev:read()
    assert.are.equal(0, v); assert.are.equal(0, en); assert.are.equal(0, run)
    if perf.capabilities().read_lost then assert.are.equal(0, lost) end
    assert(ev:enable())
    v, en, run = ev:read()
    assert.is_true(math.type(v) == "integer" and v > 0)
    assert.is_true(en > 0 and run > 0)
  end)

  it("gives nil times when read_format has none", function()
    local ev <close> = assert(perf.open { type = "software", config = 1, read_format = 0 })
    local v, en, run, lost = ev:read()
    assert.are.equal(0, v)
    assert.is_nil(en); assert.is_nil(run); assert.is_nil(lost)
    assert.are.same({ 0, 1.0 }, { ev:scaled() })
  end)

  it("scaled() is the value itself when the event ran all the time", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    assert.are.same({ 0, 0.0 }, { ev:scaled() })   -- never ran
    assert(ev:enable())
    for _ = 1, 1e5 do end
    assert(ev:disable())
    local est, frac = ev:scaled()
    assert.are.equal((ev:read()), est)
    assert.are.equal(1.0, frac)
  end)

  it("reads an event of another process (pid target)", function()
    local child = io.popen("sh -c 'echo $$; exec sleep 0.3'")
    local pid = math.tointeger(tonumber(child:read("l")))
    local ev <close> = assert(perf.open({ type = "software", config = 1, disabled = false,
      exclude_kernel = true }, { pid = pid }))
    child:close()
    local _, enabled = ev:read()
    assert.is_true(enabled > 0)
  end)
end)

describe("enable_all / disable_all", function()
  it("switch every event this thread opened", function()
    local a <close> = tracepoint("syscalls", "sys_enter_openat")
    local b <close> = tracepoint("syscalls", "sys_enter_close")
    assert.is_true(perf.enable_all())
    for _ = 1, 4 do assert(io.open("/dev/null")):close() end
    assert.is_true(perf.disable_all())
    for _ = 1, 4 do assert(io.open("/dev/null")):close() end
    assert.are.equal(4, (a:read()))
    assert.are.equal(4, (b:read()))
  end)
end)

describe("target flags", function()
  it("fd_no_group: an event given a group but no member of it opens disabled", function()
    local lead <close> = tracepoint("syscalls", "sys_enter_openat")
    for _, flags in ipairs { { "fd_no_group" }, perf.core.PERF_FLAG_FD_NO_GROUP } do
      local ev <close> = assert(perf.open("syscalls:sys_enter_openat",
        { group = lead, flags = flags }))
      assert(io.open("/dev/null")):close()
      assert.are.equal(0, (ev:read()))
      assert.is_true(ev:enable())
      assert(io.open("/dev/null")):close()
      assert.is_true(ev:disable())
      assert.are.equal(1, (ev:read()))
      assert.are.equal(0, (lead:read()))
    end
  end)

  it("a member of a group opens enabled and counts once the leader is", function()
    local lead <close> = tracepoint("syscalls", "sys_enter_openat")
    local ev <close> = assert(perf.open("syscalls:sys_enter_openat", { group = lead }))
    assert(io.open("/dev/null")):close()
    assert.is_true(lead:enable())
    assert(io.open("/dev/null")):close()
    assert.is_true(lead:disable())
    assert.are.equal(1, (ev:read()))
  end)
end)

describe("type and config by name", function()
  it("resolve software and tracepoint names, and count", function()
    local clock <close> = assert(perf.open { type = "software", config = "task-clock" })
    assert.are.same({ 1, 1 }, { clock:attr().type, clock:attr().config })
    local ev <close> = assert(perf.open { type = "tracepoint", config = "syscalls:sys_enter_openat" })
    assert.are.equal(H.tracepoint_id("syscalls", "sys_enter_openat"), ev:attr().config)
    assert(ev:enable())
    for _ = 1, 9 do assert(io.open("/dev/null")):close() end
    assert(ev:disable())
    assert.are.equal(9, (ev:read()))
  end)

  it("compose hardware-cache configs and name raw and PMU events", function()
    local attr = perf.attr { type = "hw_cache", config = "L1-dcache-load-misses" }
    assert.are.same({ 3, 0x10000 }, { attr.type, attr.config })
    attr = perf.attr { type = "hardware", config = "instructions" }
    assert.are.same({ 0, 1 }, { attr.type, attr.config })
    attr = perf.attr "r01c2"
    assert.are.same({ 4, 0x1c2 }, { attr.type, attr.config })
    local tsc <close> = assert(perf.open { type = "msr", config = "tsc" })
    assert.are.equal(0, tsc:attr().config)
    assert(tsc:enable())
    assert.is_true((tsc:read()) > 0)
  end)

  it("take a perf-syntax string, alone or refined by attr fields", function()
    local ev <close> = assert(perf.open "syscalls:sys_enter_close")
    assert.are.equal("syscalls:sys_enter_close", ev:name())
    local s <close> = assert(perf.open { "cpu-clock", sample_period = 100000,
      sample_type = { "ip", "tid", "time" } })
    local a = s:attr()
    assert.are.same({ 1, 0, 100000, 7 }, { a.type, a.config, a.sample_period, a.sample_type })
    assert.are.equal("cpu-clock", s:name())
    local u <close> = assert(perf.open "page-faults:u")
    assert.is_true(u:attr().exclude_kernel)
  end)
end)

describe("hardware events", function()
  -- A loop of a known number of iterations retires at least that many
  -- instructions and takes at least as many cycles as instructions / 8.
  local function loop(n) local x = 0 for i = 1, n do x = x + i end return x end

  it("count the cycles and instructions of a loop #hardware", function()
    if H.needs_pmu(pending) then return end
    local g <close> = assert(perf.group { "cycles:u", "instructions:u" })
    assert(g:enable())
    loop(1000000)
    assert(g:disable())
    local t = g:read()
    assert.is_true(t["instructions:u"] >= 1000000, "instructions: " .. t["instructions:u"])
    assert.is_true(t["cycles:u"] >= t["instructions:u"] // 8, "cycles: " .. t["cycles:u"])
  end)

  it("sample cycles with the highest precision the PMU takes #hardware", function()
    if H.needs_pmu(pending) then return end
    local a = perf.parse "cycles:P"
    local ev <close> = assert(perf.open { "cycles:P", sample_period = 100000 })
    assert.are.equal(a.precise_ip or 0, ev:attr().precise_ip or 0)
    local rb = assert(ev:mmap(8))
    assert(ev:enable())
    loop(2000000)
    assert(ev:disable())
    local n = 0
    for _ in rb:samples() do n = n + 1 end
    assert.is_true(n > 0, "no samples")
  end)
end)
