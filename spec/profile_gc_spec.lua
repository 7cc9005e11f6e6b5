-- A sample taken while the collector takes a step is charged to a [gc]
-- frame under the Lua line whose allocation started the step: its share
-- follows the collector's settings.
local perf = require "perf"
local core = require "perf.core"

-- Keeps `live` tables alive (the collector marks them each cycle) while
-- making garbage at one line.
local function garbage(live, rounds)
  local keep = {}
  for i = 1, live do keep[i] = { i } end
  local t
  for i = 1, rounds do
    t = { i, i }                                   -- line 14: the garbage
  end
  return #keep + #t
end

-- The share of the samples at line 14 that have a [gc] frame, under
-- collector settings set by `setup`.
local function gc_share(setup)
  collectgarbage("collect")
  setup()
  local prof = assert(perf.profile(garbage, { event = "cpu-clock", freq = 4999 }, 50000, 1000000))
  collectgarbage("incremental", 200, 100)        -- Lua 5.4's defaults
  collectgarbage("restart")
  local gc, line = 0, 0
  local at_line = "(spec/profile_gc_spec.lua:14)"
  for stack, n in prof:folded():gmatch("([^\n]*) (%d+)\n") do
    n = math.tointeger(tonumber(n))
    if stack:sub(-#at_line - 5) == at_line .. ";[gc]" then gc = gc + n
    elseif stack:sub(-#at_line) == at_line then line = line + n end
  end
  return gc / math.max(1, gc + line), gc + line, prof
end

describe("collector time", function()
  local layout = core.lua_layout()
  local test = layout and it or pending

  test("is a [gc] frame under the allocating line; its share follows the incremental settings", function()
    -- on this machine (2026-12-01): (110, 400) about 77%, (1000, 100)
    -- about 17% (58% and 28% under make asan, whose free is slower):
    -- sweeping the garbage costs the same at any pause, marking the live
    -- tables is what a short pause repeats
    local eager, n1 = gc_share(function() collectgarbage("incremental", 110, 400) end)
    local lazy, n2 = gc_share(function() collectgarbage("incremental", 1000, 100) end)
    assert.is_true(n1 > 200 and n2 > 200, "too few samples")
    assert.is_true(lazy > 0.02, lazy)
    assert.is_true(eager > lazy + 0.15, ("eager %.3f, lazy %.3f"):format(eager, lazy))
  end)

  test("is none while the collector is stopped", function()
    local share, n = gc_share(function() collectgarbage("stop") end)
    assert.is_true(n > 200, "too few samples")
    assert.equal(0, share)
  end)

  test("is told apart in the report and the folded stacks", function()
    local _, _, prof = gc_share(function() collectgarbage("incremental", 150, 100) end)
    assert.truthy(prof:folded():find(";[gc] ", 1, true))
    local f
    for _, e in ipairs(prof:functions()) do if e.name == "[gc]" then f = e end end
    assert.truthy(f)
    assert.is_true(f.total > 0)
  end)
end)
