-- csrc/core.c: luaopen_perf_core, the module's one entry: the only symbol
-- the library exports, every file's part registered, nothing touched but
-- the module's own table.
local core = require "perf.core"
local H = require "helpers"

-- The path of the C core this suite loaded.
local function core_path()
  return assert(package.searchpath("perf.core", package.cpath))
end

describe("perf.core", function()
  it("exports luaopen_perf_core alone from the shared object", function()
    if H.sh("command -v nm") == "" then return pending("needs nm (binutils)") end
    local exported = {}
    for line in H.sh("nm -D --defined-only " .. core_path()):gmatch("[^\n]+") do
      local kind, name = line:match("^%x+ (%a) (%S+)$")
      -- functions and data this library defines (the sanitizers' own
      -- instrumentation symbols start with an underscore)
      if kind and kind:match("[TDBR]") and not name:match("^_") then exported[#exported + 1] = name end
    end
    assert.same({ "luaopen_perf_core" }, exported)
  end)

  it("registers the part of every file that has one", function()
    -- each csrc file defining pl_open_X has it called from core.c
    local called = {}
    for line in io.lines("csrc/core.c") do
      local name = line:match("^%s*(pl_open_[%w_]+)%(L%);")
      if name then called[name] = true end
    end
    local defined = {}
    for name in H.sh("cat csrc/*.c"):gmatch("\nvoid (pl_open_[%w_]+)%(lua_State %*L%)") do
      defined[#defined + 1] = name
    end
    assert.is_true(#defined >= 25)
    for _, name in ipairs(defined) do assert.is_true(called[name], name .. " is never called") end
    -- and a sample of what the parts add
    for _, f in ipairs { "open", "merge", "stream", "decode", "nearest", "mount", "perfdata_open",
                         "profile_alloc", "profile_clock", "show", "listdir", "spawn" } do
      assert.equal("function", type(core[f]), f)
    end
    assert.equal("0.1", core.version)
  end)

  it("changes no global and loads nothing else when required", function()
    local out = H.run_lua([[
      local before, loaded = {}, {}
      for k in pairs(_G) do before[k] = true end
      for k in pairs(package.loaded) do loaded[k] = true end
      local core = require "perf.core"
      local new = {}
      for k in pairs(_G) do if not before[k] then new[#new + 1] = "global " .. tostring(k) end end
      for k in pairs(package.loaded) do if not loaded[k] then new[#new + 1] = "module " .. k end end
      table.sort(new)
      print(type(core), table.concat(new, ","))
    ]])
    assert.equal("table\tmodule perf.core\n", out)
  end)
end)
