-- csrc/profile_alloc.c: the allocator wrapper behind perf.profile { mode =
-- "alloc" }: the bytes it counts against the Lua GC's own count, the
-- allocator given back, one profile at a time. (The mode itself, with
-- samples charged to lines: profile_modes_spec.lua.)
local core = require "perf.core"

local NEVER = 1 << 40                 -- a period no test reaches: no sample taken

describe("perf.core.profile_alloc", function()
  it("counts every byte the state allocates, as the GC counts them", function()
    local a <close> = core.profile_alloc(NEVER)
    local t = { false }
    collectgarbage()
    collectgarbage("stop")                  -- nothing freed: the GC's count only grows
    local before = collectgarbage("count")
    a:start()
    for i = 1, 3000 do t[i] = {} end        -- tables and the growth of t's array
    a:stop()
    local after = collectgarbage("count")
    collectgarbage("restart")
    assert.equal(3000, #t)
    assert.equal(math.tointeger((after - before) * 1024), a.bytes)
    assert.is_true(a.bytes > 3000 * 40)
    -- stopped, it counts nothing more
    local stopped = a.bytes
    for i = 1, 100 do t[i] = {} end
    assert.equal(stopped, a.bytes)
  end)

  it("wraps the state's allocator while started, and gives it back", function()
    local original = core.profile_allocator()
    local a = core.profile_alloc(4096)
    a:start()
    assert.are_not.equal(original, (core.profile_allocator()))
    a:stop()
    assert.equal(original, (core.profile_allocator()))
    a:start()
    a:close()                                 -- close stops too
    assert.equal(original, (core.profile_allocator()))
  end)

  it("runs one at a time, and refuses use after close", function()
    local a = core.profile_alloc(4096)
    local b <close> = core.profile_alloc(4096)
    a:start()
    assert.has_error(function() b:start() end, "another allocation profile is running")
    assert.has_error(function() a:start() end, "the allocation profile is already running")
    a:stop()
    b:start()
    b:stop()
    a:close()
    a:close()
    assert.has_error(function() a:start() end, "attempt to use a closed allocation profile")
    assert.matches("^perf%.profalloc %(closed, every 4096 bytes, %d+ bytes%)$", tostring(a))
  end)

  it("takes a period of one byte or more", function()
    for _, bad in ipairs { 0, -1 } do
      local ok, err = pcall(core.profile_alloc, bad)
      assert.is_false(ok)
      assert.matches("bad argument #1 to '[%w.]*profile_alloc' %(out of range%)", err)
    end
    assert.has_error(function() core.profile_alloc("x") end)
    local a <close> = core.profile_alloc(1)
    assert.matches("every 1 bytes", tostring(a), 1, true)
  end)
end)
