-- csrc/lua_layout.h: the Lua 5.4.x internal layouts, picked by the running
-- Lua's release and checked against a live thread.
local core = require "perf.core"

describe("the Lua layout", function()
  it("matches the running Lua, from the main thread and from a coroutine", function()
    local name, release = core.lua_layout()
    assert.is_string(name, release)
    local ident = _VERSION .. "." .. (release % 100)
    assert.equal(_VERSION, "Lua 5.4")
    assert.equal(release, core.lua_layout(ident))
    local co = coroutine.wrap(function() return core.lua_layout() end)
    assert.equal(name, (co()))
  end)

  it("reads release numbers from lua_ident and LUA_RELEASE strings", function()
    assert.equal(50404, core.lua_layout("$LuaVersion: Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio $"))
    assert.equal(50407, core.lua_layout("Lua 5.4.7"))
    assert.equal(50300, core.lua_layout("Lua 5.3.0"))
    assert.equal(0, core.lua_layout("LuaJIT 2.1"))
    assert.equal(0, core.lua_layout("Lua 5."))
  end)
end)
