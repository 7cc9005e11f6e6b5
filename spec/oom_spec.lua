-- Out of memory: each public operation runs with an allocator that fails
-- after n allocations (spec/fixtures/memlimit.c), for n = 0, 1, 2, ...
-- until it succeeds. Every failed try says "not enough memory" (Lua's
-- message for a failed allocation, raised or returned) and, once garbage
-- is collected, leaves no descriptor, perf mapping or child process
-- behind; under `make asan` it also leaks nothing and touches no freed
-- memory.
local H = require "helpers"
local perf = require "perf"
local core = require "perf.core"

local mem, dir = H.load_fixture("memlimit")
local ERRMEM = "not enough memory"

-- Lines of /proc/self/maps that map a perf event.
local function perf_maps()
  local n = 0
  for line in io.lines("/proc/self/maps") do
    if line:find("perf_event", 1, true) then n = n + 1 end
  end
  return n
end

-- Processes whose parent is this one (its only thread's children).
local function children()
  local f = assert(io.open(("/proc/self/task/%d/children"):format(H.PID)))
  local n = select(2, f:read("a"):gsub("%d+", ""))
  f:close()
  return n
end

-- Open descriptors (the directory's own one included).
local function fds()
  return #assert(core.listdir("/proc/self/fd"))
end

local function state()
  collectgarbage()          -- a full cycle runs the finalizers too
  return { fds = fds(), perf_maps = perf_maps(), children = children() }
end

-- The allocations fn makes when nothing fails.
local function allocations(fn)
  mem.count()
  local ok, err = pcall(fn)
  local n = mem.disarm()
  assert(ok, err)
  return n
end

-- The values of n to try for an operation that needs `total` allocations:
-- each of the first 100, then up to 100 spread evenly over the rest (fewer
-- for the largest operations, so that the tries do about as much as 30
-- whole runs of a million allocations), and the last few.
local FIRST = 100
local function points(total)
  local SPREAD = math.max(10, math.min(100, 30000000 // (total * 10)))
  local list, seen = {}, {}
  local function add(n)
    if n >= 0 and n <= total and not seen[n] then
      seen[n] = true
      list[#list + 1] = n
    end
  end
  for n = 0, FIRST - 1 do add(n) end
  local step = math.max(1, (total - FIRST) // SPREAD)
  for n = FIRST, total, step do add(n) end
  for n = total - 5, total do add(n) end
  table.sort(list)
  return list
end

-- Runs fn with the allocator failing after n allocations for each n of
-- points(): fn raises or returns nil, message on failure. Asserts what a
-- failed try leaves; returns the number of failed tries. After each try
-- Lua code runs with the limit still in place: whatever fn left armed (a
-- hook) would run there and, needing memory, raise outside any pcall.
local function survives(fn)
  assert(fn())                    -- loads what it needs once, outside the test
  local before = state()
  local total = allocations(fn)
  local failed = 0
  local hook = debug.gethook()
  for _, n in ipairs(points(total)) do
    mem.arm(n)
    local ok, res, msg = pcall(fn)
    -- instructions that allocate nothing (no call either: a failed pcall
    -- may have freed the CallInfos a call would reuse)
    local x = 0
    for i = 1, 1000 do x = x + i % 3 end
    mem.disarm()
    assert.equal(1000, x)
    assert.equal(hook, debug.gethook(), ("a hook is left after %d allocations of %d"):format(n, total))
    assert.is_false(core.profile_running(), ("a profiler runs after %d allocations of %d"):format(n, total))
    if not ok or not res then
      local err = ok and msg or res
      err = type(err) == "function" and err() or tostring(err)
      failed = failed + 1
      assert(err:find(ERRMEM, 1, true), ("after %d allocations of %d: %s"):format(n, total, err))
      assert.same(before, state(), ("after %d allocations of %d"):format(n, total))
    end
  end
  assert.same(before, state())
  assert.is_true(failed > 0, "no try failed")
  return failed
end

-- Runs body(out) with print, io.stdout and io.stderr writing to the file
-- out, and os.exit raising { exit = code }: how the commands' scripts run
-- in this process.
local function captured(body)
  local out = io.tmpfile()
  local saved = { print = print, stdout = io.stdout, stderr = io.stderr, exit = os.exit }
  local function set(p, stdout, stderr, exit)
    rawset(_G, "print", p)
    rawset(io, "stdout", stdout)
    rawset(io, "stderr", stderr)
    rawset(os, "exit", exit)
  end
  set(function(...)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    out:write(table.concat(t, "\t", 1, t.n), "\n")
  end, out, out, function(code) error({ exit = code }, 0) end)
  local ok, err = pcall(body, out)
  set(saved.print, saved.stdout, saved.stderr, saved.exit)
  out:close()
  if not ok then error(err, 0) end
end

-- A command of perf-lua run in this process, under captured(), writing
-- to `out`: true when it exits 0, else nil and a function giving what it
-- wrote (read once the allocator works again).
local function command(out, args)
  local cli = require "perf.cli"
  return function()
    local from = out:seek("end")
    local ok, code = pcall(cli.main, args)
    if not ok and type(code) == "table" then code = code.exit end
    if code == 0 then return true end
    if not ok and type(code) ~= "number" then error(code, 0) end
    return nil, function()
      out:seek("set", from)
      return out:read("a")
    end
  end
end

local function tmp(name)
  return dir .. "/" .. name
end

describe("out of memory", function()
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("perf.open, ev:read, ev:close", function()
    survives(function()
      local ev <close> = assert(perf.open("task-clock"))
      assert(ev:enable())
      assert(ev:read())
      assert(tostring(ev))
      ev:close()
      return true
    end)
  end)

  it("a group read into a table", function()
    survives(function()
      local g <close> = assert(perf.group { "task-clock", "page-faults", "context-switches" })
      assert(g:enable())
      local t = {}
      assert(g:read(t))
      assert(g:read())
      assert(g:scaled(t))
      return true
    end)
  end)

  it("a ring's records, as tables and as values", function()
    survives(function()
      local ev <close> = assert(perf.open { "syscalls:sys_enter_openat", sample_period = 1,
        sample_type = { "ip", "tid", "time" } })
      local rb <close> = assert(ev:mmap(2))
      assert(ev:enable())
      for _ = 1, 3 do io.open("/dev/null"):close() end
      assert(ev:disable())
      local n = 0
      local iter, st = rb:records()       -- one record as a table,
      if iter(st) then n = n + 1 end
      iter, st = rb:records({})           -- one into a reused table,
      if iter(st) then n = n + 1 end
      for ip in rb:samples("ip", "tid") do n = n + (ip and 1 or 0) end  -- one as values
      assert(n == 3, n)
      return true
    end)
  end)

  it("perf.parse", function()
    survives(function()
      assert(perf.parse("syscalls:sys_enter_openat/period=10,name=x/u"))
      assert(perf.parse("L1-dcache-load-misses:k"))
      assert(perf.parse("{task-clock,page-faults}:u"))
      return true
    end)
  end)

  it("tracepoint formats", function()
    local tracepoint = require "perf.tracepoint"
    survives(function()
      tracepoint.forget()
      local tp = assert(perf.tracepoint("sched:sched_switch"))
      return #tp.fields > 5
    end)
  end)

  it("perf.list", function()
    local list = require "perf.event.list"
    survives(function()
      list.forget()
      return #perf.list("sw") > 5
    end)
  end)

  it("perf.watch", function()
    local s = "watched"
    survives(function()
      local ev_ <close> = assert(perf.watch(perf.addressof(s), { mode = "rw", len = 1 }))
      return true
    end)
  end)

  it("perf.uprobe", function()
    survives(function()
      local ev_ <close> = assert(perf.uprobe("libc", "getenv"))
      return true
    end)
  end)

  it("perf.measure", function()
    survives(function()
      local r, x = perf.measure({ "task-clock", "page-faults" }, function(a) return a + 1 end, 1)
      return r and x == 2
    end)
  end)

  it("perf.stat", function()
    survives(function()
      local r, msg = perf.stat({ "true" }, { "task-clock", "syscalls:sys_enter_openat" })
      if not r then return nil, msg end
      return r.status == 0 and tostring(r)
    end)
  end)

  it("perf.stat with intervals", function()
    survives(function()
      local n = 0
      local r, msg = perf.stat({ "sleep", "0.01" }, { "task-clock" },
        { interval = 5, on_interval = function() n = n + 1 end })
      if not r then return nil, msg end
      return n > 0
    end)
  end)

  it("perf.profile and perf.profiler", function()
    local function work() for _ = 1, 5 do io.open("/dev/null"):close() end end
    survives(function()
      local prof = perf.profile(work, { event = "syscalls:sys_enter_openat" })
      assert(prof.samples == 5, prof.samples)
      assert(tostring(prof))
      local p <close> = assert(perf.profiler { event = "syscalls:sys_enter_openat" })
      p:start()
      work()
      return p:stop().samples == 5
    end)
  end)

  it("perf.record, to a perf.data file", function()
    survives(function()
      local r, msg = perf.record({ "true" }, "syscalls:sys_enter_openat", { output = tmp("r.data") })
      if not r then return nil, msg end
      return r.status == 0 and tostring(r)
    end)
  end)

  it("perf.data: reading a file", function()
    assert(perf.record({ "ls", "/" }, "syscalls:sys_enter_openat",
      { output = tmp("read.data"), stdout = "/dev/null" }))
    survives(function()
      local f <close> = assert(perf.data.open(tmp("read.data")))
      local n = 0
      for rec in f:records() do if rec.type == "sample" then n = n + 1 end end
      for _ in f:samples("ip", "tid") do n = n + 1 end
      return n > 0
    end)
  end)

  it("perf.data: writing a file", function()
    survives(function()
      local set <close> = assert(perf.cpus.open({ "syscalls:sys_enter_openat", sample_period = 1,
        sample_type = { "identifier", "ip", "tid", "time", "cpu", "period" },
        sample_id_all = true, comm = true, mmap2 = true }, { pid = 0 }))
      assert(set:mmap(4))
      local w <close> = assert(perf.data.writer(tmp("w.data"), set))
      assert(w:synthesize(H.PID))
      assert(set:enable())
      for _ = 1, 3 do io.open("/dev/null"):close() end
      assert(set:disable())
      assert(w:write(set))
      return w:close()
    end)
  end)

  it("the commands: stat, list, record, profile", function()
    local script = tmp("work.lua")
    local f = assert(io.open(script, "w"))
    f:write("for _ = 1, 3 do io.open('/dev/null'):close() end\n")
    f:close()
    captured(function(out)
      survives(command(out, { "stat", "-e", "task-clock,syscalls:sys_enter_openat", "--", "true" }))
      survives(command(out, { "list", "sw" }))
      survives(command(out, { "record", "-e", "syscalls:sys_enter_openat", "-o", tmp("c.data"), "--", "true" }))
      survives(command(out, { "profile", "-e", "syscalls:sys_enter_openat", script }))
    end)
  end)
end)
