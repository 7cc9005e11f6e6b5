-- perf.group: members read together by id, exact tracepoint counts, reset,
-- joining from outside, leaders closed or collected first, and the fallback
-- where a group is refused. (Reading a group into a table, and scaling:
-- group_read_spec.lua.)
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")
local CLOSE = H.tracepoint_id("syscalls", "sys_enter_close")
local EINVAL = 22

local function openat(name) return { type = "tracepoint", config = OPENAT, name = name or "openat" } end
local function close_tp(name) return { type = "tracepoint", config = CLOSE, name = name or "close" } end
local function sw(config, name) return { type = "software", config = config, name = name } end
local TASK_CLOCK, PAGE_FAULTS = perf.core.PERF_COUNT_SW_TASK_CLOCK, perf.core.PERF_COUNT_SW_PAGE_FAULTS

-- Open descriptors, once garbage (such as unclosed handles of other code)
-- is collected. H.fd_count lists them with a child process, which can see
-- the write end of its own pipe before popen closes it: the least of three
-- counts leaves that out.
local function fds()
  collectgarbage()
  collectgarbage()
  return math.min(H.fd_count(), H.fd_count(), H.fd_count())
end

local opens = H.opens

describe("perf.group", function()
  it("makes one member per tracepoint a pattern matches, each named", function()
    local g <close> = assert(perf.group { "syscalls:sys_enter_open*", "page-faults" })
    local names = {}
    for i = 1, #g do names[i] = g[i]:name() end
    assert.is_true(#g >= 4)
    assert.are.equal("page-faults", names[#g])
    local at
    for i, n in ipairs(names) do
      assert.truthy(i == #g or n:match("^syscalls:sys_enter_open"), n)
      if n == "syscalls:sys_enter_openat" then at = i end
    end
    assert(g:enable())
    opens(5)
    assert(g:disable())
    local t = assert(g:read())
    assert.are.equal(5, t[at])
    assert.are.equal(5, t["syscalls:sys_enter_openat"])
    local h <close> = assert(perf.group "{syscalls:sys_enter_close,syscalls:sys_enter_open*}")
    assert.are.equal(#g, #h)
    assert.are.equal("syscalls:sys_enter_close", h[1]:name())
  end)

  it("counts each member exactly and reads them by index and by name", function()
    local g <close> = assert(perf.group { openat(), close_tp(), sw(PAGE_FAULTS, "faults") })
    assert.are.equal(3, #g)
    assert(g:enable())
    opens(7)
    assert(g:disable())
    local t = assert(g:read())
    assert.are.equal(7, t[1])
    assert.are.equal(7, t[2])
    assert.are.equal(7, t.openat)
    assert.are.equal(7, t.close)
    assert.are.equal(t[3], t.faults)
    assert.is_true(t.time_enabled > 0)
    assert.are.equal(t.time_enabled, t.time_running)
  end)

  it("accumulates over several enables, also across PMUs", function()
    -- task-clock is a PMU of its own; the tracepoint member is on another
    local g <close> = assert(perf.group { sw(TASK_CLOCK, "clock"), openat() })
    for _ = 1, 3 do
      assert(g:enable())
      opens(5)
      assert(g:disable())
    end
    opens(4)   -- disabled: not counted
    local t = assert(g:read())
    assert.are.equal(15, t.openat)
    assert.is_true(t.clock > 0)
  end)

  it("re-enables members that perf.disable_all switched off", function()
    -- Enabling a member of another PMU while its leader counts would leave
    -- it idle until the next context switch; g:enable avoids that.
    local g <close> = assert(perf.group { sw(TASK_CLOCK, "clock"), openat() })
    assert(g:enable())
    opens(5)
    assert(perf.disable_all())
    opens(3)   -- everything is off
    assert(g:enable())
    opens(6)
    assert(g:disable())
    assert.are.equal(11, g:read().openat)
  end)

  it("reset zeroes every member", function()
    local g <close> = assert(perf.group { openat(), close_tp() })
    assert(g:enable())
    opens(4)
    assert.is_true(g:reset())
    opens(2)
    assert(g:disable())
    local t = g:read()
    assert.are.equal(2, t.openat)
    assert.are.equal(2, t.close)
  end)

  it("gives its members with g[i]; each reads its own value", function()
    local g <close> = assert(perf.group { openat(), close_tp(), sw(TASK_CLOCK, "clock") })
    assert.is_true(perf.is_event(g[1]))
    assert.are.equal("close", g[2]:name())
    assert.is_nil(g[4])
    assert.is_nil(g[0])
    assert(g:enable())
    opens(9)
    assert(g:disable())
    local v, en, run = g[2]:read()
    assert.are.equal(9, v)
    assert.are.equal(en, run)
    assert.are.equal(9, (g[1]:read()))
  end)

  it("counts a member that joined with target.group under the leader", function()
    local g <close> = assert(perf.group { openat(), sw(PAGE_FAULTS, "faults") })
    local extra <close> = assert(perf.open(close_tp("joined"), { group = g }))
    assert(g:enable())
    opens(5)
    assert(g:disable())
    assert.are.equal(5, (extra:read()))           -- found by its id in the group read
    local t = g:read()
    assert.are.equal(5, t.openat)
    assert.is_nil(t[3])
    assert.is_nil(t.joined)
  end)

  it("keeps its leader alive when only a member is referenced", function()
    local before = fds()
    local member
    do
      local g = assert(perf.group { openat(), close_tp() })
      assert(g:enable())
      member = g[2]
    end
    collectgarbage()
    collectgarbage()
    opens(3)
    assert.are.equal(3, (member:read()))         -- still under its live leader
    assert.are.equal(before + 2, fds())
    member = nil -- luacheck: ignore 311 -- drops the last reference
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, fds())
  end)

  it("reads members on their own once the leader was closed", function()
    local g <close> = assert(perf.group { openat(), close_tp(), openat("openat2") })
    assert(g:enable())
    opens(3)
    assert(g:disable())
    assert(g[1]:close())
    -- the kernel made the members single events, enabled: they count from
    -- the task's next context switch
    os.execute("sleep 0.01")
    opens(4)
    local t = assert(g:read())
    assert.is_nil(t[1])
    assert.is_nil(t.openat)
    assert.are.equal(7, t.close)
    assert.are.equal(7, t.openat2)
    assert(g:disable())
    opens(2)
    assert.are.equal(7, g:read().close)
    assert.matches("disabled", tostring(g))
  end)

  it("closes every member, idempotently, also with <close>", function()
    local before = fds()
    local kept
    do
      local g <close> = assert(perf.group { openat(), close_tp() })
      kept = g
      assert.are.equal(before + 2, fds())
    end
    assert.are.equal(before, fds())
    assert.is_true(kept:close())
    assert.matches("closed", tostring(kept[1]))
    for _, m in ipairs { "read", "scaled", "enable", "disable", "reset", "notes" } do
      assert.has_error(function() kept[m](kept) end, "attempt to use a closed perf group")
    end
    for m, f in pairs(getmetatable(kept).__index) do     -- and every other method
      if m ~= "close" and type(f) == "function" then
        assert.has_error(function() f(kept) end, "attempt to use a closed perf group")
      end
    end
    assert.are.equal(2, #kept)
    assert.are.equal("perf.group (2 members, closed)", tostring(kept))
  end)

  it("has a tostring with its members and values", function()
    local g <close> = assert(perf.group { openat(), close_tp() })
    assert(g:enable())
    opens(2)
    assert(g:disable())
    assert.are.equal('perf.group (2 members, disabled) {"openat" = 2, "close" = 2}', tostring(g))
    assert.are.equal("perf.group", getmetatable(g).__name)
    local one <close> = assert(perf.group { openat() })
    assert.are.equal('perf.group (1 member, disabled) {"openat" = 0}', tostring(one))
    assert(one:close())
    assert.are.equal("perf.group (1 member, closed)", tostring(one))
    assert.is_true(perf.core.is_group(g))
    assert.is_false(perf.core.is_group(g[1]))
  end)

  it("collects dropped groups without an fd leak", function()
    collectgarbage()
    local before = fds()
    for _ = 1, 500 do perf.group { openat(), close_tp() } end
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, fds())
  end)

  it("returns nil, message, errno when the kernel refuses a member, closing the rest", function()
    local before = fds()
    local g, msg, errno = perf.group { openat(), { type = "hardware", config = 0, name = "cycles" } }
    assert.is_nil(g)
    assert.are.equal("string", type(msg))
    assert.matches('perf.open "cycles"', msg)
    assert.are.equal("number", math.type(errno) and "number")
    assert.is_true(errno > 0)
    assert.are.equal(before, fds())
  end)

  it("raises on misuse", function()
    assert.has_error(function() perf.group {} end, "perf.group: the list of events is empty")
    assert.has_error(function() perf.group(42) end, "perf.group: a list of events expected, got number")
    assert.has_error(function() perf.group { type = "software", config = 1 } end)
    assert.has_error(function() perf.group({ openat() }, { group = true }) end)
    assert.has_error(function() perf.group({ openat() }, { pdi = 0 }) end,
      "perf.group: unknown target field 'pdi' (did you mean 'pid'?); fields: pid, cpu, cgroup, flags")
    local g <close> = assert(perf.group { openat() })
    assert.has_error(function() g:read(5) end)
    assert.has_error(function() g.read(io.stdout) end)
    local a <close> = assert(perf.open(openat()))
    local b <close> = assert(perf.open(openat()))
    assert.has_error(function() perf.core.group { a, b } end)
  end)

  it("reports the real error position for misuse", function()
    local ok, err = pcall(perf.group, { { type = "software", confgi = 1 } })
    assert.is_false(ok)
    assert.matches("confgi", err)
    assert.not_matches("group%.lua", err)
  end)
end)

describe("perf.group with inherit", function()
  it("counts child tasks in one group on this kernel", function()
    local g <close> = assert(perf.group { { type = "tracepoint", config = OPENAT, name = "openat", inherit = true },
      { type = "tracepoint", config = CLOSE, name = "close", inherit = true } })
    assert.is_false(g:separate())
    assert.are.same({}, g:notes())
    assert(g:enable())
    opens(2)
    os.execute("cat /dev/null")           -- the shell and cat open files too
    assert(g:disable())
    assert.is_true(g:read().openat > 2)
  end)

  it("falls back to separate events where the kernel refuses the group, and says so", function()
    local core = perf.core
    local real = core.open
    core.open = function(attr, target, name)       -- an older kernel's answer
      local rf = attr.read_format
      if attr.inherit and math.type(rf) == "integer" and rf & 8 ~= 0 then
        return nil, "perf.open \"" .. tostring(name) .. "\": Invalid argument (EINVAL)", EINVAL
      end
      return real(attr, target, name)
    end
    local ok, g = pcall(perf.group, { { type = "tracepoint", config = OPENAT, name = "openat", inherit = true },
      { type = "tracepoint", config = CLOSE, name = "close", inherit = true } })
    core.open = real
    assert.is_true(ok)
    assert.is_true(perf.core.is_group(g))
    assert.is_true(g:separate())
    assert.matches("counted separately", g:notes()[1])
    assert.matches("read one by one", tostring(g))
    assert(g:enable())
    opens(4)
    assert(g:disable())
    opens(1)
    local t = g:read()
    assert.are.equal(4, t.openat)
    assert.are.equal(4, t.close)
    assert(g:reset())
    assert.are.equal(0, g:read().close)
    assert.is_true(g:close())
  end)
end)

describe("perf.group with event strings", function()
  it("takes a list of perf event strings, named by them", function()
    local g <close> = assert(perf.group { "syscalls:sys_enter_openat", "syscalls:sys_enter_close", "task-clock" })
    assert(g:enable())
    opens(4)
    assert(g:disable())
    local t = g:read()
    assert.are.equal(4, t["syscalls:sys_enter_openat"])
    assert.are.equal(4, t["syscalls:sys_enter_close"])
    assert.is_true(t["task-clock"] > 0)
  end)

  it("takes a {a,b} group string", function()
    local g <close> = assert(perf.group "{syscalls:sys_enter_openat,syscalls:sys_enter_close,page-faults}")
    assert.are.equal(3, #g)
    assert.are.equal("syscalls:sys_enter_close", g[2]:name())
    assert(g:enable())
    opens(3)
    assert(g:disable())
    assert.are.equal(3, g:read()["syscalls:sys_enter_close"])
  end)

  it("takes a single event string as a group of one", function()
    local g <close> = assert(perf.group "syscalls:sys_enter_openat")
    assert.are.equal(1, #g)
    assert(g:enable())
    opens(2)
    assert(g:disable())
    assert.are.equal(2, g:read()[1])
  end)

  it("raises at the caller for a malformed string", function()
    local ok, err = pcall(perf.group, { "syscalls:sys_enter_openat", "task-clock:q" })
    assert.is_false(ok)
    assert.matches("task%-clock:q", err)
    assert.has_error(function() perf.group "{task-clock" end)
  end)
end)

describe("perf.group unprivileged", function()
  it("counts user space only where kernel-mode counting is refused, and says so (child as nobody)", function()
    local out = H.run_without_kernel_counting([[
      local perf = require "perf"
      local g = assert(perf.group { "task-clock", "page-faults" })
      assert(g:enable())
      local s = string.rep("x", 1 << 20)
      assert(g:disable())
      local t = g:read()
      print(t["task-clock"] > 0, t["page-faults"] > 0, g[1]:attr().exclude_kernel, #g:notes())
      print(g:notes()[2])
    ]], pending)
    if not out then return end
    assert.are.equal("true\ttrue\ttrue\t2\npage-faults: kernel-mode counting is not permitted here "
      .. "(perf_event_paranoid); counting user space only\n", out)
  end)
end)

describe("perf.group with event strings", function()
  local caps = perf.capabilities()

  it("opens {a,b}:mods and counts each member", function()
    local g <close> = assert(perf.group "{task-clock,page-faults,cs}:u")
    assert.equal(3, #g)
    assert.same({ "task-clock", "page-faults", "cs" }, { g[1]:name(), g[2]:name(), g[3]:name() })
    for i = 1, 3 do
      local a = g[i]:attr()
      assert.same({ true, true }, { a.exclude_kernel, a.exclude_hv })
    end
  end)

  it("counts tracepoints exactly in a group", function()
    if not caps.tracefs then return pending("no tracefs") end
    local g <close> = assert(perf.group "{syscalls:sys_enter_openat,syscalls:sys_enter_close}")
    assert(g:enable())
    for _ = 1, 25 do io.open("/proc/self/stat"):close() end
    assert(g:disable())
    local t = g:read()
    assert.same({ 25, 25 }, { t[1], t[2] })
    assert.equal(25, t["syscalls:sys_enter_close"])
  end)

  it("takes a list mixing strings, tables and breakpoints", function()
    if not caps.breakpoints then return pending("no breakpoints") end
    local s = "grouped " .. tostring({})
    local g <close> = assert(perf.group {
      "task-clock",
      ("mem:0x%x/1:rw"):format(perf.addressof(s)),
      { "mem:0x1000:x", bp_addr = perf.symbol("getenv"), name = "getenv" },
    })
    assert(g:enable())
    for _ = 1, 8 do local _ = s:byte(1) end
    for _ = 1, 3 do os.getenv("X") end
    assert(g:disable())
    local t = g:read()
    assert.same({ 8, 3 }, { t[2], t.getenv })
  end)

  it("names a group as given and pins only its leader", function()
    local g <close> = assert(perf.group "mine{cs,faults}:D")
    assert.same({ true }, { g[1]:attr().pinned, g[2]:attr().pinned })
  end)

  it("raises on malformed group strings, with the caret", function()
    local ok, err = pcall(perf.group, "{cs,faults")
    assert.is_false(ok)
    assert.truthy(err:find("unterminated group, expected '}'", 1, true), err)
    assert.truthy(err:find("\n    {cs,faults\n              ^", 1, true), err)
  end)
end)
