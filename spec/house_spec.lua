-- The house rules of lua/perf/ (topics/layout.md): modules in layer
-- folders, each requiring what it uses at its top and from its own layer
-- or those below only; no require cycle; no function that takes the front
-- table; no function over 80 lines. Read from the sources (spec/lua_house.lua).
local house = require "lua_house"

local MAX_LINES = 80

-- The public names directly under lua/perf/ that forward to a layer's
-- module (the README, the topics and the examples name them).
local PUBLIC = {
  ["perf.cgroup"] = "perf.event.cgroup", ["perf.cpus"] = "perf.counting.cpus",
  ["perf.data"] = "perf.recording.data", ["perf.elf"] = "perf.util.elf",
  ["perf.events"] = "perf.event.events", ["perf.kallsyms"] = "perf.util.kallsyms",
  ["perf.profile_diff"] = "perf.profiling.profile_diff", ["perf.stat_format"] = "perf.counting.stat_format",
  ["perf.topology"] = "perf.counting.topology", ["perf.tracepoint"] = "perf.event.tracepoint",
}

local modules = house.modules("lua/perf")
local by_name, analyzed = {}, {}
for _, m in ipairs(modules) do
  by_name[m.name] = m
  analyzed[m.name] = house.analyze(m.src)
end

-- The layer a required module stands in, or nil and why it may not be required.
local function layer_of(name)
  if name == "perf.core" then return "util" end      -- the C core, under every layer
  local m = by_name[name]
  if not m then return nil, "no such module" end
  if m.forwards then return nil, "a public name: require " .. m.forwards end
  return m.layer
end

local function each(check)
  local bad = {}
  for _, m in ipairs(modules) do check(m, analyzed[m.name], bad) end
  return bad
end

describe("the house of lua/perf", function()
  it("finds the modules of every layer", function()
    local seen = {}
    for _, m in ipairs(modules) do seen[m.layer] = true end
    for _, layer in ipairs(house.LAYERS) do assert.is_true(seen[layer], layer) end
    assert.is_true(#modules > 50, #modules)
    assert.is_nil(next(each(function(m, _, bad)
      if not house.RANK[m.layer] then bad[#bad + 1] = m.path .. ": a folder that is no layer" end
    end)))
  end)

  it("keeps only the front and the public names directly under lua/perf", function()
    local bad = each(function(m, _, out)
      if m.layer == "front" and m.name ~= "perf" then
        if PUBLIC[m.name] ~= m.forwards then out[#out + 1] = m.path .. " forwards to " .. tostring(m.forwards) end
        if not by_name[m.forwards or ""] then out[#out + 1] = m.path .. ": no module " .. tostring(m.forwards) end
      end
    end)
    assert.same({}, bad)
    for name in pairs(PUBLIC) do assert.truthy(by_name[name], name) end
  end)

  -- (a command's opening comment is its --help text: perf.cli's init says it for them)
  it("opens each layer's modules with the layer's header", function()
    assert.same({}, each(function(m, _, bad)
      if m.layer ~= "front" and (m.layer ~= "cli" or m.name == "perf.cli")
          and not m.src:find("^%-%- Layer lua/perf/" .. m.layer .. "/: ") then
        bad[#bad + 1] = m.path
      end
    end))
  end)

  it("requires from a module's own layer and those below it only", function()
    assert.same({}, each(function(m, a, bad)
      for _, r in ipairs(a.requires) do
        if r.module and r.module:match("^perf") and not m.forwards then
          local layer, why = layer_of(r.module)
          if r.module == "perf" and m.layer == "cli" then layer = "front" end
          if not layer then
            bad[#bad + 1] = ("%s:%d: %s: %s"):format(m.path, r.line, r.module, why)
          elseif m.layer ~= "front" and house.RANK[layer] > house.RANK[m.layer] then
            bad[#bad + 1] = ("%s:%d: %s (%s) is above %s"):format(m.path, r.line, r.module, layer, m.layer)
          end
        end
      end
    end))
  end)

  it("requires at a module's top, or says on the line or the one before why not", function()
    assert.same({}, each(function(m, a, bad)
      for _, r in ipairs(a.requires) do
        if r.in_function and not r.commented then
          bad[#bad + 1] = ("%s:%d: require %s in a function, without a comment"):format(m.path, r.line,
            tostring(r.module))
        end
      end
    end))
  end)

  it("has no require cycle among the requires at the modules' tops", function()
    local edges = {}
    for name, a in pairs(analyzed) do
      edges[name] = {}
      for _, r in ipairs(a.requires) do
        if not r.in_function and by_name[r.module] then table.insert(edges[name], r.module) end
      end
    end
    local state, cycles = {}, {}
    local path = {}
    local function visit(n)
      state[n] = "open"
      path[#path + 1] = n
      for _, to in ipairs(edges[n]) do
        if state[to] == "open" then
          local from
          for k, p in ipairs(path) do if p == to then from = k end end
          cycles[#cycles + 1] = table.concat(path, " -> ", from) .. " -> " .. to
        elseif not state[to] then
          visit(to)
        end
      end
      path[#path] = nil
      state[n] = "done"
    end
    local names = {}
    for n in pairs(edges) do names[#names + 1] = n end
    table.sort(names)
    for _, n in ipairs(names) do if not state[n] then visit(n) end end
    assert.same({}, cycles)
  end)

  it("has no function that takes the front table (a parameter named perf)", function()
    assert.same({}, each(function(m, a, bad)
      for _, f in ipairs(a.functions) do
        for _, p in ipairs(f.params) do
          if p == "perf" then bad[#bad + 1] = ("%s:%d: %s(perf, ...)"):format(m.path, f.first, f.name) end
        end
      end
    end))
  end)

  it("has no function over " .. MAX_LINES .. " lines", function()
    assert.same({}, each(function(m, a, bad)
      for _, f in ipairs(a.functions) do
        local n = f.last - f.first + 1
        if n > MAX_LINES then bad[#bad + 1] = ("%s:%d: %s, %d lines"):format(m.path, f.first, f.name, n) end
      end
    end))
  end)

  describe("its reader", function()
    it("tells requires at the top from those in functions, skipping comments and strings", function()
      local a = house.analyze([=[
local a = require "perf.x"          -- at the top
local ok, s = pcall(require, "socket")
-- require "perf.in_comment"
local text = "require 'perf.in_string'" .. [[ require "perf.long" ]]
local function f(perf, n)
  if n then
    for i = 1, n do
      while true do break end
    end
  end
  local y = require("perf.y")
  -- optional
  local z = require "perf.z"
  repeat local _ = 1 until true
  return function() return y, z end
end
do local b = require "perf.b" end
return { f = f, g = function(x) return x end }
]=])
      local got = {}
      for _, r in ipairs(a.requires) do
        got[#got + 1] = ("%s %d %s%s%s"):format(r.module, r.line, r.in_function and "fn" or "top",
          r.guarded and " pcall" or "", r.commented and " #" or "")
      end
      assert.same({ "perf.x 1 top #", "socket 2 top pcall #", "perf.y 11 fn", "perf.z 13 fn #", "perf.b 17 top" }, got)
      assert.same({ "f", "(anonymous)", "(anonymous)" },
        { a.functions[1].name, a.functions[2].name, a.functions[3].name })
      assert.same({ "perf", "n" }, a.functions[1].params)
      assert.same({ 5, 16 }, { a.functions[1].first, a.functions[1].last })
    end)
  end)
end)
