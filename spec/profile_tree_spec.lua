-- One path for a profile: the stacks the hook collected become one tree
-- (perf.profiling.stack_tree), built once at the first need, and every
-- output renders from it; only folded text a user hands in is parsed.

local perf = require "perf"
local profile = require "perf.profiling.profile"
local profile_diff = require "perf.profiling.profile_diff"
local stack_tree = require "perf.profiling.stack_tree"
local fg = require "perf.profiling.flamegraph"

local FX = "spec/fixtures/profiled2.lua"
local fx = dofile(FX)
local OPENAT = "syscalls:sys_enter_openat"
local with_tracefs = perf.capabilities().tracefs and it or pending

local function run(a, b)
  return assert(perf.profile(function() fx.open_a(a); fx.open_b(b) end, { event = OPENAT, period = 1 }))
end

-- Counts the calls of flamegraph's text parser and the trees built, by
-- the stacks they are built of, while fn runs.
local function counting(fn)
  local tree, build = fg.tree, stack_tree.build
  local parsed, built = {}, {}
  fg.tree = function(text) parsed[#parsed + 1] = text return tree(text) end
  stack_tree.build = function(stacks) built[stacks] = (built[stacks] or 0) + 1 return build(stacks) end
  local ok, err = pcall(fn)
  fg.tree, stack_tree.build = tree, build
  assert(ok, err)
  return parsed, built
end

-- The folded stacks of a profile made straight from its stacks, as the
-- format says: labels root first, equal stacks added up, lines sorted.
local function folded_of_stacks(prof)
  local counts, lines = {}, {}
  for _, s in ipairs(prof.stacks) do
    local labels = {}
    for i, f in ipairs(s.frames) do labels[i] = stack_tree.label(f) end
    local line = #labels > 0 and table.concat(labels, ";") or "[unknown]"
    if not counts[line] then lines[#lines + 1] = line end
    counts[line] = (counts[line] or 0) + s.count
  end
  table.sort(lines)
  local out = {}
  for i, line in ipairs(lines) do out[i] = ("%s %d\n"):format(line, counts[line]) end
  return table.concat(out)
end

-- A made-up profile: a C frame at the root, a C function running, an
-- unnamed function, recursion at one line, an empty stack.
local RAW = {
  ["Lleaf\tsrc/a.lua\t10\t12\nCpcall\nLmain\tsrc/m.lua\t1\t5\nCpmain"] = 7,
  ["csort\nL\tsrc/a.lua\t20\t21\nLmain\tsrc/m.lua\t1\t6\nCpmain"] = 3,
  ["Lx\tsrc/a.lua\t30\t31\nLrec\tsrc/a.lua\t40\t41\nLrec\tsrc/a.lua\t40\t41\nLmain\tsrc/m.lua\t1\t8"] = 5,
  ["Cpmain"] = 1,
}

local function made_up()
  return profile.new(RAW, { samples = 16, lost = 0, event = "cpu-clock", freq = 999 })
end

describe("a profile's stack tree", function()
  it("interns the frames and builds the call tree by label", function()
    local prof = made_up()
    local t = stack_tree.of(prof)
    assert.equal(t, stack_tree.of(prof))                -- kept
    assert.equal(16, t.total)
    assert.equal(16, t.root.value)
    local names = {}
    for i, c in ipairs(t.root.children) do names[i] = c.name end
    assert.same({ "[unknown]", "main (src/m.lua:5)", "main (src/m.lua:6)", "main (src/m.lua:8)" }, names)
    -- rec at line 41 twice in one stack: one interned frame, two places
    local rec
    for _, st in ipairs(t.stacks) do if #st.ids == 4 then rec = st end end
    assert.equal(rec.ids[2], rec.ids[3])
    assert.equal("rec (src/a.lua:41)", t.labels[rec.ids[2]])
    -- recursion counts once in the function's total, self at the leaf only
    for _, f in ipairs(prof:functions()) do
      if f.name == "rec" then assert.same({ 0, 5 }, { f.self, f.total }) end
      if f.name == "x" then assert.same({ 5, 5 }, { f.self, f.total }) end
    end
  end)

  it("writes the folded stacks its stacks make, and the same flame graph as the text", function()
    local prof = made_up()
    assert.equal(folded_of_stacks(prof), prof:folded())
    local opts = { title = "Flame graph: " .. prof:sampling(),
      subtitle = ("%d samples, %d lost; click a frame to zoom"):format(prof.samples, prof.lost) }
    assert.equal(fg.svg(prof:folded(), opts), prof:svg())
  end)

  it("is rebuilt when the profile's stacks are replaced", function()
    local prof = made_up()
    local t = stack_tree.of(prof)
    prof.stacks = { prof.stacks[1] }
    assert.not_equal(t, stack_tree.of(prof))
    assert.equal(prof.stacks[1].count, stack_tree.of(prof).total)
  end)

  with_tracefs("renders every output of a profile from one tree, parsing no text", function()
    local base, prof = run(30, 10), run(20, 25)
    local outputs = {}
    local dir = os.tmpname()
    os.remove(dir)
    local parsed, built = counting(function()
      outputs.report = tostring(prof)
      outputs.folded = prof:folded()
      outputs.svg = prof:svg()
      outputs.speedscope = prof:speedscope()
      for _, format in ipairs { "folded", "svg", "speedscope", "pprof" } do
        assert(prof:write(dir, format))
      end
      local d = prof:diff(base)
      outputs.diff = tostring(d) .. d:folded() .. d:svg()
    end)
    os.remove(dir)
    assert.same({}, parsed)
    assert.equal(1, built[prof.stacks])
    assert.equal(1, built[base.stacks])
    assert.equal(folded_of_stacks(prof), outputs.folded)
    local opts = { title = "Flame graph: " .. prof:sampling(),
      subtitle = ("%d samples, %d lost; click a frame to zoom"):format(prof.samples, prof.lost) }
    assert.equal(fg.svg(outputs.folded, opts), outputs.svg)
    assert.matches("open_a %(" .. FX .. ":7%) 20\n", outputs.folded)
  end)

  with_tracefs("parses a base's folded text, the user's, and only that", function()
    local base, prof = run(30, 10), run(20, 25)
    local text = base:folded()
    local d
    local parsed = counting(function()
      d = prof:diff(profile_diff.folded(text))
      d:svg()
      d:svg()
    end)
    assert.same({ text }, parsed)                       -- once: its tree is kept
    local from_profile = prof:diff(base)
    assert.equal(from_profile:folded(), d:folded())
    assert.equal(from_profile:svg(), d:svg())
    assert.equal(tostring(from_profile), tostring(d))
  end)
end)
