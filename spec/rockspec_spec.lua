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

  it("names every Lua module under lua/perf and its layer folders", function()
    local core = require "perf.core"
    local n = 0
    for _, file in ipairs(ls("lua/perf", "%.lua$")) do
      local name = file == "init.lua" and "perf" or "perf." .. file:gsub("%.lua$", "")
      assert.equal("lua/perf/" .. file, modules[name], name)
      n = n + 1
    end
    for _, dir in ipairs(ls("lua/perf", "^[%w_]+$")) do
      if core.listdir("lua/perf/" .. dir) then
        for _, file in ipairs(ls("lua/perf/" .. dir, "%.lua$")) do
          local name = "perf." .. dir .. (file == "init.lua" and "" or "." .. file:gsub("%.lua$", ""))
          assert.equal("lua/perf/" .. dir .. "/" .. file, modules[name], name)
          n = n + 1
        end
      end
    end
    -- and nothing more: each module listed is a file
    local listed = 0
    for name in pairs(modules) do if name ~= "perf.core" then listed = listed + 1 end end
    assert.equal(n, listed)
  end)

  it("installs the perf-lua command, and every command it lists", function()
    assert.same({ ["perf-lua"] = "bin/perf-lua" }, spec.build.install.bin)
    for _, c in ipairs(require("perf.cli").commands) do
      assert.equal("lua/perf/cli/" .. c[1] .. ".lua", modules["perf.cli." .. c[1]], c[1])
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
    assert(os.execute(("mkdir -p %s && cp -r bin csrc lua rockspec %s/"):format(work, work)))
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
    -- the command, as installed: LuaRocks' wrapper sets the tree's paths
    local list = H.sh(("cd / && env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 %s/bin/perf-lua list sw 2>&1"):format(tree))
    local function stat(n)       -- openat calls of a command that opens /dev/null n times
      return H.sh(("cd / && env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 %s/bin/perf-lua stat -x, "
        .. "-e syscalls:sys_enter_openat -- lua5.4 -e 'for _ = 1, %d do io.open(\"/dev/null\"):close() end' 2>&1; "
        .. "echo \"exit $?\""):format(tree, n))
    end
    local stat7, stat17 = stat(7), stat(17)
    local bad = H.sh(("cd / && %s/bin/perf-lua stat --no-such-option true 2>&1; echo \"exit $?\""):format(tree))
    os.execute(("rm -rf %s %s"):format(tree, work))
    assert.equal(tree .. "/lib/lua/5.4/perf/core.so\t7\n", run)
    assert.matches("\n  task%-clock +%[Software event%]\n", list)
    assert.matches("\n%d+ events, %d+ of them open here\n", list)
    assert.matches("^%d+,,syscalls:sys_enter_openat,.*\nexit 0\n$", stat7)
    assert.equal(10, math.tointeger(stat17:match("^%d+")) - math.tointeger(stat7:match("^%d+")))
    assert.matches("^perf%-lua stat: unknown option '%-%-no%-such%-option'\n", bad)
    assert.matches("\nexit 129\n$", bad)
  end)
end)
