-- csrc/show.c: how plain result tables print (perf.core.show): the list
-- part in order, then the named fields sorted, nested tables in short,
-- strings cut, an attr's integers named from the kernel's constants.
local perf = require "perf"
local core = perf.core

local function show(t, name) return tostring(core.show(t, name or "T")) end

describe("perf.core.show", function()
  it("returns the table itself, still an ordinary table, with a shared named metatable", function()
    local t = { 1, x = 2 }
    assert.equal(t, core.show(t, "perf.thing"))
    assert.equal("perf.thing", getmetatable(t).__name)
    assert.equal(getmetatable(t), getmetatable(core.show({}, "perf.thing")))
    assert.are_not.equal(getmetatable(t), getmetatable(core.show({}, "perf.other")))
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    assert.equal(2, n)
    -- the names the C core gives its own tables are the same metatables
    local ev <close> = assert(perf.open("task-clock"))
    assert.equal(getmetatable(ev:attr()), getmetatable(core.show({}, "perf.attr")))
  end)

  it("writes the list part in order, then the named fields sorted", function()
    assert.equal('T { 3, 1, 2, a = "x", b = 1, c = true }', show({ 3, 1, 2, c = true, b = 1, a = "x" }))
    assert.equal("T {}", show({}))
    assert.equal("T { 1.5, -7 }", show({ 1.5, -7 }))
  end)

  it("brackets keys that are no identifiers", function()
    -- sorted as bytes: "1x" < "_ok" < "a-b"
    assert.equal('T { ["1x"] = 2, _ok = 3, ["a-b"] = 1 }', show({ ["a-b"] = 1, ["1x"] = 2, _ok = 3 }))
  end)

  it("counts keys it does not write", function()
    assert.equal("T { 1, ... (2 more) }", show({ 1, [1.5] = 2, [true] = 3 }))
    assert.equal("T { ... (1 more) }", show({ [10] = 1 }))        -- past the list part
    local many = {}
    for i = 1, 300 do many[("k%03d"):format(i)] = i end
    local s = show(many)
    local written = select(2, s:gsub("k%d%d%d = ", ""))
    assert.equal(256, written)
    assert.matches(", %.%.%. %(44 more%) }$", s)
  end)

  it("cuts long strings and hides binary ones", function()
    local s48, s49 = ("a"):rep(48), ("b"):rep(49)
    assert.equal(('T { "%s" }'):format(s48), show({ s48 }))
    assert.equal(('T { "%s..." (49 bytes) }'):format(("b"):rep(48)), show({ s49 }))
    assert.equal("T { <3 bytes> }", show({ "a\0b" }))
    assert.equal("T { raw = <5 bytes> }", show({ raw = "\1\2\3\4\255" }))
  end)

  it("writes nested tables in short", function()
    assert.equal("T { {1, 2}, {{...}} }", show({ { 1, 2 }, { { 1 } } }))   -- two levels down: {...}
    assert.equal("T { a = {1 entry}, b = {3 entries}, c = {0 entries} }", show({ a = { x = 1 }, b = { 1, 2, y = 3 }, c = {} }))
    assert.equal("T { {9 entries} }", show({ { 1, 2, 3, 4, 5, 6, 7, 8, 9 } }))
    -- a named table: its name once nested in a nested table, its content at the first level
    assert.equal("T { {perf.record {...}} }", show({ { core.show({ 1 }, "perf.record") } }))
    assert.equal("T { r = {1} }", show({ r = core.show({ 1 }, "perf.record") }))
    assert.equal('T { {"x", 2} }', show({ { "x", 2 } }))
  end)

  it("names an attr's type and bits after their integers, from the kernel's constants", function()
    local st = core.PERF_SAMPLE_IP | core.PERF_SAMPLE_TID | core.PERF_SAMPLE_TIME
    local s = show({ type = core.PERF_TYPE_SOFTWARE, sample_type = st,
      read_format = core.PERF_FORMAT_ID | (1 << 40), config = 2 }, "perf.attr")
    assert.equal(("perf.attr { config = 2, read_format = %d (id|0x%x), sample_type = %d (ip|tid|time), "
      .. "type = %d (software) }"):format(core.PERF_FORMAT_ID | (1 << 40), 1 << 40, st, core.PERF_TYPE_SOFTWARE), s)
    -- other tables name nothing; a type no name has stays a number
    assert.equal("T { type = 1 }", show({ type = 1 }))
    assert.equal("perf.attr { type = 99 }", show({ type = 99 }, "perf.attr"))
  end)

  it("refuses a table that has a metatable, and arguments of other types", function()
    local ok, err = pcall(core.show, setmetatable({}, {}), "T")
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'perf%.core%.show' %(the table has a metatable already%)", err)
    assert.has_error(function() core.show("x", "T") end)
    assert.has_error(function() core.show({}) end)
    -- a shown table cannot be shown again under another name
    assert.has_error(function() core.show(core.show({}, "A"), "B") end)
  end)
end)
