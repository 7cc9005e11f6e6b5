-- perf.record: a command sampled on every CPU, checked against perf stat's
-- exact counts and, for the files it writes, against perf report and
-- perf script reading them and a perf record of the same work.
local H = require "helpers"
local perf = require "perf"

local PERF = "/usr/bin/perf"
local have_perf = io.open(PERF) ~= nil

local dir
local function tmp(name) return dir .. "/" .. name end

-- the output of a shell command: stdout and stderr apart
local function run(cmd)
  local err = tmp("stderr")
  local out = H.sh(("%s 2>%s"):format(cmd, err))
  local f = io.open(err)
  local e = f and f:read("a") or ""
  if f then f:close() end
  return out, e
end

-- perf report's rows, sorted by comm and dso: { ["comm dso"] = percent }
local function report_rows(file)
  local out, err = run(("%s report -i %s --stdio --no-children --sort comm,dso -g none"):format(PERF, file))
  local rows = {}
  for pct, comm, dso in out:gmatch("\n%s*([%d.]+)%%%s+(%S+)%s+(%S+)") do
    rows[comm .. " " .. dso] = tonumber(pct)
  end
  return rows, err
end

describe("perf.record", function()
  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
  end)
  teardown(function()
    if dir then os.execute("rm -rf " .. dir) end
  end)

  it("samples every hit of a tracepoint, as perf record does", function()
    local st = assert(perf.stat({ "ls", "/" }, "syscalls:sys_enter_openat", { stdout = "/dev/null" }))
    local r = assert(perf.record({ "ls", "/" }, "syscalls:sys_enter_openat", { stdout = "/dev/null" }))
    assert.is_true(st["syscalls:sys_enter_openat"] > 5)
    assert.equal(st["syscalls:sys_enter_openat"], r.samples)
    assert.equal(0, r.lost)
    assert.equal(0, r.status)
    assert.matches("^perf.record: %d+ samples of syscalls:sys_enter_openat %(0 lost%), exit 0", tostring(r))
  end)

  it("every page fault too (a software event other than the clocks)", function()
    local st = assert(perf.stat({ "ls", "/" }, "page-faults", { stdout = "/dev/null" }))
    local r = assert(perf.record({ "ls", "/" }, "page-faults", { stdout = "/dev/null" }))
    -- the same binary faults alike, give or take a few pages
    assert.is_true(r.samples > 20)
    assert.is_true(math.abs(r.samples - st["page-faults"]) <= st["page-faults"] // 5)
  end)

  it("exits as the command did: a signal by its name", function()
    local r = assert(perf.record({ "sh", "-c", "kill -9 $$" }, "cpu-clock"))
    assert.equal("SIGKILL", r.signal)
    assert.matches("killed by SIGKILL", tostring(r))
    r = assert(perf.record({ "sh", "-c", "exit 3" }, "cpu-clock"))
    assert.equal(3, r.status)
  end)

  it("fails cleanly: a missing command, an event this machine lacks, misuse", function()
    local msg = H.fails(perf.record({ "/nonexistent/cmd" }, "cpu-clock"))
    H.assert_has("perf.record", msg)
    msg = H.fails(perf.record({ "true" }, "cycles"))
    H.assert_has("cycles", msg)
    assert.has_error(function() perf.record({ "true" }, "cpu-clock", { outptu = "x" }) end,
      "perf.record: unknown option 'outptu' (did you mean 'output'?)")
    assert.has_error(function() perf.record("true", "cpu-clock") end)
    assert.has_error(function() perf.record({ "true" }, "cpu-clock", { freq = 10, period = 10 }) end)
  end)

  it("keeps what was recorded when SIGINT stops it, and ends the command with SIGTERM, as perf", function()
    local file = tmp("intr.data")
    local out = H.run_lua(([[
      local perf = require "perf"
      local pid = math.tointeger(io.open("/proc/self/stat"):read("n"))
      local sent
      local busy = "end=$(($(date +%%s) + 20)); while [ $(date +%%s) -lt $end ]; do :; done"
      local r = assert(perf.record({ "sh", "-c", busy }, "cpu-clock", { output = %q,
        on_progress = function(p)
          if not sent and p.samples > 0 then sent = os.execute("kill -INT " .. pid) end
        end }))
      print(r.interrupted, r.signal, r.samples)]]):format(file))
    local why, signal, n = out:match("^(%S+)\t(%S+)\t(%d+)\n$")
    assert.equal("SIGINT", why, out)
    assert.equal("SIGTERM", signal)
    local f <close> = assert(perf.data.open(file))
    local m = 0
    for _ in f:samples("tid") do m = m + 1 end
    assert.is_true(m > 0)
    assert.equal(math.tointeger(tonumber(n)), m)
    if have_perf then
      local script, err = run(("%s script -i %s"):format(PERF, file))
      assert.equal("", err)
      assert.equal(m, select(2, script:gsub("cpu%-clock", "")))
    end
  end)

  it("takes a SIGINT that comes as the command ends: told, and no error after", function()
    -- `true` has exited by the first wake-up, whose drain calls on_progress
    local out = H.run_lua([[
      local perf = require "perf"
      local pid = math.tointeger(io.open("/proc/self/stat"):read("n"))
      local r = assert(perf.record({ "true" }, "cpu-clock", {
        on_progress = function() os.execute("kill -INT " .. pid) end }))
      print(r.interrupted, r.status)
      print("after")]])
    assert.equal("SIGINT\t0\nafter\n", out)
  end)

  it("sizes the rings as perf record does: perf_event_mlock_kb less a page, a power of 2", function()
    local kb = math.tointeger(tonumber(H.sh("cat /proc/sys/kernel/perf_event_mlock_kb")))
    local pages = require("perf.recording.record").default_pages()
    assert.is_true(pages * 4 <= kb - 4 and pages * 8 > kb - 4)
    assert.equal(0, pages & (pages - 1))
    if kb == 516 then assert.equal(128, pages) end     -- the kernel's default
  end)

  it("reports the kernel's count of lost samples, and writes it as perf record does", function()
    -- a 1-page ring read every 50 ms cannot keep up with 100000 reads of a byte
    local argv = { "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=100000" }
    local st = assert(perf.stat(argv, "syscalls:sys_enter_read", { stderr = "/dev/null" }))
    local file = tmp("lost.data")
    local function slow()
      local t = os.clock() + 0.05
      repeat until os.clock() >= t
    end
    local r = assert(perf.record(argv, "syscalls:sys_enter_read",
      { pages = 1, stderr = "/dev/null", output = file, on_progress = slow }))
    local hits = st["syscalls:sys_enter_read"]
    assert.is_true(r.lost > 0)
    -- every hit is kept or lost; the kernel's count also has the few
    -- task records (comm, mmap2, exit) it dropped
    assert.is_true(r.samples + r.lost >= hits, ("%d kept + %d lost < %d"):format(r.samples, r.lost, hits))
    assert.is_true(r.samples + r.lost <= hits + 30)
    local f <close> = assert(perf.data.open(file))
    local told, kept = 0, 0
    for rec in f:records() do
      if rec.type == "lost_samples" then told = told + rec.lost end
      if rec.type == "sample" then kept = kept + 1 end
    end
    assert.equal(r.lost, told)
    assert.equal(r.samples, kept)
    if have_perf then
      local rep = H.sh(("%s report -i %s --stdio 2>/dev/null"):format(PERF, file))
      assert.equal(r.lost, math.tointeger(tonumber(rep:match("# Total Lost Samples: (%d+)"))))
    end
  end)

  it("-a: sampling stops when the command exits (no samples long after its exit record)", function()
    local file = tmp("a.data")
    local r = assert(perf.record({ "sleep", "0.3" }, "cpu-clock", { all_cpus = true, output = file }))
    local f <close> = assert(perf.data.open(file))
    local exec, exit, last, n = nil, nil, 0, 0
    for rec in f:records() do
      if rec.type == "comm" and rec.pid == r.pid and rec.time > 0 then exec = exec or rec.time end
      if rec.type == "exit" and rec.pid == r.pid then exit = rec.time end
      if rec.type == "sample" then
        n = n + 1
        if rec.time > last then last = rec.time end
      end
    end
    assert.equal(r.samples, n)
    assert.truthy(exec and exit, "the command's exec and exit records")
    -- the rings are waited on with the command: the last sample follows its
    -- exit by much less than a sixth of its run (a 200 ms poll ran 100 ms on)
    assert.is_true(last - exit < (exit - exec) / 6, ("%.3f s after a %.3f s run")
      :format((last - exit) / 1e9, (exit - exec) / 1e9))
  end)

  describe("output", function()
    if not have_perf then
      pending("needs the perf tool at " .. PERF)
      return
    end

    it("writes a perf.data file perf script and perf.data.open read, every sample", function()
      local file = tmp("tp.data")
      local r = assert(perf.record({ "ls", "/" }, "syscalls:sys_enter_openat",
                                   { stdout = "/dev/null", output = file }))
      assert.equal(file, r.output)
      local out, err = run(("%s script -i %s -F tid,time,event"):format(PERF, file))
      assert.equal("", err)
      local n = select(2, out:gsub("sys_enter_openat", ""))
      assert.equal(r.samples, n)
      local f <close> = assert(perf.data.open(file))
      assert.equal("syscalls:sys_enter_openat", f.attrs[1].name)
      local m = 0
      for _ in f:samples("tid") do m = m + 1 end
      assert.equal(r.samples, m)
      assert.equal(H.sh("uname -n"):gsub("\n", ""), f.header.hostname)
      assert.same({ "perf-lua", "record", "ls", "/" }, f.header.cmdline)
      -- another command line, as a front gives it
      assert(perf.record({ "true" }, "syscalls:sys_enter_openat",
                         { output = file, cmdline = { "my-tool", "-x", "true" } }))
      local g <close> = assert(perf.data.open(file))
      assert.same({ "my-tool", "-x", "true" }, g.header.cmdline)
      assert.has_error(function() perf.record({ "true" }, "cpu-clock", { cmdline = "x" }) end,
                       "perf.record: cmdline must be a list of strings")
    end)

    it("perf report shows the commands and DSOs a perf record of the same work shows", function()
      local work = "dd if=/dev/zero of=/dev/null bs=64k count=40000"
      local argv = {}
      for w in work:gmatch("%S+") do argv[#argv + 1] = w end
      local mine = tmp("mine.data")
      local r = assert(perf.record(argv, "cpu-clock", { stderr = "/dev/null", output = mine, callchain = true }))
      assert.is_true(r.samples > 20)
      os.execute(("%s record -q -g -F 999 -e cpu-clock -o %s -- %s 2>/dev/null"):format(PERF, tmp("theirs.data"), work))
      local rows, err = report_rows(mine)
      assert.equal("", err)
      local theirs = report_rows(tmp("theirs.data"))
      -- the rows above 10% in perf's file are there in ours, and the
      -- other way round
      for k, pct in pairs(theirs) do
        if pct > 10 then assert.truthy(rows[k], k .. " missing from perf report of our file") end
      end
      for k, pct in pairs(rows) do
        if pct > 10 then assert.truthy(theirs[k], k .. " not in perf record's file") end
      end
      assert.truthy(rows["dd [kernel.kallsyms]"])
      -- kernel symbols named alike: the hottest of ours is one perf names too
      local sym = H.sh(("%s report -i %s --stdio --no-children --sort sym -g none 2>/dev/null"):format(PERF, mine))
        :match("\n%s*[%d.]+%%%s+%[k%]%s+(%S+)")
      assert.truthy(sym)
      local all = H.sh(("%s report -i %s --stdio --no-children --sort sym -g none 2>/dev/null"):format(PERF, tmp("theirs.data")))
      assert.truthy(all:find(sym, 1, true), sym)
      -- and perf script reads the callchains without a word on stderr
      local _, serr = run(("%s script -i %s"):format(PERF, mine))
      assert.equal("", serr)
    end)
  end)

  describe("bin/perf-lua record", function()
    -- run with exec, so a signal that ends it is seen as such
    local function example(args)
      local p = io.popen("exec " .. H.example .. " bin/perf-lua record " .. args .. " 2>&1")
      local out = p:read("a")
      local _, how, code = p:close()
      return out, how, code
    end

    it("samples every hit of a tracepoint, as perf record does", function()
      local st = assert(perf.stat({ "sh", "-c", "ls / >/dev/null" }, "syscalls:sys_enter_openat"))
      local out = example("-n 3 -e syscalls:sys_enter_openat -- sh -c 'ls / >/dev/null'")
      local n = out:match("^(%d+) samples of syscalls:sys_enter_openat at every hit")
      assert.equal(st["syscalls:sys_enter_openat"], math.tointeger(tonumber(n)), out)
    end)

    it("falls back from cycles to cpu-clock as perf does, and says so", function()
      if perf.capabilities().pmu then pending("this machine has a PMU: cycles is sampled") return end
      local out, how, code = example("-n 1 -e cycles:u -- true")
      assert.same({ "exit", 0 }, { how, code })
      H.assert_has("Warning: the cycles:u event is not supported here (no hardware PMU): "
        .. "falling back to cpu-clock:u, as perf does", out)
      assert.matches("\n%d+ samples of cpu%-clock:u at 999 Hz", "\n" .. out)
    end)

    it("says an event is not supported, without a traceback, and exits 255 as perf", function()
      if perf.capabilities().pmu then pending("this machine has a PMU") return end
      local out, how, code = example("-e instructions -- true")
      assert.same({ "exit", 255 }, { how, code })
      H.assert_has('The instructions event is not supported: perf.open "instructions": '
        .. "No such file or directory (ENOENT)", out)
      assert.is_nil(out:find("traceback", 1, true))
      out, how, code = example("-- /nonexistent/cmd")
      assert.same({ "exit", 255 }, { how, code })
      H.assert_has('cannot run "/nonexistent/cmd"', out)
    end)

    it("refuses -F abc and -F 0 before running anything; clamps -F to the kernel's maximum, "
      .. "with perf's warning", function()
      local mark = tmp("ran")
      for _, f in ipairs { "abc", "0" } do
        local out, how, code = example(("-F %s -- touch %s"):format(f, mark))
        assert.same({ "exit", 129 }, { how, code })
        H.assert_has(("-F takes a positive integer, not '%s'"):format(f), out)
        assert.is_nil(io.open(mark))
      end
      local max = perf.capabilities().max_sample_rate
      local file = tmp("max.data")
      local out, how, code = example(("-n 1 -F %d -o %s -- true"):format(max * 2, file))
      assert.same({ "exit", 0 }, { how, code })
      H.assert_has(("warning: Maximum frequency rate (%d Hz) exceeded, throttling from %d Hz to %d Hz.\n"
        .. "         The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate.")
        :format(max, max * 2, max), out)
      local f <close> = assert(perf.data.open(file))
      assert.equal(max, f.attrs[1].attr.sample_freq)
    end)

    it("keeps its whole command line in the header's cmdline, options too, as perf record", function()
      local file = tmp("cmdline.data")
      local out, how, code = example(("-n 3 -o %s -g -- true"):format(file))
      assert.same({ "exit", 0 }, { how, code }, out)
      local f <close> = assert(perf.data.open(file))
      assert.same({ "perf-lua", "record", "-n", "3", "-o", file, "-g", "--", "true" }, f.header.cmdline)
      local shown = H.sh(("%s report -i %s --header-only 2>/dev/null"):format(PERF, file))
      H.assert_has(("# cmdline : perf-lua record -n 3 -o %s -g -- true"):format(file), shown)
    end)

    it("exits as perf record: the command's status, or by the signal that ended it", function()
      local _, how, code = example("-n 1 -- sh -c 'kill -9 $$'")
      assert.same({ "signal", 9 }, { how, code })
      _, how, code = example("-n 1 -- sh -c 'kill -TERM $$'")
      assert.same({ "signal", 15 }, { how, code })
      _, how, code = example("-n 1 -- sh -c 'exit 3'")
      assert.same({ "exit", 3 }, { how, code })
    end)

    it("names libc's functions from its installed debug file, as perf report does", function()
      if not have_perf then pending("needs perf") return end
      local e = require("perf.elf").open(require("perf.event.uprobe").find_binary("libc.so.6"))
      if not (e and e.debug_file) then pending("libc's debug file is not installed (make deps installs libc6-dbg)") return end
      local file = tmp("malloc.data")
      local out = example("-n 40 -o " .. file .. " -- " .. H.lua
        .. " -e 'local t = {} for i = 1, 2e6 do t[i % 1000 + 1] = { i, tostring(i) } end'")
      local theirs = H.sh(("%s report -i %s --stdio --no-children --sort dso,sym -g none 2>/dev/null"):format(PERF, file))
      local rows = 0
      for pct, name in out:match("by symbol:\n(.*)$"):gmatch("\n%s*([%d.]+)%%%s+%d+%s+libc%.so%.6%s+%[%.%] (%S+)") do
        rows = rows + 1
        assert.is_nil(name:match("^0x"), out)           -- every libc row is named
        assert.matches("\n%s*" .. pct:gsub("%.", "%%.") .. "%%%s+libc%.so%.6%s+%[%.%] " .. name:gsub("%p", "%%%0") .. "\n",
          theirs)
      end
      assert.is_true(rows >= 3, out)
      H.assert_has("[.] _int_malloc\n", out)
    end)

    it("-o keeps the perf.data file for perf report; long DSO names keep the columns", function()
      local file = tmp("ex.data")
      local out = example("-n 5 -o " .. file .. " -e syscalls:sys_enter_openat -- sh -c 'ls / >/dev/null'")
      H.assert_has("written to " .. file, out)
      if have_perf then
        local rep = H.sh(("%s report -i %s --stdio --sort comm 2>&1"):format(PERF, file))
        assert.matches("%d+%.%d+%%%s+ls%s*\n", rep)
      end
      -- every symbol row puts "[.]" or "[k]" in the same column
      local cols = {}
      for line in out:match("by symbol:\n(.*)$"):gmatch("[^\n]+") do
        cols[#cols + 1] = line:find("%[[.k]%]")
      end
      assert.is_true(#cols >= 2)
      for _, c in ipairs(cols) do assert.equal(cols[1], c) end
    end)
  end)
end)

describe("perf-lua record's progress", function()
  if H.sh("command -v tmux") == "" then
    it("needs tmux", function() pending("tmux is not installed (make test installs it)") end)
    return
  end

  it("shows samples and the file's size on a terminal, and nothing elsewhere", function()
    -- a command that keeps sampling for two seconds
    local tmux, work = H.tmux_session("rec", "-x 150 -y 20",
      "cd %s && %s bin/perf-lua record -F 999 -o %s/p.data -- env -u LD_PRELOAD sh -c "
      .. "'end=$(($(date +%%s) + 2)); while [ $(date +%%s) -lt $end ]; do :; done'; "
      .. "echo \"exit $?\" > %s/status; sleep 60")
    local seen
    for _ = 1, 40 do
      os.execute("sleep 0.1")
      local screen = H.sh(tmux .. "capture-pane -p -t rec")
      seen = screen:match("%[ perf%-lua record: (%d+) samples, [%d.]+ MB " .. work:gsub("%p", "%%%0") .. "/p%.data %]")
      if seen and tonumber(seen) > 0 then break end
    end
    local status = H.wait_status(work)
    local screen = H.sh(tmux .. "capture-pane -p -S -200 -t rec")     -- with what scrolled off
    os.execute(tmux .. "kill-server 2>/dev/null")
    assert.are.equal("exit 0", status)
    assert.truthy(seen and tonumber(seen) > 0, screen)
    assert.is_nil(screen:find("[ perf-lua record:", 1, true))      -- cleared at the end
    assert.matches("samples of cpu%-clock at 999 Hz", screen)
    -- not on a terminal: quiet
    local p = io.popen(("%s bin/perf-lua record -o %s/q.data -- true 2>&1"):format(H.example, work))
    local out = p:read("a")
    p:close()
    os.execute("rm -rf " .. work)
    assert.is_nil(out:find("perf-lua record:", 1, true), out)
    assert.matches("written to " .. work:gsub("%p", "%%%0") .. "/q.data", out)
  end)
end)

describe("perf-lua record on a terminal, ^C", function()
  if H.sh("command -v tmux") == "" then
    it("needs tmux", function() pending("tmux is not installed (make test installs it)") end)
    return
  end

  it("writes and shows what was recorded, ends the command and exits by SIGINT, as perf", function()
    -- the shell traps ^C, so it goes on to write the status
    local tmux, work = H.tmux_session("intr", "-x 150 -y 30",
      "trap : INT; cd %s && %s bin/perf-lua record -n 3 -o %s/p.data -- env -u LD_PRELOAD sh -c "
      .. "'while :; do :; done' record-intr-spec; echo \"exit $?\" > %s/status; sleep 60")
    local seen
    for _ = 1, 100 do
      os.execute("sleep 0.1")
      seen = H.sh(tmux .. "capture-pane -p -t intr"):match("%[ perf%-lua record: (%d+) samples")
      if seen and tonumber(seen) > 0 then break end
    end
    assert(os.execute(tmux .. "send-keys -t intr C-c"))
    local status = H.wait_status(work)
    local screen = H.sh(tmux .. "capture-pane -p -S -200 -t intr")
    os.execute(tmux .. "kill-server 2>/dev/null")
    local data = work .. "/p.data"
    local f = perf.data.open(data)
    local n, running = 0, {}
    if f then
      for pid in f:samples("pid") do
        n = n + 1
        -- the command, if its pid still runs it
        local cmdline = io.open(("/proc/%d/cmdline"):format(pid))
        if cmdline then
          if cmdline:read("a"):find("record-intr-spec", 1, true) then running[#running + 1] = pid end
          cmdline:close()
        end
      end
      f:close()
    end
    local report = H.sh(("perf report -i %s --stdio --sort comm 2>&1"):format(data))
    os.execute("rm -rf " .. work)
    assert.truthy(seen and tonumber(seen) > 0, screen)
    assert.equal("exit 130", status, screen)              -- killed by SIGINT
    assert.is_nil(screen:find("traceback", 1, true), screen)
    local shown = ("\n" .. screen):match("\n(%d+) samples of cpu%-clock at 999 Hz")
    assert.truthy(shown, screen)
    assert.is_true(n > 0)
    assert.equal(n, math.tointeger(tonumber(shown)))
    assert.matches("written to .-/p%.data", screen)
    assert.matches("%d+%.%d+%%%s+sh%s*\n", report)
    assert.is_nil(report:find("arning", 1, true), report)
    assert.same({}, running)                              -- the command was ended
  end)
end)
