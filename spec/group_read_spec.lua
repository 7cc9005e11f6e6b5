-- csrc/group_read.c: g:read([t]) and g:scaled([t]), every member from
-- one read(2) of the leader, through the reader compiled for the group (up
-- to 64 members) or filled from C (more); perf.scale. Counts are exact
-- (tracepoints) and checked against each member's own read(2).
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")
local CLOSE = H.tracepoint_id("syscalls", "sys_enter_close")

local function openat(name) return { type = "tracepoint", config = OPENAT, name = name or "openat" } end
local function close_tp(name) return { type = "tracepoint", config = CLOSE, name = name or "close" } end
local function sw(config, name) return { type = "software", config = config, name = name } end
local TASK_CLOCK, PAGE_FAULTS = perf.core.PERF_COUNT_SW_TASK_CLOCK, perf.core.PERF_COUNT_SW_PAGE_FAULTS

local opens = H.opens

describe("g:read and g:scaled", function()
  it("fills a given table, allocating nothing in a loop", function()
    local g <close> = assert(perf.group { openat(), close_tp(), sw(TASK_CLOCK, "clock"), sw(PAGE_FAULTS, "faults") })
    assert(g:enable())
    local t = {}
    assert.are.equal(t, g:read(t))        -- the first fill sizes the table
    collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 2000 do g:read(t) end
    local reused = collectgarbage("count") - before
    before = collectgarbage("count")
    for _ = 1, 2000 do g:read() end       -- the measure does see allocation
    local fresh = collectgarbage("count") - before
    collectgarbage("restart")
    assert.are.equal(0, reused)
    assert.is_true(fresh > 100)
    assert(g:disable())
    opens(2)
    assert(g:enable())
    opens(3)
    assert(g:disable())
    g:read(t)
    assert.are.equal(3, t[1])
    assert.are.equal(3, t.openat)
  end)

  it("names the first of several members with the same name", function()
    local g <close> = assert(perf.group { openat("x"), close_tp("x") })
    assert(g:enable())
    assert(io.open("/dev/null")):close()
    assert(io.open("/dev/null")):close()
    io.open("/no/such/file")          -- an openat without a close
    assert(g:disable())
    local t = g:read()
    assert.are.equal(3, t[1])
    assert.are.equal(2, t[2])
    assert.are.equal(3, t.x)
  end)

  it("fills t under names that need quoting in Lua source", function()
    local names = { 'quote"d', "back\\slash", "new\nline", "caf\xc3\xa9", "1", "", "]] --" }
    local specs = {}
    for i, name in ipairs(names) do specs[i] = openat(name) end
    local g <close> = assert(perf.group(specs))
    assert(g:enable())
    opens(3)
    assert(g:disable())
    local t = g:read()
    for i, name in ipairs(names) do
      assert.are.equal(3, t[i])
      assert.are.equal(3, t[name])
    end
    assert.are.equal(#names + 2 + #names, (function() local n = 0 for _ in pairs(t) do n = n + 1 end return n end)())
  end)

  it("gives the times priority over a member named like them", function()
    local g <close> = assert(perf.group { openat("time_enabled"), sw(TASK_CLOCK, "time_running") })
    assert(g:enable())
    opens(2)
    assert(g:disable())
    local t = g:read()
    assert.are.equal(2, t[1])
    assert.is_true(t.time_enabled > 2 and t.time_enabled == t.time_running)
  end)

  it("reads the group it is called on, also through another group's method", function()
    local a <close> = assert(perf.group { openat("a") })
    local b <close> = assert(perf.group { close_tp("b") })
    assert(a:enable())
    assert(b:enable())
    opens(4)
    assert(a:disable())
    assert(b:disable())
    local t = a.read(b, {})
    assert.are.equal(4, t[1])
    assert.are.equal(4, t.b)
    assert.is_nil(t.a)
    assert.are.equal(4, a.scaled(b).b)
  end)

  it("compiles its reader at the first read, and raises at the caller's line either way", function()
    local g <close> = assert(perf.group { openat("x"), close_tp("y") })
    local index = getmetatable(g).__index
    assert.are.equal("C", debug.getinfo(index.read, "S").what)
    local line = debug.getinfo(1, "l").currentline
    local ok, err = pcall(function() local _ = g:read(5) end)
    assert.is_false(ok)
    assert.are.equal(("spec/group_read_spec.lua:%d: bad argument #1 to 'read' (table or nil expected, got number)")
      :format(line + 1), err:match("spec/group_read_spec%.lua:.*"))
    assert.are.equal("C", debug.getinfo(index.read, "S").what)     -- misuse compiles nothing
    local t = g:read()
    assert.are.equal(0, t.x)
    assert.are.equal("Lua", debug.getinfo(index.read, "S").what)
    assert.are.equal("C", debug.getinfo(index.scaled, "S").what)
    line = debug.getinfo(1, "l").currentline
    ok, err = pcall(function() local _ = g:read(5) end)
    assert.is_false(ok)
    assert.are.equal(("spec/group_read_spec.lua:%d: bad argument #1 to 'read' (table or nil expected, got number)")
      :format(line + 1), err:match("spec/group_read_spec%.lua:.*"))
    g:close()
    line = debug.getinfo(1, "l").currentline
    ok, err = pcall(function() local _ = g:read() end)
    assert.is_false(ok)
    assert.are.equal(("spec/group_read_spec.lua:%d: attempt to use a closed perf group"):format(line + 1),
      err:match("spec/group_read_spec%.lua:.*"))
  end)

  it("fills t with ordinary assignments, so a __newindex sees the new keys", function()
    local g <close> = assert(perf.group { openat("x"), close_tp("y") })
    local seen = {}
    local t = setmetatable({}, { __newindex = function(tt, k, v) seen[#seen + 1] = k rawset(tt, k, v) end })
    g:read(t)
    table.sort(seen, function(p, q) return tostring(p) < tostring(q) end)
    assert.are.same({ 1, 2, "time_enabled", "time_running", "x", "y" }, seen)
    g:read(t)
    assert.are.equal(6, #seen)
    -- the same for a group filled from C (more than 64 members)
    local specs = {}
    for i = 1, 65 do specs[i] = openat("m" .. i) end
    local big <close> = assert(perf.group(specs))
    local n = 0
    big:read(setmetatable({}, { __newindex = function(tt, k, v) n = n + 1 rawset(tt, k, v) end }))
    assert.are.equal(65 + 65 + 2, n)
  end)

  for _, n in ipairs { 64, 65, 70 } do
    it(("counts exactly in a group of %d members"):format(n), function()
      local specs = {}
      for i = 1, n do specs[i] = openat("m" .. i) end
      local g <close> = assert(perf.group(specs))
      assert(g:enable())
      opens(5)
      assert(g:disable())
      local t = g:read({})
      local s = g:scaled()
      for i = 1, n do
        assert.are.equal(5, t[i])
        assert.are.equal(5, t["m" .. i])
        assert.are.equal(5, s[i])
      end
      assert.is_nil(t[n + 1])
      assert.is_true(t.time_enabled > 0)
    end)
  end

  it("scaled() equals read() for events that never multiplex", function()
    local g <close> = assert(perf.group { openat(), close_tp() })
    assert(g:enable())
    opens(6)
    assert(g:disable())
    local t = g:scaled()
    assert.are.equal(6, t.openat)
    assert.are.equal(6, t[2])
    assert.are.equal(t.time_enabled, t.time_running)
  end)

  it("scales by the same rule as ev:scaled and perf.core.scale", function()
    -- pinned to CPU 1, events of this task on CPU 0 are enabled but never
    -- run: the one case of scaling software events can reach
    if H.sh("nproc") == "1\n" then return pending("needs two CPUs") end
    local out = H.run_lua([[
      local perf = require "perf"
      local on0 = { pid = 0, cpu = 0 }
      local ev = assert(perf.open("task-clock", on0))
      local g = assert(perf.group({ "task-clock", "page-faults" }, on0))
      assert(ev:enable()); assert(g:enable())
      local x = 0
      for i = 1, 1e6 do x = x + i end
      assert(ev:disable()); assert(g:disable())
      local v, en, run = ev:read()
      local est, frac = ev:scaled()
      local s = g:scaled()
      local t = g:read()
      local c, cf = perf.core.scale(t[1], t.time_enabled, t.time_running)
      print(v, en > 0, run, est, frac, s[1], s[2], t.time_enabled > 0,
            t.time_running, c, cf, perf.core.scale(v, en, run))
    ]], "taskset -c 1")
    assert.are.equal("0\ttrue\t0\t0\t0.0\t0\t0\ttrue\t0\t0\t0.0\t0\t0.0\n", out)
    -- and where the times say it ran longer than enabled: the count itself
    assert.are.same({ 100, 1.0 }, { perf.core.scale(100, 10, 20) })
    assert.are.same({ 150, 2 / 3 }, { perf.core.scale(100, 30, 20) })
  end)
end)

describe("perf.scale", function()
  it("scales a multiplexed count by enabled / running", function()
    assert.are.same({ 200, 0.5 }, { perf.scale(100, 1000, 500) })
    assert.are.same({ 100, 1.0 }, { perf.scale(100, 1000, 1000) })
    assert.are.same({ 0, 0.0 }, { perf.scale(100, 1000, 0) })
    local v, f = perf.scale(7, 3, 1)
    assert.are.equal(21, v)
    assert.is_true(math.abs(f - 1 / 3) < 1e-12)
  end)

  it("does not overflow where value * enabled passes 64 bits", function()
    local v = perf.scale(1 << 60, 3000000000, 1000000000)
    assert.are.equal(3 << 60, v)
    assert.are.equal("integer", math.type(v))
  end)

  it("raises on negative times", function()
    assert.has_error(function() perf.scale(1, -1, 1) end)
    assert.has_error(function() perf.scale(1, 1, -1) end)
  end)
end)

describe("one read of the group against separate reads", function()
  -- a group of n members alternating openat and close, `opens` calls
  local function counted(n, calls)
    local specs = {}
    for i = 1, n do specs[i] = i % 2 == 1 and openat("o" .. i) or close_tp("c" .. i) end
    local g = assert(perf.group(specs))
    assert(g:enable())
    opens(calls)
    io.open("/no/such/file")                      -- one openat more than closes
    assert(g:disable())
    return g
  end

  for _, n in ipairs { 3, 66 } do
    it(("gives each member's own read(2) value, %d members (%s)"):format(n, n <= 64 and "compiled reader" or "filled from C"), function()
      local g <close> = counted(n, 4)
      local t = g:read()
      local s = g:scaled()
      for i = 1, n do
        local v, en, run = g[i]:read()
        assert.equal(i % 2 == 1 and 5 or 4, v)
        assert.equal(v, t[i])
        assert.equal(v, t[g[i]:name()])
        assert.equal(v, s[i])
        assert.equal(en, run)
      end
      -- the leader's times are the group's
      local _, en = g[1]:read()
      assert.is_true(t.time_enabled > 0 and t.time_enabled <= en)
      assert.equal(t.time_enabled, t.time_running)
    end)
  end

  it("reads a group filled from C through a small group's method, and back", function()
    local small <close> = counted(2, 3)
    local big <close> = counted(65, 3)
    local t = small.read(big, {})
    assert.equal(4, t[65])
    assert.equal(4, t.o65)
    assert.equal(3, t[64])
    local u = big.read(small)
    assert.same({ 4, 3 }, { u[1], u[2] })
    assert.is_nil(u[3])
    assert.equal(4, big.scaled(small).o1)
  end)

  it("fills and returns the table given to scaled, as read does", function()
    local g <close> = counted(2, 1)
    local t = {}
    assert.equal(t, g:scaled(t))
    assert.same({ 2, 1 }, { t[1], t[2] })
    assert.equal(t, g:read(t))
  end)

  it("refuses a table argument of another type, for a group of either kind", function()
    local small <close> = counted(2, 0)
    local big <close> = counted(65, 0)
    for _, g in ipairs { small, big } do
      for _, m in ipairs { "read", "scaled" } do
        local ok, err = pcall(g[m], g, "t")
        assert.is_false(ok)
        assert.matches(("bad argument #1 to '%s' %%(table or nil expected, got string%%)"):format(m), err)
      end
    end
  end)
end)
