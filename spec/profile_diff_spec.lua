-- prof:diff(base): two profiles compared stack by stack (FlameGraph's
-- difffolded form) and line by line; exact with a tracepoint at every hit.

local perf = require "perf"
local H = require "helpers"

local FX = "spec/fixtures/profiled2.lua"
local fx = dofile(FX)
local OPENAT = "syscalls:sys_enter_openat"
local with_tracefs = perf.capabilities().tracefs and it or pending

local function run(a, b)
  return assert(perf.profile(function() fx.open_a(a); fx.open_b(b) end, { event = OPENAT }))
end

describe("prof:diff", function()
  with_tracefs("gives each stack's count in the base and now, exactly", function()
    local base, now = run(30, 10), run(20, 25)
    local d = now:diff(base)
    assert.equal(40, d.base_total)
    assert.equal(45, d.total)
    local rows = {}
    for stack, b, n in d:folded():gmatch("([^\n]*) (%d+) (%d+)\n") do
      rows[stack:match("[^;]*$")] = { tonumber(b), tonumber(n) }
    end
    assert.same({
      ["open_a (" .. FX .. ":7)"] = { 30, 20 },
      ["open_b (" .. FX .. ":13)"] = { 10, 25 },
    }, rows)

    -- the two changes are equal and opposite: the line order breaks the tie
    local lines = d:lines()
    assert.equal(2, #lines)
    assert.same({ FX, 7, "open_a", 30, 20 }, { lines[1].source, lines[1].line, lines[1].name, lines[1].base, lines[1].count })
    assert.near(100 * (20 / 45 - 30 / 40), lines[1].change, 1e-9)
    assert.same({ 13, "open_b", 10, 25 }, { lines[2].line, lines[2].name, lines[2].base, lines[2].count })
    assert.near(100 * (25 / 45 - 10 / 40), lines[2].change, 1e-9)

    local text = tostring(d)
    H.assert_has("# base 40 samples, now 45 samples", text)
    H.assert_has(" 25.00%   55.56%  +30.56  " .. FX .. ":13  open_b", text)
  end)

  with_tracefs("keeps stacks found on one side only, with 0 on the other", function()
    local base, now = run(5, 0), run(0, 3)
    local text = now:diff(base):folded()
    assert.matches(";open_a %(" .. FX:gsub("%p", "%%%0") .. ":7%) 5 0\n", text)
    assert.matches(";open_b %(" .. FX:gsub("%p", "%%%0") .. ":13%) 0 3\n", text)
    local path = os.tmpname() .. ".folded"
    assert.is_true(now:diff(base):write(path))
    local f = assert(io.open(path))
    assert.equal(text, f:read("a"))
    f:close()
    os.remove(path)
  end)

  with_tracefs("draws a differential flame graph: red grew, blue shrank", function()
    local d = run(20, 25):diff(run(30, 10))
    local path = os.tmpname() .. ".svg"
    assert.is_true(d:write(path))
    local f = assert(io.open(path))
    local svg = f:read("a")
    f:close()
    os.remove(path)
    local frames = {}
    for name, info, fill in svg:gmatch('<g class="frame" id="f%d+" data%-name="([^"]*)" data%-info="([^"]*)".-fill="([^"]*)"') do
      frames[name:match("^(%S+)")] = { info = info, fill = fill }
    end
    local b, a = assert(frames.open_b), assert(frames.open_a)
    assert.matches("^open_b %(" .. FX:gsub("%p", "%%%0") .. ":13%) %(25 samples, 55%.56%%; base 10, %+30%.56 points%)$", b.info)
    assert.matches("base 30, %-30%.56 points%)$", a.info)
    local r, g = b.fill:match("^rgb%((%d+),(%d+),%d+%)$")
    assert.same({ 255, true }, { tonumber(r), tonumber(g) < 100 })        -- red
    local g2, bl = a.fill:match("^rgb%(%d+,(%d+),(%d+)%)$")
    assert.same({ 255, true }, { tonumber(bl), tonumber(g2) < 100 })      -- blue
    assert.matches("Differential flame graph: " .. OPENAT, svg, 1, true)
  end)

  -- the differential flame graph in a real browser, as the plain one
  local with_browser = perf.capabilities().tracefs and H.chromium and it or pending
  with_browser("renders the differential flame graph in headless Chromium", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local path = dir .. "/d.svg"
    assert.is_true(run(20, 25):diff(run(30, 10)):write(path))
    local f = assert(io.open(path))
    local svg = f:read("a")
    f:close()
    local n = select(2, svg:gsub('<g class="frame[^"]*" id="f%d+"', ""))
    local dom = H.browse("--dump-dom", "file://" .. path)
    assert.matches('data%-ready="' .. n .. '"', dom)     -- its script ran over every frame
    assert.matches('data%-name="open_b %(' .. FX:gsub("%p", "%%%0") .. ':13%)"[^>]*>.-fill="rgb%(255,', dom)
    local png = dir .. "/d.png"
    H.browse("--screenshot=" .. png .. " --window-size=1200,200", "file://" .. path)
    local w, h, size = H.png_info(png)
    assert.same({ 1200, 200 }, { w, h })
    f = assert(io.open(dir .. "/blank.svg", "w"))
    f:write('<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="200">'
      .. '<rect width="1200" height="200" fill="#f8f8f0"/></svg>')
    f:close()
    H.browse("--screenshot=" .. dir .. "/blank.png --window-size=1200,200", "file://" .. dir .. "/blank.svg")
    local _, _, blank = H.png_info(dir .. "/blank.png")
    assert.is_true(size > 3 * blank, ("diff graph %d bytes, blank page %d"):format(size, blank))
    os.execute("rm -rf " .. dir)
  end)

  it("refuses what is not a profile, and unknown formats", function()
    local prof = assert(perf.profile(function() end))
    H.assert_has("base must be a profile, got number", select(2, pcall(prof.diff, prof, 3)))
    local d = prof:diff(prof)
    assert.equal("", d:folded())
    H.assert_has("did you mean 'folded'?", select(2, pcall(d.write, d, "x", "foldd")))
    H.assert_has("cannot tell the format", select(2, pcall(d.write, d, "x.png")))
  end)
end)

describe("prof:diff with a base read back from folded stacks", function()
  -- get allocates; called by name in one run, only by a tail call in the other
  local function get(n) return { n } end
  local function tail(n) return get(n) end
  local GET = debug.getinfo(get, "S")

  it("gives one function one name, though one run had no name for it", function()
    local base = assert(perf.profile(function() local t = {} for i = 1, 200 do t[i] = get(i) end return t end,
      { mode = "alloc", period = 64 }))
    local now = assert(perf.profile(function() local t = {} for i = 1, 200 do t[i] = tail(i) end return t end,
      { mode = "alloc", period = 64 }))
    local unnamed = ("<%s:%d>"):format(GET.short_src, GET.linedefined)
    H.assert_has(unnamed, now:folded())                -- a tail call names nothing
    local d = now:diff(require("perf.profile_diff").folded(base:folded(), "bytes"))
    local found = false
    for _, l in ipairs(d:lines()) do
      assert.not_equal(unnamed, l.name)
      if l.source == GET.short_src and l.line == GET.linedefined then
        found = true
        assert.equal("get", l.name)
      end
    end
    assert.is_true(found)
    assert.is_nil(d:folded():find(unnamed, 1, true), d:folded())
    assert.is_nil(d:report(50):find(unnamed, 1, true))
  end)
end)
