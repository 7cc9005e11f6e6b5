-- perf.processes: perf.stat counting a running process, one thread or a
-- cgroup (perf stat -p, -t, -G), exactly where the work is known: a
-- process that waits on a fifo, opens 7 files and answers on another fifo
-- while perf.stat's command wakes it and waits for the answer.
local perf = require "perf"
local processes = require "perf.counting.processes"
local H = require "helpers"

local ESRCH = 3

-- A waiting process: its pid, and the command that makes it open `n`
-- files (and the answering fifo) and waits for its answer.
local function waiting_process(n)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir " .. dir .. " && mkfifo " .. dir .. "/go " .. dir .. "/done"))
  local code = ("local f = io.open('%s/go') f:read('l') f:close() "
    .. "for i = 1, %d do io.open('/dev/null'):close() end "
    .. "local d = io.open('%s/done', 'w') d:write('ok\\n') d:close()"):format(dir, n, dir)
  local p = assert(io.popen(("%s -e \"%s\" >/dev/null 2>&1 & echo $!"):format(H.lua, code)))
  local pid = math.tointeger(tonumber(p:read("l")))
  p:close()
  -- until it waits in open(2) for a writer (its start-up opens are done)
  for _ = 1, 500 do
    local f = io.open(("/proc/%d/wchan"):format(pid))
    local where = f and f:read("a")
    if f then f:close() end
    if where == "wait_for_partner" then break end
    os.execute("sleep 0.01")
  end
  local command = { "sh", "-c", ("echo go > %s/go; cat %s/done >/dev/null"):format(dir, dir) }
  local function cleanup()
    os.execute(("kill %d 2>/dev/null; rm -rf %s"):format(pid, dir))
  end
  return pid, command, cleanup
end

-- A process of 4 threads (spec/fixtures/threads_open.c): its main thread
-- in pause(), 3 others waiting to open `n` files each; one of them starts
-- a 5th thread that opens `m`. Returns its pid, its threads' tids by name
-- (main, w0, w1, w2), the command that sets them going and waits for
-- them, and a cleanup function.
local function threaded_process(n, m)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute(("mkdir %s && mkfifo %s/go %s/done && cc -O2 -pthread -o %s/threads_open "
    .. "spec/fixtures/threads_open.c"):format(dir, dir, dir, dir)))
  local p = assert(io.popen(("%s/threads_open %s %d %d >/dev/null 2>&1 & echo $!"):format(dir, dir, n, m)))
  local pid = math.tointeger(tonumber(p:read("l")))
  p:close()
  local tids
  for _ = 1, 500 do                       -- until w0, w1 and w2 wait in open(2)
    tids = {}
    local waiting = 0
    for _, tid in ipairs(require("perf.util.fs").listdir(("/proc/%d/task"):format(pid))) do
      local task = ("/proc/%d/task/%s/"):format(pid, tid)
      local name = (require("perf.util.fs").read(task .. "comm") or ""):match("[^\n]*")
      tids[math.tointeger(tonumber(tid)) == pid and "main" or name] = math.tointeger(tonumber(tid))
      if require("perf.util.fs").read(task .. "wchan") == "wait_for_partner" then waiting = waiting + 1 end
    end
    if waiting == 3 then break end
    os.execute("sleep 0.01")
  end
  local command = { "sh", "-c", ("echo go > %s/go; cat %s/done >/dev/null"):format(dir, dir) }
  local function cleanup()
    os.execute(("kill %d 2>/dev/null; rm -rf %s"):format(pid, dir))
  end
  return pid, tids, command, cleanup
end


describe("perf.stat of a running process (perf.processes)", function()
  it("counts every thread of a process while a command runs, as perf stat -p", function()
    local pid, command, cleanup = waiting_process(7)
    local r, msg = perf.stat({ pid = pid }, { "syscalls:sys_enter_openat", "task-clock" }, { command = command })
    cleanup()
    assert(r, msg)
    assert.are.equal(8, r["syscalls:sys_enter_openat"])    -- 7 files and the answering fifo
    assert.are.equal(8, r[1])
    assert.is_true(r["task-clock"] > 0)
    assert.is_nil(r.status)
    assert.is_true(r.elapsed > 0)
    -- perf stat -p on the same work
    pid, command, cleanup = waiting_process(7)
    local out = os.tmpname()
    os.execute(("perf stat -x, -o %s -p %d -e syscalls:sys_enter_openat -- %s >/dev/null 2>&1")
      :format(out, pid, "sh -c '" .. command[3] .. "'"))
    cleanup()
    local theirs
    for l in io.lines(out) do theirs = theirs or math.tointeger(tonumber(l:match("^(%d+),"))) end
    os.remove(out)
    assert.are.equal(theirs, r[1])
  end)

  it("counts the threads a process runs and those they start, where one perf.open of its pid counts none", function()
    -- 3 threads open 5 files each, a thread one of them starts opens 4, and
    -- 1 more answers: 20; the main thread only waits in pause()
    local pid, tids, command, cleanup = threaded_process(5, 4)
    assert.is_number(tids.w2)
    local main_only <close> = assert(perf.open({ "syscalls:sys_enter_openat", inherit = true }, { pid = pid }))
    assert(main_only:enable())
    local r, msg = perf.stat({ pid = pid }, { "syscalls:sys_enter_openat", "task-clock" }, { command = command })
    cleanup()
    assert(r, msg)
    assert.are.equal(0, main_only:read())   -- the kernel's pid is one thread
    assert.are.equal(20, r[1])
    assert.is_true(r["task-clock"] > 0)
    -- perf stat -p on the same work; one thread, and the thread it starts, as perf stat -t
    local function again(count)
      local p, t, cmd, done = threaded_process(5, 4)
      local result = count(p, t, cmd)
      done()
      return result
    end
    local theirs = again(function(p, _, cmd) return H.perf_stat(cmd, { "syscalls:sys_enter_openat" }, "-p " .. p) end)
    assert.are.equal(20, theirs["syscalls:sys_enter_openat"])
    local w0 = again(function(_, t, cmd) return perf.stat({ tid = t.w0 }, "syscalls:sys_enter_openat", { command = cmd }) end)
    local w1 = again(function(_, t, cmd) return perf.stat({ tid = t.w1 }, "syscalls:sys_enter_openat", { command = cmd }) end)
    assert.are.equal(5 + 4 + 1, w0[1])
    assert.are.equal(5, w1[1])
  end)

  it("gives the counts of each thread with per_thread, and perf-lua stat -p --per-thread prints them as perf does", function()
    -- w0 opens 5 files, 4 in the thread it starts and answers: 10; w1 and
    -- w2 5 each; the main thread waits in pause()
    local pid, tids, command, cleanup = threaded_process(5, 4)
    local r, msg = perf.stat({ pid = pid }, { "syscalls:sys_enter_openat" }, { command = command, per_thread = true })
    cleanup()
    assert(r, msg)
    assert.are.equal(20, r[1])
    assert.are.equal("thread", r.per.kind)
    local counts = {}
    for _, row in ipairs(r.per) do counts[row.key] = row[1] end
    assert.same({ ["threads_open-" .. pid] = 0, ["w0-" .. tids.w0] = 10, ["w1-" .. tids.w1] = 5,
      ["w2-" .. tids.w2] = 5 }, counts)
    -- the table's rows, beside perf stat's for the same work (w1 and w2 tie:
    -- perf's order between them is not fixed)
    local function rows(text)
      local out = {}
      for line in text:gmatch("[^\n]*syscalls:sys_enter_openat[^\n]*") do out[#out + 1] = (line:gsub("%s+$", "")) end
      return out
    end
    local function run(tool, options)
      local p, t, cmd, done = threaded_process(5, 4)
      local out = os.tmpname()
      os.execute(("%s stat -o %s -p %d --per-thread %s -e syscalls:sys_enter_openat -- sh -c '%s' >/dev/null 2>&1")
        :format(tool, out, p, options, cmd[3]))
      done()
      local f = assert(io.open(out))
      local text = f:read("a")
      f:close()
      os.remove(out)
      -- the tids differ from run to run: named by thread
      text = text:gsub("%-(%d+)", function(tid)
        for name, id in pairs(t) do if id == math.tointeger(tonumber(tid)) then return "-" .. name end end
      end)
      return text
    end
    local ours, theirs = rows(run(H.example .. " bin/perf-lua", "")), rows(run("perf", ""))
    assert.are.equal(4, #ours)
    assert.matches("^ +w0%-w0 +10      syscalls:sys_enter_openat$", ours[1])
    assert.matches("^ +threads_open%-main +<not counted>      syscalls:sys_enter_openat$", ours[4])
    -- the two runs' tids may differ in digits, so the columns may shift by
    -- one between them: compared with the padding collapsed
    local function squeeze(list)
      for i, l in ipairs(list) do list[i] = l:gsub("  +", "  ") end
      return list
    end
    squeeze(ours)
    squeeze(theirs)
    assert.are.equal(theirs[1], ours[1])
    assert.are.equal(theirs[4], ours[4])
    table.sort(ours)
    table.sort(theirs)
    assert.same(theirs, ours)
    local csv = run(H.example .. " bin/perf-lua", "-x,")
    assert.matches("^w0%-w0,10,,syscalls:sys_enter_openat,%d+,100%.00,,\n", csv)
    assert.matches("\nthreads_open%-main,<not counted>,,syscalls:sys_enter_openat,0,100%.00,,\n$", csv)
  end)

  it("counts one thread, as perf stat -t", function()
    local pid, command, cleanup = waiting_process(3)
    local r, msg = perf.stat({ tid = pid }, "syscalls:sys_enter_openat", { command = command })
    cleanup()
    assert(r, msg)
    assert.are.equal(4, r[1])
  end)

  it("counts for a duration", function()
    local pid, _, cleanup = waiting_process(3)
    local r, msg = perf.stat({ pid = pid }, "syscalls:sys_enter_openat,task-clock", { duration = 0.05 })
    cleanup()
    assert(r, msg)
    assert.are.equal(0, r[1])                            -- it only waited
    assert.is_true(r.elapsed >= 50000000)
  end)

  it("counts a cgroup on every CPU, as perf stat -a -G", function()
    local root = H.cgroup2()
    if not root then pending("no cgroup2 hierarchy here") return end
    local name = "perf_lua_spec_" .. os.time()
    assert(os.execute(("mkdir %s/%s"):format(root, name)))
    local script = ("echo $$ > %s/%s/cgroup.procs; ls / >/dev/null"):format(root, name)
    local r, msg = perf.stat({ cgroup = name }, { "syscalls:sys_enter_openat" },
      { command = { "sh", "-c", script }, aggregate = "cpu" })
    local out = os.tmpname()
    os.execute(("perf stat -x, -a -o %s -e syscalls:sys_enter_openat -G %s -- sh -c '%s' >/dev/null 2>&1")
      :format(out, name, script))
    os.execute(("rmdir %s/%s"):format(root, name))
    assert(r, msg)
    local theirs
    for l in io.lines(out) do theirs = theirs or math.tointeger(tonumber(l:match("^(%d+),"))) end
    os.remove(out)
    assert.is_true(r[1] > 0)
    assert.are.equal(theirs, r[1])
    assert.are.equal(#perf.cpus.online(), #r.per)
  end)

  it("counts each event in its own cgroup, or everything, when given one per event", function()
    local root = H.cgroup2()
    if not root then pending("no cgroup2 hierarchy here") return end
    local name = "perf_lua_spec_list_" .. os.time()
    assert(os.execute(("mkdir %s/%s"):format(root, name)))
    local script = ("echo $$ > %s/%s/cgroup.procs; ls / >/dev/null"):format(root, name)
    local events = { "syscalls:sys_enter_openat", "syscalls:sys_enter_execve", "syscalls:sys_enter_close" }
    local r, msg = perf.stat({ cgroup = { name, false } }, events, { command = { "sh", "-c", script } })
    local one = perf.stat({ cgroup = { false, name } }, events, { command = { "sh", "-c", script }, cpus = "0" })
    local alone = perf.stat({ cgroup = name }, events[1], { command = { "sh", "-c", script } })
    os.execute(("rmdir %s/%s"):format(root, name))
    assert(r, msg)
    assert.are.equal(alone[1], r[1])                      -- the cgroup's own, exactly
    assert.are.equal(name, r.events[1].cgroup)
    assert.is_nil(r.events[2].cgroup)
    assert.is_nil(r.events[3].cgroup)
    assert.is_true(r[2] >= 1)                             -- the command's exec, outside the cgroup
    assert.is_true(alone[1] > 0)
    assert(one)
    local cpus = {}
    for c in pairs(one.events[1].cpus) do cpus[#cpus + 1] = c end
    assert.are.same({ 0 }, cpus)                          -- on CPU 0 alone
    assert.are.equal(name, one.events[2].cgroup)
    assert.has_error(function() perf.stat({ cgroup = { "x", 4 } }, events, { duration = 1 }) end)
    assert.has_error(function() perf.stat({ cgroup = {} }, events, { duration = 1 }) end)
  end)

  it("is perf-lua stat -p, -t and -G", function()
    local function run(args)
      local out = os.tmpname()
      local ok, _, code = os.execute(("%s bin/perf-lua stat %s 2>%s >/dev/null"):format(H.example, args, out))
      local f = assert(io.open(out))
      local text = f:read("a")
      f:close()
      os.remove(out)
      return text, ok and 0 or code
    end
    local pid, command, cleanup = waiting_process(5)
    local text, code = run(("-x, -p %d -e syscalls:sys_enter_openat -- sh -c '%s'"):format(pid, command[3]))
    cleanup()
    assert.are.equal(0, code)
    assert.matches("^6,,syscalls:sys_enter_openat,", text)
    pid, command, cleanup = waiting_process(2)
    text, code = run(("-t %d -e syscalls:sys_enter_openat -- sh -c '%s'"):format(pid, command[3]))
    cleanup()
    assert.are.equal(0, code)
    assert.matches(("\n Performance counter stats for thread id '%d':\n\n +3      syscalls:sys_enter_openat"):format(pid), text)
    text, code = run("-p 1 -e task-clock")
    assert.are.equal(129, code)
    assert.matches("give a command to count for, such as %-%- sleep 2", text)
  end)

  it("counts several processes or threads, as perf stat -p P1,P2 and -t T1,T2", function()
    -- two waiting processes, opening 3 and 4 files and answering: 9
    local function both(tool, option)
      local p1, c1, done1 = waiting_process(3)
      local p2, c2, done2 = waiting_process(4)
      local out = os.tmpname()
      os.execute(("%s stat -o %s %s %d,%d -e syscalls:sys_enter_openat -- sh -c '%s; %s' >/dev/null 2>&1")
        :format(tool, out, option, p1, p2, c1[3], c2[3]))
      done1()
      done2()
      local f = assert(io.open(out))
      local text = f:read("a")
      f:close()
      os.remove(out)
      return text:gsub(p1 .. "," .. p2, "P1,P2"), p1, p2
    end
    local function table_of(text)
      return text:match("\n( Performance counter stats for [^\n]*)\n"),
        (text:match("\n( +%d+      syscalls:sys_enter_openat) *\n"))
    end
    for _, option in ipairs { "-p", "-t" } do
      local ours = both(H.example .. " bin/perf-lua", option)
      local theirs = both("perf", option)
      assert.same({ (option == "-p" and " Performance counter stats for process id 'P1,P2':"
        or " Performance counter stats for thread id 'P1,P2':"),
        "                 9      syscalls:sys_enter_openat" }, { table_of(ours) })
      assert.same({ table_of(theirs) }, { table_of(ours) })
    end
    local pid, command, cleanup = waiting_process(3)
    local idle, _, idle_done = waiting_process(3)      -- blocked in open(2), never woken
    local r, msg = perf.stat({ pid = { pid, idle } }, "syscalls:sys_enter_openat", { command = command })
    cleanup()
    idle_done()
    assert(r, msg)
    assert.are.equal(4, r[1])
    assert.has_error(function() perf.stat({ pid = { 1, 0 } }, "task-clock", { duration = 1 }) end)
    assert.are.equal("thread id '12,34'", processes.describe { tid = { 12, 34 } })
  end)

  it("returns nil, message, errno for a process that does not exist", function()
    local r, msg, errno = perf.stat({ pid = 0x3fffffff }, "task-clock", { duration = 0.01 })
    assert.is_nil(r)
    assert.are.equal("perf.stat: no process 1073741823", msg)
    assert.are.equal(ESRCH, errno)
    r, msg = perf.stat({ cgroup = "no_such_cgroup_here" }, "task-clock", { duration = 0.01 })
    assert.is_nil(r)
    assert.matches("^perf.stat: no cgroup no_such_cgroup_here", msg)
  end)

  it("raises on misuse", function()
    assert.has_error(function() perf.stat({ pid = 1 }, "task-clock") end,
      "perf.stat: counting a process, thread or cgroup needs one of opts.duration (seconds) and "
      .. "opts.command (a command to run meanwhile, as perf stat -p P -- sleep 2)")
    assert.has_error(function() perf.stat({ pid = 1, tid = 1 }, "task-clock", { duration = 1 }) end,
      "perf.stat: a target is one of pid, tid and cgroup")
    assert.has_error(function() perf.stat({ pid = -4 }, "task-clock", { duration = 1 }) end,
      "perf.stat: pid must be a positive integer, got -4")
    assert.has_error(function() perf.stat({ pid = 1 }, "task-clock", { duration = 0 }) end,
      "perf.stat: duration must be a number of seconds, more than 0")
    assert.has_error(function() perf.stat({ "true" }, "task-clock", { duration = 1 }) end,
      "perf.stat: duration and command go with a target table ({ pid = P }, { tid = T }, "
      .. "{ cgroup = G }), not with a command")
    assert.has_error(function() perf.stat({ pid = 1 }, "task-clock", { duration = 1, all_cpus = true }) end,
      "perf.stat: all_cpus does not go with a target table (count a cgroup for every CPU)")
    assert.is_true(processes.is_target { pid = 1 })
    assert.is_false(processes.is_target { "ls" })
    assert.are.equal("process id '12'", processes.describe { pid = 12 })
  end)
end)
