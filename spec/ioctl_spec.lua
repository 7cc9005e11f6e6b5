-- Every ioctl, exercised for its effect, and for its error paths. BPF
-- programs come from spec/fixtures/bpf_prog.c, the smallest loader.
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

local function openat(extra, target)
  local attr = { type = "tracepoint", config = OPENAT }
  for k, v in pairs(extra or {}) do attr[k] = v end
  return assert(perf.open(attr, target))
end

local function opens(n, mode)
  for _ = 1, n do assert(io.open(mode and os.tmpname() or "/dev/null", mode)):close() end
end

local shape = H.fails

describe("enable, disable, reset", function()
  it("reset zeroes the count and keeps counting", function()
    local ev <close> = openat()
    assert(ev:enable())
    opens(6)
    assert.are.equal(6, (ev:read()))
    assert.is_true(ev:reset())
    assert.are.equal(0, (ev:read()))
    opens(2)
    assert.are.equal(2, (ev:read()))
  end)

  it("act on a whole group with the group flag", function()
    local leader <close> = openat()
    local member <close> = assert(perf.open({ type = "tracepoint",
      config = H.tracepoint_id("syscalls", "sys_enter_close"), disabled = true },
      { group = leader }))
    assert.is_true(leader:enable(true))
    opens(3)
    assert.is_true(leader:disable { "group" })
    assert.are.same({ 3, 3 }, { (leader:read()), (member:read()) })
    assert.is_true(leader:reset(1))         -- PERF_IOC_FLAG_GROUP as an integer
    assert.are.same({ 0, 0 }, { (leader:read()), (member:read()) })
    assert.is_true(leader:enable())         -- without the flag: only the leader
    opens(2)
    assert(leader:disable())
    assert.are.same({ 2, 0 }, { (leader:read()), (member:read()) })
  end)

  it("report their state in tostring", function()
    local ev <close> = openat()
    assert.matches('^perf.event "syscalls:sys_enter_openat" %(fd %d+, disabled, 0%)$', tostring(ev))
    ev:enable()
    assert.matches("enabled", tostring(ev))
  end)
end)

describe("refresh and period", function()
  it("refresh(n) counts n overflows of a sampling event, then disables it", function()
    local ev <close> = openat { sample_period = 1 }
    assert.is_true(ev:refresh(3))
    opens(10)
    assert.are.equal(3, (ev:read()))
  end)

  it("period(n) changes the sample period", function()
    local ev <close> = openat { sample_period = 1000 }
    assert.is_true(ev:period(5))
    assert.are.equal(5, ev:attr().sample_period)
    assert.is_true(ev:refresh(2))            -- two overflows of 5: stops at 10
    opens(20)
    assert.are.equal(10, (ev:read()))
  end)

  it("refuse counting events", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    local msg, errno = shape(ev:refresh(1))
    assert.are.equal(22, errno)
    assert.matches('^ev:refresh "task%-clock": Invalid argument %(EINVAL%); refresh needs a sampling event', msg)
    msg = shape(ev:period(0))
    assert.matches("EINVAL", msg)
  end)
end)

describe("set_filter", function()
  it("narrows a tracepoint to the matching hits", function()
    local ev <close> = openat()
    assert.is_true(ev:set_filter("mode == 0666"))   -- opens that may create
    assert(ev:enable())
    opens(3)                                       -- io.open(path) passes mode 0
    local made = {}
    for i = 1, 4 do made[i] = os.tmpname(); assert(io.open(made[i], "w")):close() end
    assert(ev:disable())
    for _, f in ipairs(made) do os.remove(f) end
    assert.are.equal(4, (ev:read()))
  end)

  it("returns the kernel's refusal of bad filter text", function()
    local ev <close> = openat()
    local msg, errno = shape(ev:set_filter("no_such_field == 1"))
    assert.are.equal(22, errno)
    assert.matches("EINVAL%); the kernel rejected the filter text", msg)
    local ev2 <close> = openat()
    assert(ev2:set_filter("mode == 0"))
    msg = shape(ev2:set_filter("mode == 1"))
    assert.matches("EEXIST%); this event already has a filter", msg)
  end)

  it("names the fields of the format, dynamic arrays too", function()
    -- sched_process_exec's filename is "__data_loc char[] filename"
    local ev <close> = assert(perf.open { type = "tracepoint",
      config = H.tracepoint_id("sched", "sched_process_exec") })
    local msg = shape(ev:set_filter("nosuch == 1"))
    assert.matches("; sched:sched_process_exec has no field 'nosuch' %(its fields: " ..
      "filename, pid, old_pid%)$", msg)
  end)

  it("is refused on a software event", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    local msg = shape(ev:set_filter("x == 1"))
    assert.matches("filters apply to tracepoints", msg)
  end)
end)

describe("id", function()
  it("gives the kernel's id, distinct per event and the one read_format carries", function()
    local a <close> = openat()
    local b <close> = openat()
    local ia, ib = a:id(), b:id()
    assert.is_true(math.type(ia) == "integer" and ia > 0)
    assert.are_not.equal(ia, ib)
    -- a group read of a lone event carries its id (read_format id)
    local g <close> = assert(perf.open { type = "tracepoint", config = OPENAT,
      read_format = { "group", "id" } })
    assert.are.equal(0, (g:read()))
  end)
end)

describe("modify_attributes", function()
  it("moves a breakpoint to another address", function()
    -- luaL_Stream { FILE *f; lua_CFunction closef; }: close writes closef once
    local fa, fb = assert(io.open("/dev/null")), assert(io.open("/dev/null"))
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "w",
      bp_addr = perf.addressof(fa) + 8, bp_len = 8 })
    assert(ev:enable())
    assert.is_true(ev:modify_attributes { bp_addr = perf.addressof(fb) + 8 })
    assert.are.equal(perf.addressof(fb) + 8, ev:attr().bp_addr)
    fa:close()
    assert.are.equal(0, (ev:read()))
    fb:close()
    assert.are.equal(1, (ev:read()))
  end)

  it("renames a moved breakpoint after its new place, and counts only there", function()
    local fa, fb = assert(io.open("/dev/null")), assert(io.open("/dev/null"))
    local old, new = perf.addressof(fa) + 8, perf.addressof(fb) + 8
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "w",
      bp_addr = old, bp_len = 8 })
    assert(ev:enable())
    assert.is_true(ev:modify_attributes { bp_addr = new })
    local name = ("mem:0x%x/8:w"):format(new)
    assert.are.equal(name, ev:name())
    assert.matches('"' .. name .. '"', tostring(ev), 1, true)
    fa:close()                                   -- a write to the old place
    assert.are.equal(0, (ev:read()))
    fb:close()                                   -- a write to the new place
    assert.are.equal(1, (ev:read()))
  end)

  it("says which of bp_addr, bp_len and bp_type a breakpoint cannot take", function()
    local s = string.rep("w", 32)
    local at = perf.addressof(s) + 8 - perf.addressof(s) % 8     -- 8-aligned
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "w",
      bp_addr = at, bp_len = 8 })
    assert.has_error(function() ev:modify_attributes { bp_addr = at + 4 } end,
      ("ev:modify_attributes: address 0x%x is not aligned to bp_len 8; use bp_len 1 " ..
       "or the aligned address 0x%x"):format(at + 4, at))
    assert.has_error(function() ev:modify_attributes { bp_type = "x", bp_len = 4 } end,
      ("ev:modify_attributes: execute breakpoints need bp_len = %d (sizeof(long)), not 4")
        :format(string.packsize("l")))
    assert.has_error(function() ev:modify_attributes { bp_len = 3 } end,
      "ev:modify_attributes: bp_len must be 1, 2, 4 or 8, not 3")
    -- nothing changed: the breakpoint is where it was
    assert.are.equal(at, ev:attr().bp_addr)
    assert.are.equal(("mem:0x%x/8:w"):format(at), ev:name())
    -- a breakpoint keeps its type: the hint says so, not "only breakpoints"
    local msg, errno = shape(ev:modify_attributes { type = "software" })
    assert.are.equal(22, errno)
    assert.matches("its type cannot change", msg, 1, true)
  end)

  it("takes the names perf.open takes", function()
    local s = string.rep("w", 16)
    local ev <close> = assert(perf.open { type = "breakpoint", bp_type = "rw",
      bp_addr = perf.addressof(s), bp_len = 1 })
    assert.is_true(ev:modify_attributes { type = "breakpoint", bp_type = "w",
      bp_addr = perf.addressof(s) + 1 })
    assert.are.equal(2, ev:attr().bp_type)
    assert.are.equal(perf.addressof(s) + 1, ev:attr().bp_addr)
    -- a config name is resolved, and then the kernel answers
    local sw <close> = assert(perf.open "task-clock")
    local msg, errno = shape(sw:modify_attributes { config = "cpu-clock" })
    assert.are.equal(22, errno)
    assert.matches("only breakpoint events can be modified", msg)
    shape(sw:modify_attributes { type = "software", config = "page-faults" })
    assert.has_error(function() sw:modify_attributes { config = "cpu-clok" } end,
      "ev:modify_attributes: no software event 'cpu-clok' (did you mean 'cpu-clock'?)")
    -- a breakpoint's type has no config names: the name is an event's, and
    -- the kernel refuses to change the type
    msg, errno = shape(ev:modify_attributes { config = "cpu-clock" })
    assert.are.equal(22, errno)
    assert.matches("only breakpoint events can be modified", msg)
    assert.are.equal(5, ev:attr().type)
    assert.has_error(function() ev:modify_attributes { config = "cpu-clok" } end)
  end)

  it("is refused for other events", function()
    local ev <close> = assert(perf.open { type = "software", config = 1 })
    local msg = shape(ev:modify_attributes { sample_period = 3 })
    assert.matches("only breakpoint events can be modified", msg)
    assert.has_error(function() ev:modify_attributes { bogus = 1 } end,
      "unknown attr field 'bogus'")
  end)
end)

describe("set_output and pause_output", function()
  it("set_output(nil) detaches, other cpus and itself are refused", function()
    local a <close> = assert(perf.open({ type = "software", config = 1 }, { cpu = 0 }))
    local b <close> = assert(perf.open({ type = "software", config = 1 }, { cpu = 1 }))
    assert.is_true(a:set_output(nil))
    local msg = shape(a:set_output(b))
    assert.matches("same cpu", msg)
    msg = shape(a:set_output(a))
    assert.matches("cannot send its records to itself", msg)
  end)

  it("pause_output needs a ring buffer", function()
    local ev <close> = openat()
    local msg, errno = shape(ev:pause_output(true))
    assert.are.equal(22, errno)
    assert.matches("needs a ring buffer", msg)
  end)
end)

describe("BPF ioctls", function()
  local bpf, dir = H.load_fixture("bpf_prog")
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("set_bpf attaches a program that decides which hits count; query_bpf lists it", function()
    local drop = assert(bpf.load(0))
    local keep = assert(bpf.load(1))
    -- a tracepoint's programs belong to the tracepoint: every event on it
    -- lists them and counts only the hits they all keep
    local a = openat()
    local plain <close> = openat()
    assert.is_true(a:set_bpf(drop))
    assert.are.same({ bpf.id(drop) }, a:query_bpf())
    assert.are.same({ bpf.id(drop) }, plain:query_bpf())
    assert(a:enable())
    assert(plain:enable())
    opens(5)
    assert.are.same({ 0, 0 }, { (a:read()), (plain:read()) })
    a:close()                                   -- its program goes with it
    assert.are.same({}, plain:query_bpf())
    opens(3)
    assert.are.equal(3, (plain:read()))
    local b <close> = openat()
    assert.is_true(b:set_bpf(keep))
    assert.are.same({ bpf.id(keep) }, plain:query_bpf())
    assert(b:enable())
    opens(4)
    assert.are.same({ 4, 7 }, { (b:read()), (plain:read()) })
    local msg, errno = shape(b:set_bpf(drop))   -- one program per event
    assert.are.equal(17, errno)
    assert.matches('ev:set_bpf "syscalls:sys_enter_openat": .*%(EEXIST%); the event has a program already', msg)
    bpf.close(drop)
    bpf.close(keep)
  end)

  it("query_bpf lists no programs on a fresh tracepoint", function()
    local ev <close> = openat()
    assert.are.same({}, ev:query_bpf())
  end)

  it("query_bpf is refused on a software event, set_bpf without a program", function()
    local sw <close> = assert(perf.open { type = "software", config = 1 })
    local msg = shape(sw:query_bpf())
    assert.matches("only tracepoint, kprobe and uprobe events", msg)
    local ev <close> = openat()
    local f = assert(io.open("/dev/null"))
    msg = shape(ev:set_bpf(0))
    assert.matches("must be a loaded BPF program", msg)
    f:close()
    assert.has_error(function() ev:set_bpf(-1) end)
  end)
end)

describe("the same methods with or without the front", function()
  -- An event opened through perf.core alone, in an interpreter that never
  -- loads "perf", explains a refused filter and takes names as one opened
  -- through perf does; loading perf afterwards changes no method.
  local code = ([[
    local core = require "perf.core"
    local before = {}
    for k, f in pairs(core.event_methods) do before[k] = f end
    local ev = assert(core.open { type = "tracepoint", config = %d })
    print((select(2, ev:set_filter("flagz == 0 && mode > 1"))))
    local s = string.rep("w", 16)
    local bp = assert(core.open { type = "breakpoint", bp_type = "rw",
      bp_addr = core.addressof(s), bp_len = 1 })
    assert(bp:modify_attributes { type = "breakpoint", bp_type = "w",
      bp_addr = core.addressof(s) + 1 })
    print(bp:attr().bp_type, bp:name() == ("mem:0x%%x/1:w"):format(core.addressof(s) + 1))
    local sw = assert(core.open { type = "software", config = 1 })
    print(select(2, pcall(sw.modify_attributes, sw, { config = "cpu-clok" })))
    print((select(2, sw:modify_attributes { config = "cpu-clock" })))
    print(package.loaded.perf == nil and "front not loaded")
    require "perf"
    local same = true
    for k, f in pairs(core.event_methods) do same = same and before[k] == f end
    print(same and "methods unchanged by the front")
  ]]):format(OPENAT)

  it("explain a refused filter and resolve names in C", function()
    local out = H.run_lua(code)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.matches("EINVAL%); the kernel rejected the filter text: compare field names " ..
      "and operators with the tracepoint's format file; syscalls:sys_enter_openat has " ..
      "no field 'flagz' %(its fields: __syscall_nr, dfd, filename, flags, mode%)$", lines[1])
    assert.are.equal("2\ttrue", lines[2])
    assert.are.equal("ev:modify_attributes: no software event 'cpu-clok' " ..
      "(did you mean 'cpu-clock'?)", lines[3])
    assert.matches("only breakpoint events can be modified", lines[4], 1, true)
    assert.are.equal("front not loaded", lines[5])
    assert.are.equal("methods unchanged by the front", lines[6])
    assert.are.equal(6, #lines, out)
    -- and through perf, the same answers
    local ev <close> = openat()
    local msg = shape(ev:set_filter("flagz == 0 && mode > 1"))
    assert.are.equal(lines[1]:gsub('"tracepoint/config=0x%x+/"', ""), (msg:gsub('"[^"]*"', "")))
  end)
end)
