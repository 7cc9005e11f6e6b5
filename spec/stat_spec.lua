-- perf.stat: counts equal to perf stat's for deterministic events on real
-- commands, exit statuses and signals, programs that cannot run, children
-- counted through inherit, and misuse.
local perf = require "perf"
local H = require "helpers"

local TRACEPOINTS = { "syscalls:sys_enter_openat", "syscalls:sys_enter_close",
  "syscalls:sys_enter_read", "syscalls:sys_enter_execve" }
local QUIET = { stdout = "/dev/null", stderr = "/dev/null" }

local function fds()
  collectgarbage()
  collectgarbage()
  return math.min(H.fd_count(), H.fd_count(), H.fd_count())
end

local perf_stat = H.perf_stat

local function tmpfile(content, mode)
  local name = os.tmpname()
  local f = assert(io.open(name, "w"))
  f:write(content)
  f:close()
  if mode then os.execute("chmod " .. mode .. " " .. name) end
  return name
end

describe("perf.stat", function()
  local commands = {
    { "ls", "-l", "/" },
    { "sh", "-c", "cat /etc/hostname >/dev/null; ls / /usr >/dev/null; echo done" },
    { H.lua, "-e", "for i = 1, 5 do io.open('/dev/null'):close() end" },
  }
  for _, argv in ipairs(commands) do
    it("counts what perf stat counts: " .. table.concat(argv, " "), function()
      local theirs = perf_stat(argv, TRACEPOINTS)
      local r = assert(perf.stat(argv, TRACEPOINTS, QUIET))
      for i, name in ipairs(TRACEPOINTS) do
        assert.is_number(theirs[name])
        assert.are.equal(theirs[name], r[name])
        assert.are.equal(theirs[name], r[i])
      end
      assert.is_true(r["syscalls:sys_enter_openat"] > 0)
      assert.are.equal(0, r.status)
    end)
  end

  it("counts a {a,b} group string as perf stat counts it", function()
    local argv = { "sh", "-c", "ls / >/dev/null; cat /etc/hostname" }
    local theirs = perf_stat(argv, { "syscalls:sys_enter_openat", "syscalls:sys_enter_close" })
    local r = assert(perf.stat(argv, { "{syscalls:sys_enter_openat,syscalls:sys_enter_close}", "task-clock" }, QUIET))
    assert.are.equal(theirs["syscalls:sys_enter_openat"], r["syscalls:sys_enter_openat"])
    assert.are.equal(theirs["syscalls:sys_enter_close"], r[2])
    assert.are.equal(1, r.events[1].group)
    assert.is_nil(r.events[3].group)
    assert.is_true(r["task-clock"] > 0)
  end)

  it("expands a tracepoint pattern to one event per match, as perf stat -e does", function()
    local argv = { "sh", "-c", "ls / >/dev/null; cat /etc/hostname" }
    local theirs = perf_stat(argv, { "'syscalls:sys_enter_open*'", "'sched:sched_process_ex*'" })
    local r = assert(perf.stat(argv, "syscalls:sys_enter_open*,sched:sched_process_ex*", QUIET))
    local n = 0
    for name, count in pairs(theirs) do
      n = n + 1
      assert.are.equal(count, r[name], name)
    end
    assert.are.equal(n, #r.events)               -- the same names, no more
    assert.is_true(n >= 6)
    assert.is_true(r["syscalls:sys_enter_openat"] > 0)
    assert.is_true(r["sched:sched_process_exec"] >= 2)
    for _, e in ipairs(r.events) do assert.is_nil(e.group) end
  end)

  it("expands a pattern inside a group into that group", function()
    local argv = { "cat", "/etc/hostname" }
    local r = assert(perf.stat(argv, { "{syscalls:sys_enter_close,syscalls:sys_enter_open*}" }, QUIET))
    local theirs = perf_stat(argv, { "'syscalls:sys_enter_open*'", "syscalls:sys_enter_close" })
    for _, e in ipairs(r.events) do
      assert.are.equal(1, e.group)
      assert.are.equal(theirs[e.name], e.value, e.name)
    end
    assert.are.equal("syscalls:sys_enter_close", r.events[1].name)
  end)

  it("refuses a pattern that matches nothing", function()
    assert.has_error(function() perf.stat({ "true" }, "syscalls:sys_enter_nothing_like_this*") end,
      'no tracepoint matches "syscalls:sys_enter_nothing_like_this*" '
      .. '(perf-lua list "syscalls" lists those that exist)')
  end)

  it("counts the children (inherit), or only the command itself when told", function()
    local argv = { "sh", "-c", "cat /etc/hostname; cat /etc/hostname; cat /etc/hostname" }
    local events = { "syscalls:sys_enter_openat", "syscalls:sys_enter_execve" }
    local all = assert(perf.stat(argv, events, QUIET))
    local own = assert(perf.stat(argv, events, { stdout = "/dev/null", inherit = false }))
    local theirs = perf_stat(argv, events, "-i")
    assert.are.equal(theirs["syscalls:sys_enter_openat"], own["syscalls:sys_enter_openat"])
    assert.is_true(all["syscalls:sys_enter_openat"] > own["syscalls:sys_enter_openat"])
    -- sh's execs of cat happen in its children: counted only with inherit
    -- (a shell may exec the last command itself: 2 or 3)
    assert.is_true(all["syscalls:sys_enter_execve"] >= 2)
    assert.is_true(own["syscalls:sys_enter_execve"] <= 1)
  end)

  it("gives the details of each event and the times of the command", function()
    local r = assert(perf.stat({ "ls", "/" }, "task-clock,syscalls:sys_enter_openat", QUIET))
    assert.are.equal(2, #r.events)
    local e = r.events[2]
    assert.are.equal("syscalls:sys_enter_openat", e.name)
    assert.are.equal(r[2], e.value)
    assert.are.equal(e.raw, e.value)
    assert.are.equal(e.time_enabled, e.time_running)
    assert.are.equal(1.0, e.fraction)
    assert.is_true(r.elapsed > 0)
    assert.is_true(r.elapsed >= r["task-clock"])
    assert.are.equal("integer", math.type(r.user))
    assert.are.equal("integer", math.type(r.sys))
    assert.is_nil(r.signal)
    assert.is_nil(r.notes)
  end)

  it("reports the exit status", function()
    assert.are.equal(3, perf.stat({ "sh", "-c", "exit 3" }, { "task-clock" }).status)
    assert.are.equal(1, perf.stat({ "false" }, { "task-clock" }).status)
    assert.are.equal(0, perf.stat({ "true" }, { "task-clock" }).status)
  end)

  it("reports the signal that ended the command", function()
    local r = assert(perf.stat({ "sh", "-c", "kill -TERM $$" }, { "syscalls:sys_enter_openat" }, QUIET))
    assert.are.equal("SIGTERM", r.status)
    assert.are.equal("SIGTERM", r.signal)
    assert.are.equal(15, r.signo)
    r = assert(perf.stat({ "sh", "-c", "kill -KILL $$" }, { "task-clock" }, QUIET))
    assert.are.equal("SIGKILL", r.status)
    assert.is_false(r.core_dumped)
  end)

  it("returns nil, message, errno for a program that cannot run", function()
    local before = fds()
    local r, msg, errno = perf.stat({ "no-such-program-here", "x" }, { "task-clock" })
    assert.is_nil(r)
    assert.are.equal('perf.stat: cannot run "no-such-program-here": No such file or directory (ENOENT); not found in PATH', msg)
    assert.are.equal(2, errno)
    r, msg, errno = perf.stat({ "/no/such/file" }, { "task-clock" })
    assert.is_nil(r)
    assert.matches("ENOENT%); no such file$", msg)
    assert.are.equal(2, errno)
    r, msg, errno = perf.stat({ "/etc/passwd" }, { "task-clock" })
    assert.is_nil(r)
    assert.matches("EACCES", msg)
    assert.are.equal(13, errno)
    r, msg, errno = perf.stat({ "/tmp" }, { "task-clock" })
    assert.is_nil(r)
    assert.matches("EACCES", msg)
    assert.are.equal(13, errno)
    assert.are.equal(before, fds())
  end)

  it("runs an executable file without #! with /bin/sh, as execvp does", function()
    local script = tmpfile("exit 5\n", "755")
    local r = assert(perf.stat({ script }, { "task-clock" }))
    os.remove(script)
    assert.are.equal(5, r.status)
  end)

  it("returns nil, message, errno when no event can be counted, running nothing", function()
    local before = fds()
    local marker = os.tmpname()
    os.remove(marker)
    local r, msg, errno = perf.stat({ "touch", marker }, { "software/config=999/", "{software/config=998/,task-clock}" })
    assert.is_nil(r)
    assert.matches('^perf.stat: perf.open "software/config=999/": .*%(ENOENT%); the kernel has no software event', msg)
    assert.are.equal(2, errno)
    assert.is_nil(io.open(marker))        -- the command never ran
    assert.are.equal(before, fds())
  end)

  it("counts the rest where an event is not supported here, as perf stat does", function()
    local before = fds()
    local events = { "software/config=999/", "syscalls:sys_enter_openat", "{software/config=998/,task-clock}" }
    local theirs = perf_stat({ "ls", "/" }, { "software/config=999/", "syscalls:sys_enter_openat" })
    local r = assert(perf.stat({ "ls", "/" }, events, QUIET))
    assert.are.equal(false, r[1])
    assert.are.equal(false, r["software/config=999/"])
    assert.are.equal(theirs["syscalls:sys_enter_openat"], r[2])
    assert.are.equal(false, r[3])             -- a group that cannot open: every member
    assert.are.equal(false, r[4])
    assert.are.equal(false, r["task-clock"])
    assert.are.equal(4, #r.events)
    local e = r.events[1]
    assert.are.equal(false, e.supported)
    assert.are.equal(2, e.errno)
    assert.matches("ENOENT", e.error)
    assert.are.equal(1, e.type)
    assert.are.equal(999, e.config)
    assert.is_true(r.events[2].supported)
    assert.are.equal(3, r.events[4].group)
    assert.are.equal(2, #r.notes)
    assert.matches("^software/config=999/: not supported here, not counted %(perf%.open", r.notes[1])
    assert.matches("^the group of software/config=998/: not supported here", r.notes[2])
    assert.are.equal(0, r.status)
    assert.are.equal(before, fds())
  end)

  it("redirects the command's standard streams to files or handles", function()
    local out = os.tmpname()
    local input = tmpfile("from a file\n")
    assert(perf.stat({ "cat" }, { "task-clock" }, { stdin = input, stdout = out }))
    local f = assert(io.open(out))
    assert.are.equal("from a file\n", f:read("a"))
    f:close()
    local h = assert(io.open(out, "w"))
    assert(perf.stat({ "echo", "to a handle" }, { "task-clock" }, { stdout = h }))
    h:close()
    f = assert(io.open(out))
    assert.are.equal("to a handle\n", f:read("a"))
    f:close()
    os.remove(out)
    os.remove(input)
    local r, msg, errno = perf.stat({ "true" }, { "task-clock" }, { stdout = "/no/such/dir/x" })
    assert.is_nil(r)
    assert.matches('cannot open "/no/such/dir/x" for stdout', msg)
    assert.are.equal(2, errno)
  end)

  it("counts separately where the kernel refuses an inheriting group, and says so", function()
    local core = perf.core
    local real = core.open
    core.open = function(attr, target, name)       -- an older kernel's answer
      local rf = attr.read_format
      if attr.inherit and math.type(rf) == "integer" and rf & 8 ~= 0 and target and target.group then
        return nil, "perf.open \"" .. tostring(name) .. "\": Invalid argument (EINVAL)", 22
      end
      return real(attr, target, name)
    end
    local argv = { "ls", "/" }
    local ok, r = pcall(perf.stat, argv, { "{syscalls:sys_enter_openat,syscalls:sys_enter_close}" }, QUIET)
    core.open = real
    assert.is_true(ok)
    assert.matches("counted separately", r.notes[1])
    local theirs = perf_stat(argv, { "syscalls:sys_enter_openat", "syscalls:sys_enter_close" })
    assert.are.equal(theirs["syscalls:sys_enter_openat"], r[1])
    assert.are.equal(theirs["syscalls:sys_enter_close"], r[2])
  end)

  it("counts user space only where kernel-mode counting is refused, and says so (child as nobody)", function()
    if perf.capabilities().paranoid < 2 then
      return pending("perf_event_paranoid < 2 lets nobody count kernel mode")
    end
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      local r = assert(perf.stat({ "ls", "/" }, { "task-clock", "page-faults" }, { stdout = "/dev/null" }))
      print(r[1] > 0, r[2] > 0, r.status, #r.notes)
      print(r.notes[1])
    ]])
    if not out then return pending(why) end
    assert.are.equal("true\ttrue\t0\t2\ntask-clock: kernel-mode counting is not permitted here "
      .. "(perf_event_paranoid); counting user space only\n", out)
  end)

  it("counts every CPU while the command runs with all_cpus, as perf stat -a", function()
    local online, is_online = perf.cpus.online(), {}
    for _, c in ipairs(online) do is_online[c] = true end
    local r = assert(perf.stat({ H.lua, "-e", "for i = 1, 40 do io.open('/dev/null'):close() end" },
      { "cpu-clock", "syscalls:sys_enter_openat", "{task-clock,context-switches}" }, { all_cpus = true }))
    assert.are.equal(0, r.status)
    -- cpu-clock counts each CPU's time, idle or not: elapsed times the CPUs
    local clock = r.events[1]
    assert.is_true(clock.value > 0.8 * r.elapsed * #online, "cpu-clock under the CPUs' time")
    assert.is_true(clock.value < 1.5 * r.elapsed * #online + 5e6, "cpu-clock over the CPUs' time")
    assert.is_true(r["syscalls:sys_enter_openat"] >= 40)     -- the command's and any other's
    for i, e in ipairs(r.events) do
      local sum, n = 0, 0
      for c, v in pairs(e.cpus) do
        assert.is_true(is_online[c])
        sum, n = sum + v, n + 1
      end
      assert.are.equal(#online, n)
      assert.are.equal(r[i], sum)                -- no multiplexing: the sum is the count
      assert.are.equal(e.raw, r[i])
    end
    assert.are.equal(3, r.events[4].group)
    -- the same CPUs for perf stat -a: its cpu-clock is the CPUs' time too
    local out = os.tmpname()
    assert(os.execute(("perf stat -a -x, -o %s -e cpu-clock -- sleep 0.1"):format(out)))
    local f = assert(io.open(out))
    local msec = tonumber(f:read("a"):match("([%d.]+),msec,cpu%-clock"))
    f:close()
    os.remove(out)
    assert.is_true(msec > 0.8 * 100 * #online)
  end)

  -- perf stat -x, -a AGGR on a command: the keys and CPU numbers of its rows
  local function perf_rows(aggr)
    local out = os.tmpname()
    assert(os.execute(("perf stat -x, -a %s -o %s -e page-faults -- true >/dev/null 2>&1"):format(aggr, out)))
    local rows = {}
    for l in io.lines(out) do
      local key, nr = l:match("^([%w-]+),(%d+),%d+,,page%-faults,")
      if not key then key = l:match("^(CPU%d+),%d+,,page%-faults,") end
      if key then rows[#rows + 1] = { key = key, nr = math.tointeger(tonumber(nr)) } end
    end
    os.remove(out)
    return rows
  end

  it("counts per core, die, socket or CPU with aggregate, as perf stat --per-core, -A ...", function()
    local argv = { "sh", "-c", "ls / >/dev/null; cat /etc/hostname" }
    for kind, option in pairs { core = "--per-core", die = "--per-die", socket = "--per-socket", cpu = "-A" } do
      local r = assert(perf.stat(argv, { "syscalls:sys_enter_openat", "task-clock", "software/config=999/" },
        { stdout = "/dev/null", all_cpus = true, aggregate = kind }))
      local theirs = perf_rows(option)
      assert.are.equal("table", type(r.per))
      assert.are.equal(kind, r.per.kind)
      assert.are.equal(#theirs, #r.per, kind)
      local sums = { 0, 0 }
      for k, row in ipairs(r.per) do
        assert.are.equal(theirs[k].key, row.key)
        if kind ~= "cpu" then assert.are.equal(theirs[k].nr, row.nr) end
        for i = 1, 2 do
          assert.are.equal(row.events[i].value, row[i])
          assert.are.equal(r.events[i].name, row.events[i].name)
          sums[i] = sums[i] + row.events[i].raw
          local on_cpus = 0
          for _, c in ipairs(row.cpus) do on_cpus = on_cpus + r.events[i].cpus[c] end
          assert.are.equal(on_cpus, row[i])
        end
        assert.are.equal(row[1], row["syscalls:sys_enter_openat"])
        assert.is_false(row[3])                      -- not supported here, as in the totals
        assert.is_false(row.events[3].supported)
      end
      assert.are.equal(r.events[1].raw, sums[1])     -- the rows add up to the totals
      assert.are.equal(r.events[2].raw, sums[2])
      assert.is_true(r[1] > 0)
    end
  end)

  it("counts the CPUs it is given with cpus, as perf stat -C", function()
    local last = perf.cpus.online()[#perf.cpus.online()]
    local r = assert(perf.stat({ "sleep", "0.05" }, { "cpu-clock" }, { cpus = tostring(last) }))
    local n = 0
    for c in pairs(r.events[1].cpus) do
      assert.are.equal(last, c)
      n = n + 1
    end
    assert.are.equal(1, n)
    assert.is_true(r[1] > 0.8 * r.elapsed and r[1] < 1.5 * r.elapsed + 5e6)
    r = assert(perf.stat({ "sleep", "0.05" }, { "cpu-clock" }, { cpus = { last, last } }))
    assert.is_true(r[1] < 1.5 * r.elapsed + 5e6, "a CPU listed twice is counted once")
    assert.are.equal(r[1], r.events[1].cpus[last])
    local msg, errno = select(2, perf.stat({ "true" }, { "cpu-clock" }, { cpus = { 4096 } }))
    assert.are.equal(22, errno)
    assert.matches("cpu 4096 does not exist here", msg)
    assert.has_error(function() perf.stat({ "true" }, { "cpu-clock" }, { cpus = "x" }) end,
      'perf.cpus: malformed CPU list "x"')
    assert.has_error(function() perf.stat({ "true" }, { "cpu-clock" }, { cpus = { -1 } }) end,
      'perf.stat: cpus must be a list of CPU numbers or a string such as "0-3,5", got table')
  end)

  it("calls on_interval with each interval's counts, which add up to the totals", function()
    local before = fds()
    local seen = {}
    local argv = { "sh", "-c", "sleep 0.12; ls / /usr >/dev/null; sleep 0.12; ls / >/dev/null" }
    local events = { "syscalls:sys_enter_openat", "task-clock", "software/config=999/" }
    local r = assert(perf.stat(argv, events, { interval = 50, on_interval = function(i)
      seen[#seen + 1] = i
    end, stdout = "/dev/null" }))
    local theirs = perf_stat(argv, { events[1] })
    assert.is_true(#seen >= 4 and #seen <= 7, "intervals: " .. #seen)
    local sum, clock, last = 0, 0, 0
    for k, i in ipairs(seen) do
      assert.are.equal(k, i.interval)
      assert.is_true(i.time > last)
      if k < #seen then              -- the last one ends at the exit
        assert.is_true(math.abs(i.time - k * 50e6) < 25e6, "interval " .. k .. " at " .. i.time)
      end
      last = i.time
      sum, clock = sum + i[1], clock + i[2]
      assert.are.equal(i[1], i["syscalls:sys_enter_openat"])
      assert.are.equal(false, i[3])
      assert.are.equal(i.events[1].raw, i[1])
      assert.is_nil(i.status)
    end
    assert.are.equal(r.elapsed, seen[#seen].time)
    assert.are.equal(r[1], sum)                 -- nothing lost between intervals
    assert.are.equal(r[2], clock)
    assert.are.equal(theirs[events[1]], r[1])  -- and the same as perf stat's
    assert.is_true(r[1] > 0)
    assert.are.equal(before, fds())
  end)

  it("counts intervals on CPUs too, and closes everything when on_interval raises", function()
    local n = 0
    local r = assert(perf.stat({ "sleep", "0.12" }, { "cpu-clock" }, { all_cpus = true, interval = 50,
      on_interval = function(i) n = n + 1 assert(i[1] > 0) end }))
    assert.is_true(n >= 2)
    assert.is_true(r[1] > 0)
    local before = fds()
    local ok, err = pcall(perf.stat, { "sleep", "5" }, { "task-clock" }, { interval = 10,
      on_interval = function() error("stop here") end })
    assert.is_false(ok)
    assert.matches("stop here", err)
    assert.are.equal(before, fds())              -- the counters and the child are gone
  end)

  it("raises on misuse", function()
    assert.has_error(function() perf.stat("ls", { "task-clock" }) end,
      "perf.stat: the command must be a list (argv), got string")
    assert.has_error(function() perf.stat({}, { "task-clock" }) end, "perf.stat: the command is empty")
    assert.has_error(function() perf.stat({ "ls", 1 }, { "task-clock" }) end,
      "perf.stat: argument 2 of the command: a string expected, got number")
    assert.has_error(function() perf.stat({ "ls" }, {}) end, "perf.stat: a list of events expected")
    assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { stdot = "x" }) end,
      "perf.stat: unknown option 'stdot' (did you mean 'stdout'?); options: stdin, stdout, stderr, inherit, all_cpus, cpus, interval, on_interval, aggregate, per_thread, duration, command")
    assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { aggregate = "core" }) end,
      'perf.stat: aggregate = "core" counts per core: it needs all_cpus or cpus, as perf stat --per-core needs -a')
    assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { all_cpus = true, aggregate = "node" }) end,
      "perf.stat: aggregate must be one of cpu, core, die, socket, got node")
    for _, bad in ipairs { 0, 1.5, math.maxinteger } do
      assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { interval = bad, on_interval = print }) end,
        "perf.stat: interval must be a whole number of milliseconds, 1 to 2147483647")
    end
    assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { interval = 100 }) end,
      "perf.stat: interval needs on_interval, a function to call with each interval's counts")
    assert.has_error(function() perf.stat({ "ls" }, { "task-clock" }, { stdout = 1 }) end)
    local ok, err = pcall(perf.stat, { "ls" }, { "task-clok" })
    assert.is_false(ok)
    assert.matches("task%-clok", err)
    assert.not_matches("stat%.lua", err)
  end)
end)

describe("perf.stat's event list splitting", function()
  local split = require("perf.counting.stat").split
  it("splits on commas outside groups and PMU terms", function()
    assert.are.same({ "task-clock", "page-faults" }, split("task-clock,page-faults"))
    assert.are.same({ "{a,b}:u", "c" }, split("{a,b}:u,c"))
    assert.are.same({ "cpu/event=0x3c,umask=0x0/", "x" }, split("cpu/event=0x3c,umask=0x0/,x"))
    assert.are.same({ "mem:0x1000/8:w", "cpu/a=1,b=2/u" }, split("mem:0x1000/8:w,cpu/a=1,b=2/u"))
    assert.are.same({ "{mem:0x10/4,msr/tsc/}", "y" }, split("{mem:0x10/4,msr/tsc/},y"))
    assert.are.same({ "one" }, split("one"))
  end)
end)

describe("perf-lua stat", function()
  local function example(args)
    local out = os.tmpname()
    local ok, how, code = os.execute(("%s bin/perf-lua stat %s 2>%s >/dev/null"):format(H.example, args, out))
    local f = assert(io.open(out))
    local text = f:read("a")
    f:close()
    os.remove(out)
    return text, how == "exit" and code or nil, ok
  end

  -- Each row line of a perf stat table: its place (the text before the
  -- count) and the column where the event's name starts.
  local function table_rows(text)
    local out = {}
    for line in text:gmatch("[^\n]+") do
      local start = line:find(" [%a][%w:%-/=]+ *#") or line:find(" [%a][%w:%-/=]+ *$")
      if line:find("page%-faults") or line:find("task%-clock") then
        out[#out + 1] = { place = line:match("^(.-) +[%d.,]+ ") or line:match("^(.-) +<"), column = start }
      end
    end
    return out
  end

  it("names the rows per core, socket and CPU as perf stat does (-a --per-core, --per-socket, -A)", function()
    for _, option in ipairs { "--per-core", "--per-socket", "-A", "--per-die" } do
      local args = ("-a %s -e task-clock,page-faults -- true"):format(option)
      local out = os.tmpname()
      assert(os.execute(("perf stat -o %s %s >/dev/null 2>&1"):format(out, args)))
      local f = assert(io.open(out))
      local theirs = table_rows(f:read("a"))
      f:close()
      os.remove(out)
      local text, code = example(args)
      assert.are.equal(0, code)
      local ours = table_rows(text)
      assert.is_true(#ours >= 2)
      assert.same(theirs, ours, option)
    end
    local _, code = example("--per-core -e task-clock -- true")
    assert.are.equal(129, code)
  end)

  it("prints the counts of each thread with --per-thread, named as perf names them", function()
    local argv = { "sh", "-c", "ls / >/dev/null; cat /etc/hostname >/dev/null; true" }
    local total = perf_stat(argv, { "syscalls:sys_enter_openat" })["syscalls:sys_enter_openat"]
    local text, code = example("--per-thread -e syscalls:sys_enter_openat -- sh -c 'ls / >/dev/null; cat /etc/hostname >/dev/null; true'")
    assert.are.equal(0, code)
    local names, sum = {}, 0
    for line in text:gmatch("[^\n]*syscalls:sys_enter_openat[^\n]*") do
      local comm, _, n = line:match("^ *(%S+)%-(%d+) +(%d+)      syscalls:sys_enter_openat")
      assert.truthy(comm, line)
      assert.are.equal(17, (line:find("%-%d+ ")))               -- "%16s-%-8d ", as perf
      assert.are.equal(50, (line:find(" syscalls")))            -- as perf -a --per-thread
      names[#names + 1], sum = comm, sum + math.tointeger(tonumber(n))
    end
    assert.same({ "sh", "ls", "cat" }, names)
    assert.are.equal(total, sum)
    text = example("--per-thread -j -e syscalls:sys_enter_openat -- ls /")
    assert.matches('^{"thread" : "ls%-%d+", "counter%-value" : "%d+%.000000", ', text)
    local _
    _, code = example("--per-thread -a -e task-clock -- true")
    assert.are.equal(129, code)
  end)

  it("prints a cgroup's counts as perf stat -a -G does: 'system wide', the cgroup on each row", function()
    local root = assert(require("perf.cgroup").root())
    local name = "perf_lua_stat_" .. H.PID
    assert(os.execute(("mkdir -p %s/%s"):format(root, name)))
    -- the command moves itself into the cgroup: its work alone is counted
    local command = ("sh -c 'echo $$ > %s/%s/cgroup.procs; ls / >/dev/null'"):format(root, name)
    local function theirs(options)
      local out = os.tmpname()
      assert(os.execute(("perf stat -o %s %s -- %s >/dev/null 2>&1"):format(out, options, command)))
      local f = assert(io.open(out))
      local text = f:read("a"):gsub(" +\n", "\n"):gsub("^# started on [^\n]*\n\n", "")
      f:close()
      os.remove(out)
      return text
    end
    local function rows(text)                             -- the title and the rows
      local out = { text:match("\n( Performance counter stats for [^\n]*)\n") }
      for line in text:gmatch("[^\n]*syscalls:[^\n]*") do out[#out + 1] = line end
      return out
    end
    local events = "-e syscalls:sys_enter_openat,syscalls:sys_enter_execve"
    events = events .. " -G " .. name                    -- perf takes -G after the events
    local perf_text = theirs("-a " .. events)
    local text, code = example(("-a %s -- %s"):format(events, command))
    local csv = example(("-x, %s -- %s"):format(events, command))
    local perf_csv = theirs("-x, -a " .. events)
    local json = example(("-j %s -- %s"):format(events, command))
    local perf_json = theirs("-j -a " .. events)
    os.execute(("rmdir %s/%s"):format(root, name))
    assert.are.equal(0, code)
    assert.matches("\n Performance counter stats for 'system wide':\n", text)
    assert.matches(" +%d+      syscalls:sys_enter_openat        " .. name .. "\n", text)
    assert.are.same(rows(perf_text), rows(text))
    -- the running times differ: the rest is the same
    local function fields(t) return (t:gsub(",%d+,100%.00,", ",T,100.00,")) end
    assert.are.equal(fields(perf_csv), fields(csv))
    local function members(t)                            -- perf 6.1 writes "(null)" for no unit
      return (t:gsub('"event%-runtime" : %d+', "T"):gsub('"%(null%)"', '""'))
    end
    assert.are.equal(members(perf_json), members(json))
    assert.matches('"cgroup" : "' .. name .. '", ', json)
  end)

  it("pairs each -G with the events before it as perf stat does, and names each row's cgroup", function()
    local root = assert(require("perf.cgroup").root())
    local a, b = "perf_lua_stat_a" .. H.PID, "perf_lua_stat_b" .. H.PID
    assert(os.execute(("mkdir -p %s/%s %s/%s"):format(root, a, root, b)))
    local command = ("sh -c 'echo $$ > %s/%s/cgroup.procs; ls / >/dev/null'"):format(root, a)
    -- the rows of the cgroups: exact counts, or <not counted> in b, where nothing runs
    local function rows(text)
      local out = {}
      for line in text:gmatch("[^\n]+") do
        if line:find(" " .. a .. "$") or line:find(" " .. b .. "$") then out[#out + 1] = line end
      end
      return out
    end
    local cases = {
      ("-e syscalls:sys_enter_openat,syscalls:sys_enter_execve -G %s,%s"):format(a, b),
      ("-e syscalls:sys_enter_openat -G %s -e syscalls:sys_enter_execve -G %s"):format(a, b),
      ("-e syscalls:sys_enter_execve,syscalls:sys_enter_openat -G ,%s"):format(a),
      ("-e syscalls:sys_enter_openat,syscalls:sys_enter_execve -G %s -e syscalls:sys_enter_close"):format(b),
    }
    local results = {}
    for k, options in ipairs(cases) do
      local out = os.tmpname()
      assert(os.execute(("perf stat -a -o %s %s -- %s >/dev/null 2>&1"):format(out, options, command)))
      local f = assert(io.open(out))
      local theirs = rows((f:read("a"):gsub(" +\n", "\n")))
      f:close()
      os.remove(out)
      local text, code = example(("-a %s -- %s"):format(options, command))
      results[k] = { theirs, rows(text), code, text }
    end
    os.execute(("rmdir %s/%s %s/%s"):format(root, a, root, b))
    for k, r in ipairs(results) do
      assert.are.equal(0, r[3], r[4])
      assert.is_true(#r[1] >= 1, cases[k])
      assert.same(r[1], r[2], cases[k])
    end
    assert.are.equal(2, #results[1][1])                -- openat in a, execve in b
    assert.matches("<not counted>      syscalls:sys_enter_execve " .. b, results[1][1][2], 1, true)
    assert.matches(" +%d+      syscalls:sys_enter_openat        " .. a, results[2][1][1])
  end)

  it("refuses a -G that perf refuses, and exits as perf stat when the target does not exist", function()
    local function perf_code(args)
      local _, _, code = os.execute("perf stat " .. args .. " >/dev/null 2>&1")
      return code
    end
    local cases = {
      { "-a -G nosuch_cgroup_here -e task-clock -- true", "must define events before cgroups" },
      { "-a -e task-clock -G nosuch_cgroup_here -- true", "no access to cgroup "
        .. require("perf.cgroup").dir("nosuch_cgroup_here") .. "\n" },
      { "-a -e task-clock -G " .. H.PID .. "_x,y -- true", "more cgroups than events" },
      { "-a -e task-clock -G / -- true", " msec task-clock                       / #" },
      { "-p 1073741823 -e task-clock -- true", "Problems finding threads of monitor: no process 1073741823\n" },
      { "-t 1073741823 -e task-clock -- true", "no thread 1073741823" },
    }
    for _, case in ipairs(cases) do
      local text, code = example(case[1])
      assert.are.equal(perf_code(case[1]), code, case[1])
      assert.matches(case[2], text, 1, true)
    end
  end)

  it("prints JSON lines with -j, as perf stat -j", function()
    local text, code = example("-j -e task-clock,syscalls:sys_enter_openat -- ls /")
    assert.are.equal(0, code)
    local theirs = perf_stat({ "ls", "/" }, { "syscalls:sys_enter_openat" })["syscalls:sys_enter_openat"]
    assert.matches('^{"counter%-value" : "[%d.]+", "unit" : "msec", "event" : "task%-clock", '
      .. '"event%-runtime" : %d+, "pcnt%-running" : 100%.00, "metric%-value" : [%d.]+, "metric%-unit" : "CPUs utilized"}\n', text)
    assert.matches(('\n{"counter%%-value" : "%d%%.000000", "unit" : "", "event" : "syscalls:sys_enter_openat", ')
      :format(theirs), text)
    text = example("-j -I 1000 -a --per-socket -e task-clock -- true")
    assert.matches('^{"interval" : [%d.]+, "socket" : "S0", "aggregate%-number" : %d+, "counter%-value" : ', text)
  end)

  it("prints what perf stat -x prints for a tracepoint, and exits with the command's status", function()
    local theirs = perf_stat({ "ls", "-l", "/" }, { "syscalls:sys_enter_openat" })
    local text, code = example("-x, -e syscalls:sys_enter_openat -- ls -l /")
    assert.are.equal(0, code)
    assert.are.equal(theirs["syscalls:sys_enter_openat"],
      math.tointeger(tonumber(text:match("^(%d+),,syscalls:sys_enter_openat,"))))
    text, code = example("-e task-clock sh -c 'exit 4'")
    assert.are.equal(4, code)
    assert.matches("Performance counter stats for 'sh %-c exit 4'", text)
    assert.matches("msec task%-clock", text)
    text, code = example("-e software/config=999/,task-clock -- true")
    assert.are.equal(0, code)
    assert.matches("note: software/config=999/: not supported here, not counted", text)
    assert.matches("\n   <not supported>      software/config=999/\n", text)
    assert.matches("msec task%-clock", text)
    text, code = example("-x, -e software/config=999/,task-clock -- true")
    assert.are.equal(0, code)
    assert.matches("^<not supported>,,software/config=999/,0,100%.00,,\n[%d.]+,msec,task%-clock,", text)
    text, code = example("-a -e cpu-clock -- sleep 0.05")
    assert.are.equal(0, code)
    assert.matches("Performance counter stats for 'system wide':\n\n +[%d.]+ msec cpu%-clock +# +[%d.]+ CPUs utilized\n\n +[%d.]+ seconds time elapsed\n\n$", text)
    local cpus = tonumber(text:match("([%d.]+) CPUs utilized"))
    assert.is_true(cpus > 0.8 * #perf.cpus.online(), text)
    text, code = example("-C 0 -e cpu-clock -- sleep 0.05")
    assert.are.equal(0, code)
    assert.matches("Performance counter stats for 'CPU%(s%) 0':", text)
    assert.is_true(tonumber(text:match("([%d.]+) CPUs utilized")) > 0.8, text)
    local argv = { "sh", "-c", "sleep 0.12; ls / >/dev/null; sleep 0.12" }
    local total = perf_stat(argv, { "syscalls:sys_enter_openat" })["syscalls:sys_enter_openat"]
    text, code = example("-I 50 -e task-clock,syscalls:sys_enter_openat -- sh -c 'sleep 0.12; ls / >/dev/null; sleep 0.12'")
    assert.are.equal(0, code)
    assert.matches("^#           time             counts unit events\n", text)
    local sum, rows = 0, 0
    for line in text:gmatch("[^\n]*syscalls:sys_enter_openat[^\n]*") do
      local t, n = line:match("^ +(%d+%.%d+) +([%d,]+)      syscalls")
      if not t then t = line:match("^ +(%d+%.%d+) +<not counted>      syscalls") end
      assert.truthy(t, line)
      sum, rows = sum + (n and math.tointeger(tonumber((n:gsub(",", "")))) or 0), rows + 1
    end
    assert.is_true(rows >= 4, text)
    assert.are.equal(total, sum)                    -- the intervals add up to perf stat's total
    assert.not_matches("seconds time elapsed", text)
    text, code = example("-I 50 -x, -e task-clock -- sleep 0.16")
    assert.are.equal(0, code)
    assert.matches("\n +%d+%.%d+,<not counted>,msec,task%-clock,0,100%.00,,\n", text)   -- asleep
    text, code = example("-e task-clock -- no-such-program-here")
    assert.are.equal(127, code)
    assert.matches("not found in PATH", text)
  end)
end)

describe("perf-lua stat advice", function()
  it("names the command where the library names a Lua call", function()
    local p = io.popen(H.example .. " bin/perf-lua stat -e task-clok -- true 2>&1")
    local text = p:read("a")
    p:close()
    assert.matches("did you mean 'task%-clock'%?", text)
    assert.matches("perf-lua list shows the events of this machine", text, 1, true)
    assert.is_nil(text:find("perf.list(", 1, true))
  end)

  it("says the -o file cannot be created, runs nothing and exits 255, as perf stat", function()
    local marker = os.tmpname()
    os.remove(marker)
    local p = io.popen(("%s bin/perf-lua stat -o /nonexistent/dir/f -e task-clock -- touch %s 2>&1; echo \"exit $?\"")
      :format(H.example, marker))
    local text = p:read("a")
    p:close()
    assert.are.equal("perf-lua stat: cannot create the output file /nonexistent/dir/f: "
      .. "No such file or directory\nexit 255\n", text)
    assert.is_nil(io.open(marker))                    -- the command did not run
  end)
end)
