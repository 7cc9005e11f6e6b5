-- The profiler's hook leaves the interrupted frame as it found it: deep
-- call-result and vararg code computes the same under every way of
-- profiling as without a profiler, and so does a real program (luacheck
-- over penlight). Issue 26 item 1: a hook that made a to-be-closed slot
-- (a luaL_Buffer past LUAL_BUFFERSIZE) in the interrupted function's frame
-- made its `return x` to a caller asking for three leave stale values in
-- the missing two.

local perf = require "perf"
local H = require "helpers"

local DEPTH = 60              -- deep enough for a key past LUAL_BUFFERSIZE

local function one(x) return x end
local function none() end
local function count(...) return select("#", ...) end
local function pass(...) return ... end
local function pack_back(...) local t = table.pack(...) return table.unpack(t, 1, t.n) end

-- The work: calls whose missing results must be nil, varargs whose counts
-- must hold, allocations (alloc mode) and opens (the tracepoint). Returns
-- what it computed: a checksum and the number of wrong results.
local function leaf(rounds)
  local sum, wrong = 0, 0
  for i = 1, rounds do
    local t = { i }
    local a, b, c = one(t[1])
    if b ~= nil or c ~= nil then wrong = wrong + 1 end
    local x, y = none()
    if x ~= nil or y ~= nil then wrong = wrong + 1 end
    local n = count(pass(a, nil, nil))
    if n ~= 3 then wrong = wrong + 1 end
    local p, q, r, s = pack_back(i, nil)
    if p ~= i or q ~= nil or r ~= nil or s ~= nil then wrong = wrong + 1 end
    sum = sum + a + n
    if i % 2000 == 0 then io.open("/dev/null"):close() end
  end
  return sum, wrong
end

local function deep(n, rounds)
  if n == 0 then return leaf(rounds) end
  local sum, wrong = deep(n - 1, rounds)
  return sum, wrong
end

local ROUNDS = 60000

local MODES = {
  { "cpu-clock at 20000 Hz", { event = "cpu-clock", freq = 20000 } },
  { "task-clock at 4999 Hz, native chains", { event = "task-clock", freq = 4999, native = true } },
  { "the timer at 4999 Hz", { event = "timer", freq = 4999 } },
  { "a tracepoint at period 1", { event = "syscalls:sys_enter_openat" }, "tracefs" },
  { "cpu-clock with counters", { freq = 4999, counters = { "page-faults", "context-switches" } } },
  { "the timer with counters", { event = "timer", freq = 4999, counters = { "page-faults" } } },
  { "alloc every 512 bytes", { mode = "alloc", period = 512 } },
  { "alloc with counters", { mode = "alloc", period = 4096, counters = { "page-faults" } } },
  { "wall at 4999 Hz", { mode = "wall", freq = 4999 } },
  { "off-cpu", { mode = "off-cpu" } },
}

describe("the profiler's hook", function()
  local want_sum, want_wrong = deep(DEPTH, ROUNDS)

  it("computes nothing wrong unprofiled (the reference)", function()
    assert.equal(0, want_wrong)
  end)

  for _, m in ipairs(MODES) do
    local name, opts, needs = m[1], m[2], m[3]
    local test = (needs ~= "tracefs" or perf.capabilities().tracefs) and it or pending
    test("changes nothing 60 frames deep: " .. name, function()
      local prof, sum, wrong = assert(perf.profile(deep, opts, DEPTH, ROUNDS))
      assert.same({ want_sum, 0 }, { sum, wrong })
      if opts.mode ~= "off-cpu" then   -- context switches need not happen
        assert.is_true(prof.samples > 0, "no sample taken")
      end
      if opts.event == "syscalls:sys_enter_openat" then
        assert.equal(ROUNDS // 2000, prof.samples)
      end
    end)
  end

  it("the stacks it charged at that depth are whole (more than LUAL_BUFFERSIZE bytes)", function()
    local prof = assert(perf.profile(deep, { event = "cpu-clock", freq = 4999 }, DEPTH, ROUNDS))
    local deepest = 0
    for _, s in ipairs(prof.stacks) do deepest = math.max(deepest, #s.frames) end
    assert.is_true(deepest > DEPTH, deepest)
  end)
end)

-- luacheck over penlight, in a child interpreter, with and without the
-- profiler: the same report and exit status.
describe("a real program under the profiler", function()
  local luacheck = "/usr/share/lua/5.1/luacheck/main.lua"
  local penlight = "/usr/share/lua/5.4/pl"
  local have = io.open(luacheck) and io.open(penlight .. "/init.lua")
  local test = have and it or pending

  -- The child runs luacheck's main in a coroutine whose os.exit yields
  -- the code, profiled with opts (nil: not profiled); prints the exit
  -- status last.
  local function run(opts)
    local code = ([[
      package.path = package.path .. ";/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua"
      arg = { [0] = "luacheck", "--no-config", "--no-color", "-q", %q }
      local perf = require "perf"
      local opts = %s
      local function main()
        local exit = os.exit
        os.exit = coroutine.yield
        local co = coroutine.create(dofile)
        local ok, code = coroutine.resume(co, %q)
        os.exit = exit
        assert(ok, code)
        return coroutine.status(co) == "dead" and 0 or code
      end
      local status
      if opts then
        local prof
        prof, status = assert(perf.profile(main, opts))
        io.write("status ", tostring(status), "\n")
        assert(prof.samples > 0, "no sample")
      else
        status = main()
        io.write("status ", tostring(status), "\n")
      end
    ]]):format(penlight, opts or "nil", luacheck)
    return H.run_lua(code)
  end

  test("luacheck over penlight reports the same at 4999 Hz, with the timer and in alloc mode", function()
    local want = run(nil)
    assert.truthy(want:find("Total: %d+ warnings / 0 errors in %d+ files\nstatus 1\n$"), want)
    for _, opts in ipairs { "{ freq = 4999 }", "{ event = 'timer', freq = 4999 }",
      "{ mode = 'alloc', period = 4096 }" } do
      assert.equal(want, run(opts), opts)
    end
  end)
end)
