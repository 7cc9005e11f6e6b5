-- The reference (LDoc, config.ld) documents every function the public
-- modules export, and the Lua examples marked runnable in the README and
-- the topics still run.
local H = require "helpers"
local perf = require "perf"
local core = require "perf.core"

-- The methods of a class: its method table, without metamethods.
local function methods(t)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and type(v) == "function" and not k:match("^__") then out[#out + 1] = k end
  end
  return out
end

local function registry_methods(name)
  return function() return methods(debug.getregistry()[name].__index) end
end

local function instance_methods(make)
  return function()
    local obj = assert(make())
    local m = methods(getmetatable(obj).__index)
    if obj.close then obj:close() end
    return m
  end
end

-- perf's helpers load on first use: the front's lazy table, by its upvalue.
local function front_functions()
  local names = {}
  for k, v in pairs(perf) do
    if type(v) == "function" then names[#names + 1] = k end
  end
  local index = getmetatable(perf).__index
  for i = 1, math.huge do
    local name, value = debug.getupvalue(index, i)
    if not name then break end
    if name == "lazy" then
      for k in pairs(value) do
        if rawget(perf, k) == nil and type(perf[k]) == "function" then names[#names + 1] = k end
      end
    end
  end
  return names
end

local function plain_functions(modname)
  return function()
    local out = {}
    for k, v in pairs(require(modname)) do
      if type(v) == "function" then out[#out + 1] = k end
    end
    return out
  end
end

-- module -> its functions, and its classes' methods under the name LDoc
-- gives them ("Class:method")
local PUBLIC = {
  perf = { functions = front_functions },
  ["perf.stat_format"] = { functions = plain_functions "perf.stat_format" },
  ["perf.data"] = { functions = plain_functions "perf.data" },
  ["perf.core"] = {
    functions = plain_functions "perf.core",
    classes = {
      event = registry_methods "perf.event",
      group = registry_methods "perf.group",
      ring = registry_methods "perf.ring",
      child = registry_methods "perf.child",
      waiter = registry_methods "perf.waiter",
      attach = registry_methods "perf.attach",
    },
  },
  ["perf.cpus"] = {
    functions = plain_functions "perf.cpus",
    classes = { Set = instance_methods(function() return perf.cpus.open "dummy" end) },
  },
  ["perf.kallsyms"] = {
    functions = plain_functions "perf.kallsyms",
    classes = { Ksyms = instance_methods(function() return perf.kallsyms.load() end) },
  },
  ["perf.elf"] = {
    functions = plain_functions "perf.elf",
    classes = { Elf = instance_methods(function() return require("perf.elf").open "/bin/sh" end) },
  },
  ["perf.tracepoint"] = {
    functions = plain_functions "perf.tracepoint",
    classes = { Tracepoint = instance_methods(function() return perf.tracepoint "syscalls:sys_enter_openat" end) },
  },
}

-- What LDoc makes of the sources: items[module][name] = { kind, flags,
-- undocumented params }, and its warnings.
local function ldoc()
  local err = os.tmpname()
  local p = io.popen("LUA_PATH='spec/?.lua;;' ldoc --filter ldoc_names.names . 2>" .. err)
  local items = {}
  for line in p:lines() do
    local mod, name, kind, flags, bare = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
    assert(mod, line)
    items[mod] = items[mod] or {}
    items[mod][name] = { kind = kind, flags = flags, bare = bare }
  end
  p:close()
  local f = assert(io.open(err))
  local warnings = f:read("a")
  f:close()
  os.remove(err)
  return items, warnings
end

describe("the reference", function()
  if H.sh("command -v ldoc") == "" then
    it("needs LDoc", function() pending("ldoc is not installed (make test installs lua-ldoc)") end)
    return
  end
  local items, warnings = ldoc()

  it("builds without a warning", function()
    assert.equal("", warnings)
  end)

  it("builds its HTML pages, topics included (make docs)", function()
    local dir = os.tmpname()
    os.remove(dir)
    local out = H.sh(("ldoc --fatalwarnings -d %s . 2>&1; echo \"exit $?\""):format(dir))
    local index = io.open(dir .. "/index.html")
    local topic = io.open(dir .. "/topics/counting.md.html")
    if index then index:close() end
    if topic then topic:close() end
    os.execute("rm -rf " .. dir)
    assert.matches("\nexit 0\n$", out)
    assert.truthy(index and topic, out)
  end)

  for modname, what in pairs(PUBLIC) do
    it("documents " .. modname .. " with a summary and an example", function()
      local mod = items[modname]
      assert.is_table(mod, modname .. " has no page")
      assert.matches("s", mod[""].flags, modname)
      assert.matches("u", mod[""].flags, modname .. " has no @usage")
    end)

    it("documents every function " .. modname .. " exports, and its parameters", function()
      local mod = items[modname] or {}
      local missing = {}
      local function check(name)
        local item = mod[name]
        if not item or item.kind ~= "function" or not item.flags:match("s") then
          missing[#missing + 1] = name
        elseif item.bare ~= "" then
          missing[#missing + 1] = name .. " (parameters " .. item.bare .. ")"
        end
      end
      for _, name in ipairs(what.functions()) do check(name) end
      for class, list in pairs(what.classes or {}) do
        for _, name in ipairs(list()) do check(class .. ":" .. name) end
      end
      table.sort(missing)
      assert.same({}, missing)
    end)
  end
end)

-- The fenced code blocks whose info string is "lua run": each runs, as a
-- script of its own, against the in-tree build.
local function runnable_blocks(path)
  local blocks, f = {}, assert(io.open(path))
  local text = f:read("a")
  f:close()
  local n = 0
  for line, body in text:gmatch("()```lua run\n(.-)\n```") do
    n = n + 1
    local lineno = select(2, text:sub(1, line):gsub("\n", "")) + 1
    blocks[#blocks + 1] = { where = ("%s:%d"):format(path, lineno), code = body }
  end
  return blocks
end

local function documents()
  local list = { "README.md" }
  for _, name in ipairs(core.listdir("topics") or {}) do
    if name:match("%.md$") then list[#list + 1] = "topics/" .. name end
  end
  table.sort(list)
  return list
end

describe("the topics", function()
  it("are each built by make docs and linked from the README", function()
    local env = {}
    assert(loadfile("config.ld", "t", env))()
    local listed = {}
    for _, path in ipairs(env.topics) do listed[path] = true end
    local f = assert(io.open("README.md"))
    local readme = f:read("a")
    f:close()
    local found = 0
    for _, path in ipairs(documents()) do
      if path ~= "README.md" then
        found = found + 1
        assert.is_true(listed[path], path .. " is not in config.ld's topics")
        assert.truthy(readme:find("](" .. path .. ")", 1, true), path .. " is not linked from README.md")
      end
    end
    assert.equal(#env.topics, found)
  end)
end)

describe("the runnable examples", function()
  for _, path in ipairs(documents()) do
    for _, block in ipairs(runnable_blocks(path)) do
      it("run: " .. block.where, function()
        local script = os.tmpname()
        local f = assert(io.open(script, "w"))
        f:write('package.path = "lua/?.lua;lua/?/init.lua;" .. package.path\n')
        f:write('package.cpath = "./?.so;" .. package.cpath\n')
        f:write(block.code, "\n")
        f:close()
        local p = io.popen(("%s %s 2>&1; echo \"exit $?\""):format(H.example, script))
        local out = p:read("a")
        p:close()
        os.remove(script)
        assert.matches("exit 0\n$", out, block.where .. "\n" .. out)
      end)
    end
  end

  it("are found where they are marked", function()
    local blocks = runnable_blocks("README.md")
    assert.is_true(#blocks >= 1, "README.md has no runnable block")
  end)
end)
