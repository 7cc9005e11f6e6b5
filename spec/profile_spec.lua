-- perf.profile and perf.profiler: samples charged to Lua functions and
-- lines, exact where the kernel is (a tracepoint sampled at every hit).

local perf = require "perf"
local H = require "helpers"

local FX = "spec/fixtures/profiled.lua"
local fx = dofile(FX)
local OPENAT = "syscalls:sys_enter_openat"
local caps = perf.capabilities()
local with_tracefs = caps.tracefs and it or pending

local find = H.find

local function folded_total(text)
  local n = 0
  for count in text:gmatch(" (%d+)\n") do n = n + tonumber(count) end
  return n
end

local function folded_lines(text)
  local t = {}
  for line, count in text:gmatch("([^\n]*) (%d+)\n") do t[line] = tonumber(count) end
  return t
end

describe("perf.profile", function()
  with_tracefs("charges every openat to the function and line that called io.open", function()
    local prof, r1, r2 = assert(perf.profile(function(a, b)
      fx.both()
      return a + b, "done"
    end, { event = OPENAT }, 2, 3))
    assert.same({ 5, "done" }, { r1, r2 })
    assert.equal(40, prof.samples)
    assert.equal(0, prof.lost)
    assert.equal(OPENAT, prof.event)
    assert.equal(1, prof.period)
    assert.is_nil(prof.freq)

    local fns = prof:functions()
    local thirty = assert(find(fns, { source = FX, line = 5 }))
    assert.same({ "thirty", 30, 30 }, { thirty.name, thirty.self, thirty.total })
    local ten = assert(find(fns, { source = FX, line = 11 }))
    assert.same({ "ten", 10, 10 }, { ten.name, ten.self, ten.total })
    local both = assert(find(fns, { source = FX, line = 18 }))
    assert.same({ 0, 40 }, { both.self, both.total })
    assert.equal(thirty, fns[1])                   -- most self first
    assert.equal(ten, fns[2])

    local lines = prof:lines()
    assert.equal(2, #lines)
    assert.same({ source = FX, line = 7, count = 30, name = "thirty" }, lines[1])
    assert.same({ source = FX, line = 13, count = 10, name = "ten" }, lines[2])

    -- the profiler's own frames are not charged: the stacks start in fn
    local folded = prof:folded()
    assert.equal(prof.samples, folded_total(folded))
    local stacks = folded_lines(folded)
    local root = next(stacks):match("^[^;]*")
    assert.matches("^<spec/profile_spec.lua:%d+> %(spec/profile_spec.lua:%d+%)$", root)
    assert.equal(30, stacks[root .. ";both (" .. FX .. ":19);thirty (" .. FX .. ":7)"])
    assert.equal(10, stacks[root .. ";both (" .. FX .. ":20);ten (" .. FX .. ":13)"])
  end)

  with_tracefs("stays exact over many runs and sizes", function()
    for _, n in ipairs { 1, 7, 100 } do
      local prof = assert(perf.profile(function()
        for _ = 1, n do io.open("/dev/null"):close() end
      end, { event = OPENAT }))
      assert.equal(n, prof.samples)
      assert.equal(0, prof.lost)
      assert.equal(n, prof:lines()[1].count)
    end
  end)

  with_tracefs("charges the coroutine that was running, joined under its resumer", function()
    local resume, wrap = coroutine.resume, coroutine.wrap
    local prof = assert(perf.profile(function()
      local w = coroutine.wrap(fx.inner)
      for _ = 1, 4 do w() end
      local co = coroutine.create(fx.inner)
      for _ = 1, 4 do assert(coroutine.resume(co)) end
      io.open("/dev/null"):close()
    end, { event = OPENAT }))
    assert.equal(9, prof.samples)
    local inner = assert(find(prof:lines(), { source = FX, line = 48 }))
    assert.equal(8, inner.count)
    local fn = assert(find(prof:functions(), { source = FX, line = 46 }))
    assert.same({ 8, 8 }, { fn.self, fn.total })
    -- each coroutine's stack hangs under the line that resumed it
    local n = 0
    for line, count in pairs(folded_lines(prof:folded())) do
      if line:find(FX .. ":48)", 1, true) then
        assert.matches("^<spec/profile_spec.lua:%d+> %(spec/profile_spec.lua:%d+%);<" .. FX:gsub("%p", "%%%0") .. ":46>", line)
        n = n + count
      end
    end
    assert.equal(8, n)
    -- the library functions are given back
    assert.equal(resume, coroutine.resume)
    assert.equal(wrap, coroutine.wrap)
  end)

  it("splits CPU time 3:1 between two functions doing 3:1 of the work", function()
    local prof = assert(perf.profile(fx.split, nil, 4))
    assert.equal("cpu-clock", prof.event)
    assert.equal(999, prof.freq)
    local three = assert(find(prof:functions(), { source = FX, line = 29 }))
    local one = assert(find(prof:functions(), { source = FX, line = 34 }))
    assert.is_true(three.total + one.total > 40, "too few samples: " .. prof.samples)
    local ratio = three.total / one.total
    assert.is_true(ratio > 2 and ratio < 4.5, ("3:1 of the work gave %d:%d"):format(three.total, one.total))
    -- the spin loop's lines, under each caller
    assert.equal(prof.samples, folded_total(prof:folded()))
    assert.is_true(prof.samples >= three.total + one.total)
  end)

  it("counts in a C function's Total every sample taken while it was on the stack", function()
    -- table.sort's own time is charged to the line calling it (its self
    -- there), the comparator's to the comparator: sort's Total is both
    local t = {}
    for i = 1, 100000 do t[i] = (i * 7919) % 100003 end
    local function cmp(a, b) return a < b end
    local sort_line = debug.getinfo(1, "l").currentline + 4
    local prof = assert(perf.profile(function()
      for _ = 1, 3 do
        local c = table.move(t, 1, #t, 1, {})
        table.sort(c, cmp)
      end
    end))
    local src = debug.getinfo(1, "S").short_src
    local sort = assert(find(prof:functions(), { name = "sort", source = "[C]" }))
    local comparator = assert(find(prof:functions(), { source = src, line = sort_line - 5 }))
    local at_line = find(prof:lines(), { source = src, line = sort_line })
    assert.is_true(at_line and at_line.count > 0, "no sample in sort's own code")
    -- all but the samples of the line's own instructions (the call's set-up)
    assert.is_true(sort.total <= at_line.count + comparator.total)
    assert.is_true(sort.total >= comparator.total + 0.9 * at_line.count,
      ("sort %d, line %d, comparator %d"):format(sort.total, at_line.count, comparator.total))
    assert.equal(0, sort.self)
  end)

  it("keeps the root and the leaf of a stack deeper than 256 frames, the middle elided", function()
    local function rec(n)
      if n == 0 then
        local x = 0
        for i = 1, 3e6 do x = x + i end
        return x
      end
      return rec(n - 1) + 0                          -- no tail call: 400 frames
    end
    local root_line = debug.getinfo(1, "l").currentline + 1
    local prof = assert(perf.profile(function() local x = rec(400) return x end))
    local src = debug.getinfo(1, "S").short_src
    assert.is_true(prof.samples > 0)
    local root = assert(find(prof:functions(), { source = src, line = root_line }))
    assert.equal(prof.samples, root.total)           -- it was 0: the root was dropped
    local deepest = 0
    for line in prof:folded():gmatch("[^\n]+") do
      local labels = {}
      local stack, n = line:match("^(.*) (%d+)$")
      for label in (stack .. ";"):gmatch("(.-);") do labels[#labels + 1] = label end
      assert.matches("^<" .. src:gsub("%p", "%%%0") .. ":" .. root_line .. ">", labels[1])
      assert.matches("^rec ", labels[#labels])
      -- at the bottom (all but samples of the calls going down and back):
      -- the root, 31 rec, the gap (402 frames less 256 kept), 224 from the leaf
      if labels[33] == "[146 frames elided]" then
        assert.equal(257, #labels)
        deepest = deepest + math.tointeger(tonumber(n))
      end
    end
    assert.is_true(deepest >= 0.9 * prof.samples, ("%d of %d samples at the bottom"):format(deepest, prof.samples))
    assert.matches("^%d+ samples had stacks deeper than 256 frames: their middle frames are elided", prof.note)
    assert.matches("middle frames are elided", tostring(prof))
  end)

  with_tracefs("counts C functions the sample is in, exactly at a tracepoint", function()
    local prof = assert(perf.profile(function()
      for _ = 1, 10 do pcall(io.open, "/dev/null") end
    end, { event = OPENAT }))
    assert.equal(10, prof.samples)
    -- pcall, and io.open under it (unnamed: called from C)
    local c = {}
    for _, f in ipairs(prof:functions()) do
      if f.source == "[C]" then c[#c + 1] = ("%s %d %d"):format(f.name, f.total, f.self) end
    end
    table.sort(c)
    assert.same({ "? 10 0", "pcall 10 0" }, c)
    assert.equal(10, prof:lines()[1].count)      -- the line calling pcall
  end)

  it("fails like perf.open for an event this machine lacks, without running fn #hardware", function()
    if H.needs_no_pmu(pending) then return end
    local ran = false
    local msg, errno = H.fails(perf.profile(function() ran = true end, { event = "cycles" }))
    H.assert_has('perf.profile "cycles": No such file or directory (ENOENT)', msg)
    H.assert_has("no hardware PMU", msg)
    assert.equal(2, errno)
    assert.is_false(ran)
    msg = H.fails(perf.profiler { event = "cache-misses" })
    H.assert_has("ENOENT", msg)
  end)

  it("raises on misuse", function()
    local function err(...)
      local ok, e = pcall(perf.profile, ...)
      assert.is_false(ok)
      return e
    end
    H.assert_has("function expected, got nil", err(nil))
    H.assert_has("unknown option 'evnt' (did you mean 'event'?)", err(print, { evnt = "cpu-clock" }))
    H.assert_has("unknown option 'frequency' (did you mean 'freq'?)", err(print, { frequency = 99 }))
    H.assert_has("give freq or period, not both", err(print, { freq = 10, period = 10 }))
    H.assert_has("freq must be a positive integer", err(print, { freq = 0 }))
    H.assert_has("unknown event", err(print, { event = "no-such-event" }))
  end)

  it("takes freq and period, and defaults by event", function()
    local prof = assert(perf.profile(function() end, { freq = 250 }))
    assert.same({ 250 }, { prof.freq, prof.period })
    prof = assert(perf.profile(function() end, { event = "task-clock", period = 100000 }))
    assert.same({ 100000 }, { prof.period, prof.freq })
    prof = assert(perf.profile(function() end, { event = "page-faults" }))
    assert.equal(1, prof.period)
    prof = assert(perf.profile(function() end, { event = "task-clock" }))
    assert.equal(999, prof.freq)
  end)

  with_tracefs("samples a tracepoint every `period` hits", function()
    -- with "period" in sample_type a software event samples every hit
    local prof = assert(perf.profile(function()
      for _ = 1, 30 do io.open("/dev/null"):close() end
    end, { event = OPENAT, period = 3 }))
    assert.equal(10, prof.samples)
  end)

  with_tracefs("propagates an error in fn after stopping", function()
    local resume = coroutine.resume
    local e = {}
    local ok, err = pcall(perf.profile, function()
      io.open("/dev/null"):close()
      error(e)
    end, { event = OPENAT })
    assert.is_false(ok)
    assert.equal(e, err)
    assert.is_false(perf.core.profile_running())
    assert.equal(resume, coroutine.resume)
    ok, err = pcall(perf.profile, function() error("boom") end)
    assert.is_false(ok)
    assert.matches("profile_spec.lua:%d+: boom$", err)
    -- and the next profile works
    assert.equal(3, perf.profile(function()
      for _ = 1, 3 do io.open("/dev/null"):close() end
    end, { event = OPENAT }).samples)
  end)

  it("refuses to nest, clearly, and stops the outer profiler", function()
    local ok, err = pcall(perf.profile, function()
      perf.profile(function() end)
    end)
    assert.is_false(ok)
    H.assert_has("another profiler is running: profilers do not nest", err)
    assert.is_false(perf.core.profile_running())
    local p <close> = assert(perf.profiler())
    p:start()
    local p2 <close> = assert(perf.profiler())
    ok, err = pcall(p2.start, p2)
    assert.is_false(ok)
    H.assert_has("profilers do not nest", err)
    p:stop()
    assert.is_true(p2:start())
    p2:stop()
  end)

  with_tracefs("keeps a debug hook the program set", function()
    local calls = 0
    local function count() calls = calls + 1 end
    debug.sethook(count, "", 100)
    local prof = perf.profile(function()
      for _ = 1, 20 do io.open("/dev/null"):close() end
    end, { event = OPENAT })
    local h, mask, n = debug.gethook()
    debug.sethook()
    assert.equal(20, prof.samples)
    assert.same({ count, "", 100 }, { h, mask, n })
    assert.is_true(calls > 0)
  end)

  it("lets fn call os.exit, with or without closing the state", function()
    for _, close in ipairs { "false", "true" } do
      local out = H.run_lua(("local perf = require 'perf'\n"
        .. "perf.profile(function() local x = 0 for i = 1, 3e6 do x = x + i end "
        .. "io.write('ran ') io.stdout:flush() os.exit(7, %s) end, { freq = 5000 })\n"
        .. "print('not reached')"):format(close), nil)
      assert.equal("ran ", out)
    end
    -- the exit status
    for _, close in ipairs { "false", "true" } do
      local tmp = os.tmpname()
      local f = assert(io.open(tmp, "w"))
      f:write(("package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path\n"
        .. "package.cpath = %q .. ';' .. package.cpath\n"
        .. "require('perf').profile(function() local x = 0 for i = 1, 3e6 do x = x + i end os.exit(7, %s) end, { freq = 5000 })\n")
        :format(os.getenv("PERF_LUA_CPATH") or "./?.so", close))
      f:close()
      local ok, how, code = os.execute(("%s%s %s"):format(H.core_env, H.lua, tmp))
      os.remove(tmp)
      assert.same({ nil, "exit", 7 }, { ok, how, code })
    end
  end)
end)

describe("perf.profile with native = true", function()
  it("joins the native frames of time in C under the Lua line that called it", function()
    local prof = assert(perf.profile(fx.copies, { native = true }, 12))
    assert.is_true(prof.native)
    local line = assert(find(prof:lines(), { source = FX, line = 56 }))
    assert.is_true(line.count > 0.8 * prof.samples, ("%d of %d at string.rep's line"):format(line.count, prof.samples))
    -- string.rep's copying happens in libc (memcpy), below the Lua line
    local under = 0
    for stack, count in pairs(folded_lines(prof:folded())) do
      local after = stack:match("%(" .. FX:gsub("%p", "%%%0") .. ":56%);(.+)$")
      if after then under = under + count end
    end
    assert.is_true(under > 0.3 * prof.samples, ("%d of %d samples show native frames"):format(under, prof.samples))
    assert.equal(prof.samples, folded_total(prof:folded()))
  end)

  with_tracefs("stays exact, each openat with the C frames that made it", function()
    local p <close> = assert(perf.profiler { event = OPENAT, native = true })
    p:start()
    fx.both()
    local prof = p:stop()
    assert.equal(40, prof.samples)
    assert.equal(40, prof.samples + prof.lost)
    assert.equal(40, (p.event:overflows()))
    assert.equal(30, find(prof:lines(), { line = 7 }).count)
    assert.equal(10, find(prof:lines(), { line = 13 }).count)
    local native = 0
    for stack, count in pairs(folded_lines(prof:folded())) do
      if stack:find("%(" .. FX:gsub("%p", "%%%0") .. ":%d+%);[^;]") then native = native + count end
    end
    assert.equal(40, native)
  end)
end)

describe("the profile", function()
  local prof
  setup(function()
    prof = assert(perf.profile(function()
      fx.split(2)
      fx.both()
    end, { event = "task-clock", freq = 2000 }))
  end)

  it("writes folded stacks, an SVG flame graph and speedscope JSON", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    local function read(name)
      local f = assert(io.open(dir .. "/" .. name))
      local s = f:read("a")
      f:close()
      return s
    end
    assert.is_true(prof:write(dir .. "/p.folded"))
    assert.equal(prof:folded(), read("p.folded"))
    assert.is_true(prof:write(dir .. "/p.txt"))
    assert.equal(prof:folded(), read("p.txt"))
    assert.is_true(prof:write(dir .. "/p.svg"))
    local svg = read("p.svg")
    assert.matches("^<%?xml", svg)
    H.assert_has("Flame graph: task-clock at 2000 Hz", svg)
    H.assert_has(("all (%d samples, 100.00%%)"):format(prof.samples), svg)
    assert.is_true(prof:write(dir .. "/p.json"))
    local doc = require("dkjson").decode(read("p.json"))
    assert.equal("sampled", doc.profiles[1].type)
    local sum = 0
    for _, w in ipairs(doc.profiles[1].weights) do sum = sum + w end
    assert.equal(prof.samples, sum)
    assert.is_true(prof:write(dir .. "/anything", "svg"))
    assert.equal(svg, read("anything"))
    local ok, err = pcall(prof.write, prof, dir .. "/p.png")
    assert.is_false(ok)
    H.assert_has("cannot tell the format", err)
    ok, err = pcall(prof.write, prof, dir .. "/p", "svgz")
    assert.is_false(ok)
    H.assert_has("unknown format 'svgz' (did you mean 'svg'?)", err)
    H.fails(prof:write("/nonexistent/dir/p.svg"))
    os.execute("rm -rf " .. dir)
  end)

  it("prints a report like perf report's", function()
    local text = tostring(prof)
    assert.matches("^# perf.profile: task%-clock at 2000 Hz\n# %d+ samples, 0 lost\n", text)
    H.assert_has("#    Self    Total  Function", text)
    H.assert_has("  0.00%  ", text)
    H.assert_has("spin  (" .. FX .. ":23)", text)
    H.assert_has(FX .. ":25  spin", text)
    H.assert_has("#    Self  Line", text)
  end)
end)

describe("perf.profiler", function()
  with_tracefs("starts and stops, counting every overflow as a sample or lost", function()
    local p <close> = assert(perf.profiler { event = OPENAT })
    assert.matches('^perf.profiler "syscalls:sys_enter_openat" %(period 1, stopped, 0 samples%)$', tostring(p))
    assert.is_true(p:start())
    assert.matches("running", tostring(p))
    fx.thirty()
    local prof = p:stop()
    io.open("/dev/null"):close()                 -- not profiled
    assert.equal(30, prof.samples)
    p:start()
    fx.ten()
    prof = p:stop()
    assert.equal(40, prof.samples)               -- samples so far
    local overflows = p.event:overflows()
    assert.equal(overflows, prof.samples + prof.lost)
    assert.equal(40, overflows)
    assert.equal(10, find(prof:lines(), { line = 13 }).count)
    -- the stacks reach the root of the thread that started
    local chunk = false
    for line in pairs(folded_lines(prof:folded())) do
      if line:find("^[^;]*busted") or line:find("^main chunk") then chunk = true end
    end
    assert.is_true(chunk)
  end)

  it("counts every cpu-clock overflow as a sample or lost, with or without native chains", function()
    for _, native in ipairs { false, true } do
      local p <close> = assert(perf.profiler { event = "cpu-clock", freq = 2000, native = native })
      p:start()
      fx.split(2)
      local prof = p:stop()
      local overflows = p.event:overflows()
      assert.is_true(overflows > 20, "too few overflows: " .. overflows)
      assert.equal(overflows, prof.samples + prof.lost)
      assert.equal(prof.samples, folded_total(prof:folded()))
      assert.equal(2000, prof.freq)
    end
  end)

  it("is closed by <close> and close, idempotently", function()
    local ev
    do
      local p <close> = assert(perf.profiler())
      ev = p.event
      p:start()
    end
    assert.is_false(perf.core.profile_running())
    assert.matches("closed", tostring(ev))
    local p = assert(perf.profiler())
    assert.is_true(p:close())
    assert.is_true(p:close())
    assert.matches("%(closed%)$", tostring(p))
    local ok, err = pcall(p.start, p)
    assert.is_false(ok)
    H.assert_has("attempt to use a closed perf profiler", err)
  end)

  it("is stopped and released by the garbage collector when never stopped", function()
    local resume = coroutine.resume
    local before = H.fd_count()
    do
      local p = assert(perf.profiler { event = "task-clock", freq = 2000 })
      p:start()
      local x = 0
      for i = 1, 1e6 do x = x + i end
    end
    collectgarbage()
    collectgarbage()
    assert.is_false(perf.core.profile_running())
    assert.equal(resume, coroutine.resume)
    assert.is_nil(debug.gethook())
    assert.equal(before, H.fd_count())
    local prof = assert(perf.profile(fx.one))      -- and profiling works again
    assert.is_true(prof.samples >= 0)
  end)
end)

describe("perf-lua profile", function()
  local function run(args)
    local p = io.popen(("%s bin/perf-lua profile %s 2>&1; echo \"exit $?\""):format(H.example, args))
    local out = p:read("a")
    p:close()
    return out
  end

  with_tracefs("runs a script with its arguments and prints the report", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    local out = run("-e syscalls:sys_enter_openat -o " .. dir .. "/w.svg examples/wordfreq.lua 20000")
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile: syscalls:sys_enter_openat, period 1\n# %d+ samples, 0 lost\n", out)
    -- save() opens the file once per distinct word: all its samples at that line
    assert.matches("\n%s+100.00%%%s+100.00%%  save  %(examples/wordfreq.lua:35%)\n", out)
    assert.matches("examples/wordfreq.lua:38  save\n", out)
    H.assert_has("# written to " .. dir .. "/w.svg", out)
    local f = assert(io.open(dir .. "/w.svg"))
    assert.matches("^<%?xml", f:read("a"))
    f:close()
    os.execute("rm -rf " .. dir)
    out = run("-F 500 --native examples/wordfreq.lua 20000")
    assert.matches("# perf.profile: cpu%-clock at 500 Hz\n", out)
    H.assert_has("native frames", out)
  end)

  it("explains its usage and an event it cannot open", function()
    assert.matches("^perf%-lua profile: no script given\n\n usage: perf%-lua profile %[%-e EVENT%]", run(""))
    assert.matches("exit 129\n$", run("-F 10 -c 10 examples/wordfreq.lua"))
    assert.matches("unknown option '%-x'", run("-x examples/wordfreq.lua"))
    if not caps.pmu then
      local out = run("-e cycles examples/wordfreq.lua")
      H.assert_has("no hardware PMU", out)
      assert.matches("exit 1\n$", out)
    end
  end)
end)

describe("perf.profile's reports", function()
  -- two openat calls at two lines of one function
  local function two_lines()
    io.open("/dev/null"):close()
    io.open("/dev/null"):close()
  end
  local SRC = debug.getinfo(two_lines, "S")

  it("never charge the profiler's own code: starting and stopping it allocate outside the profile", function()
    local function work() local t = {} for j = 1, 50 do t[j] = { j } end return t end
    local prof = assert(perf.profile(work, { mode = "alloc", period = 1 }))
    local folded = prof:folded()
    -- one frame, work's, in every stack
    for line in folded:gmatch("[^\n]+") do
      assert.matches("^[^;]* %(spec/profile_spec%.lua:%d+%) %d+$", line, folded)
    end
    for _, f in ipairs(prof:functions()) do
      assert.is_nil(f.source:find("perf/profiling/", 1, true), folded)
    end
  end)

  with_tracefs("say '1 more line', not '1 more lines'", function()
    local prof = assert(perf.profile(two_lines, { event = OPENAT }))
    assert.equal(2, #prof:lines())
    local report = prof:report(1)
    H.assert_has("\n  ... 1 more line\n", report)
  end)

  with_tracefs("in speedscope: a function is one frame, its lines frames of their own, the unit the profile's", function()
    local prof = assert(perf.profile(two_lines, { event = OPENAT }))
    local doc = require("dkjson").decode(prof:speedscope())
    assert.equal("none", doc.profiles[1].unit)
    local names = {}
    for _, f in ipairs(doc.shared.frames) do names[#names + 1] = f.name end
    table.sort(names)
    local src = SRC.short_src
    local fn = ("<%s:%d>"):format(src, SRC.linedefined)   -- called by pcall: no name
    assert.same({ fn, src .. ":" .. (SRC.linedefined + 1), src .. ":" .. (SRC.linedefined + 2) }, names)
    for _, f in ipairs(doc.shared.frames) do
      if f.name == fn then assert.equal(SRC.linedefined, f.line) end
    end
    local alloc = assert(perf.profile(function() return { {}, {} } end, { mode = "alloc", period = 1 }))
    assert.equal("bytes", require("dkjson").decode(alloc:speedscope()).profiles[1].unit)
    local wall = assert(perf.profile(function() os.execute("sleep 0.05") end, { mode = "wall" }))
    assert.equal("nanoseconds", require("dkjson").decode(wall:speedscope()).profiles[1].unit)
  end)
end)
