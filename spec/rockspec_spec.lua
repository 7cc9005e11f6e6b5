-- The rockspec is how users install: it must name every module and every
-- C source, and a LuaRocks build of it must load and count.
local H = require "helpers"

local function rockspec()
  local env = {}
  assert(loadfile("rockspec/perf-event-scm-1.rockspec", "t", env))()
  return env
end

local function ls(dir, pattern)
  local out = {}
  for _, name in ipairs(require("perf.core").listdir(dir)) do
    if name:match(pattern) then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

describe("the rockspec", function()
  local spec = rockspec()
  local modules = spec.build.modules

  it("names every Lua module under lua/perf", function()
    for _, file in ipairs(ls("lua/perf", "%.lua$")) do
      local name = file == "init.lua" and "perf" or "perf." .. file:gsub("%.lua$", "")
      assert.equal("lua/perf/" .. file, modules[name], name)
    end
  end)

  it("builds perf.core from every C source in csrc", function()
    local listed = {}
    for _, src in ipairs(modules["perf.core"].sources) do listed[src] = true end
    for _, file in ipairs(ls("csrc", "%.c$")) do
      assert.is_true(listed["csrc/" .. file], file)
    end
    assert.same({ "lua >= 5.4" }, spec.dependencies)
  end)

  it("installs with luarocks into a fresh tree that loads and counts", function()
    if H.sh("command -v luarocks") == "" then
      return pending("luarocks is not installed (make test installs it)")
    end
    local tree = os.tmpname()
    os.remove(tree)
    local work = tree .. "-src"
    -- a copy of the sources, so the build leaves nothing in this tree
    assert(os.execute(("mkdir -p %s && cp -r csrc lua rockspec %s/"):format(work, work)))
    local out = H.sh(("cd %s && luarocks --lua-version 5.4 --tree %s make rockspec/perf-event-scm-1.rockspec 2>&1")
      :format(work, tree))
    assert.matches("perf%-event scm%-1 is now installed", out)
    local run = H.sh(([[cd / && LUA_PATH='%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua' ]] ..
      [[LUA_CPATH='%s/lib/lua/5.4/?.so' lua5.4 -e '
        local perf = require "perf"
        local ev = assert(perf.open "syscalls:sys_enter_openat")
        ev:enable()
        for _ = 1, 7 do io.open("/dev/null"):close() end
        ev:disable()
        print(package.searchpath("perf.core", package.cpath), (ev:read()))' 2>&1]])
      :format(tree, tree, tree))
    os.execute(("rm -rf %s %s"):format(tree, work))
    assert.equal(tree .. "/lib/lua/5.4/perf/core.so\t7\n", run)
  end)
end)
