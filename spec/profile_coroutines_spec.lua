-- A sample is charged to the stack of the coroutine that was running at
-- the overflow, under the lines that resumed it, however it was resumed
-- (coroutine.resume, coroutine.wrap, a copy of either kept before
-- profiling, a program's own wrapper, lua_resume from C) and whenever it
-- was made. Every openat at period 1 is one sample at the line of its
-- io.open. Afterwards no thread keeps the profiler's hook.

local perf = require "perf"
local H = require "helpers"

local fx = dofile("spec/fixtures/coroutines.lua")
local FX = "spec/fixtures/coroutines.lua"
local OPENAT = "syscalls:sys_enter_openat"
local resume, wrap = coroutine.resume, coroutine.wrap   -- copies kept before profiling
local rc, rc_dir = H.load_fixture("resume_c")

local test = perf.capabilities().tracefs and it or pending

-- The folded stacks as { [stack] = count }.
local function folded(prof)
  local t = {}
  for line in prof:folded():gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    t[stack] = math.tointeger(tonumber(n))
  end
  return t
end

-- The samples of stacks whose leaf frame ends with `leaf` ("(file:line)"),
-- and those of them whose frame below does not end with `under` (a pattern).
local function charged(prof, leaf, under)
  local n, misplaced = 0, {}
  for stack, count in pairs(folded(prof)) do
    if stack:sub(-#leaf) == leaf then
      n = n + count
      local below = stack:match("^(.*);[^;]*$") or ""
      if under and not below:find(under .. "$") then misplaced[#misplaced + 1] = stack end
    end
  end
  return n, misplaced
end

local function unhooked(...)
  for i = 1, select("#", ...) do
    assert.is_nil(debug.gethook((select(i, ...))), "a thread kept a hook")
  end
  assert.is_nil(debug.gethook())
end

-- a coroutine's body function has no name of its own: its leaf frame is
-- "<file:5> (file:7)"
local BODY = "(" .. FX .. ":7)"
local here = "spec/profile_coroutines_spec.lua:"

describe("profiling coroutines", function()
  teardown(function() os.execute("rm -rf " .. rc_dir) end)

  test("coroutine.resume of a coroutine made before profiling", function()
    local co = coroutine.create(fx.body)
    local prof = assert(perf.profile(function()
      for _ = 1, 5 do assert(coroutine.resume(co, 3)) end
    end, { event = OPENAT }))
    assert.equal(15, prof.samples)
    local n, misplaced = charged(prof, BODY, "%(" .. here .. "%d+%)")
    assert.equal(15, n)
    assert.same({}, misplaced)
    unhooked(co)
  end)

  test("coroutine.wrap made before profiling", function()
    local w = coroutine.wrap(fx.body)
    local prof = assert(perf.profile(function()
      for _ = 1, 4 do w(2) end
    end, { event = OPENAT }))
    assert.equal(8, prof.samples)
    assert.equal(8, (charged(prof, BODY, "%(" .. here .. "%d+%)")))
  end)

  test("copies of resume and wrap kept before profiling, and a program's own wrapper", function()
    local co = coroutine.create(fx.body)
    local w = wrap(fx.body)
    local saved = coroutine.resume
    local own = function(c, ...) return resume(c, ...) end
    local prof = assert(perf.profile(function()
      for _ = 1, 3 do assert(resume(co, 1)) end
      for _ = 1, 3 do w(1) end
      coroutine.resume = own      -- luacheck: ignore 122
      local ok, err = pcall(function()
        local c2 = coroutine.create(fx.body)
        for _ = 1, 3 do assert(coroutine.resume(c2, 1)) end
      end)
      coroutine.resume = saved    -- luacheck: ignore 122
      assert(ok, err)
    end, { event = OPENAT }))
    assert.equal(9, prof.samples)
    assert.equal(9, (charged(prof, BODY, "%(" .. here .. "%d+%)")))
    unhooked(co)
  end)

  test("lua_resume from C, of a coroutine made before profiling", function()
    local co = coroutine.create(fx.body)
    local co2 = coroutine.create(fx.body)
    assert(rc.resume(co2, 2))                -- started before profiling
    local prof = assert(perf.profile(function()
      for _ = 1, 4 do assert(rc.resume(co, 3)) end
      assert.equal(5, rc.drive(co2, 5))
    end, { event = OPENAT }))
    assert.equal(22, prof.samples)
    -- under the line that called the C function that resumed (whose own
    -- time goes to that line)
    local n, misplaced = charged(prof, BODY, "%(" .. here .. "%d+%)")
    assert.equal(22, n)
    assert.same({}, misplaced)
    unhooked(co, co2)
  end)

  test("nested coroutines: each under the line of the one that resumed it", function()
    local inner = coroutine.create(fx.body)
    local outer = coroutine.wrap(fx.outer)
    local prof = assert(perf.profile(function()
      for _ = 1, 3 do outer(2, inner) end
    end, { event = OPENAT }))
    assert.equal(12, prof.samples)
    local n, misplaced = charged(prof, BODY, "%(" .. FX .. ":15%)")
    assert.equal(6, n)
    assert.same({}, misplaced)
    assert.equal(6, (charged(prof, "(" .. FX .. ":14)", "%(" .. here .. "%d+%)")))
    unhooked(inner)
  end)

  test("a coroutine that dies by an error before its hook ran keeps no hook", function()
    -- io.lines opens (the overflow arms the coroutine), fails, raises from
    -- C: the coroutine never runs another VM step
    local co = coroutine.create(function() for _ in io.lines("/nonexistent/x") do end end)
    local prof = assert(perf.profile(function()
      assert.is_false((coroutine.resume(co)))
    end, { event = OPENAT }))
    assert.equal(1, prof.samples + prof.lost)
    unhooked(co)
  end)

  test("a thread collected while armed is not touched when the profiler stops", function()
    local p <close> = assert(perf.profiler { event = OPENAT })
    p:start()
    for _ = 1, 50 do
      local co = coroutine.create(function() for _ in io.lines("/nonexistent/x") do end end)
      coroutine.resume(co)
    end
    collectgarbage()
    collectgarbage()
    local prof = p:stop()
    assert.equal(50, prof.samples + prof.lost)
    unhooked()
  end)

  test("a coroutine made inside another while profiling, in cpu-clock samples too", function()
    local prof = assert(perf.profile(function()
      local co = coroutine.wrap(function()
        local c = coroutine.create(fx.body)
        for _ = 1, 6 do assert(coroutine.resume(c, 1)) end
      end)
      co()
    end, { event = OPENAT }))
    assert.equal(6, prof.samples)
    assert.equal(6, (charged(prof, BODY)))
  end)
end)
