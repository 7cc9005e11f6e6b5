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
      "perf.record: unknown option 'outptu' (did you mean output?)")
    assert.has_error(function() perf.record("true", "cpu-clock") end)
    assert.has_error(function() perf.record({ "true" }, "cpu-clock", { freq = 10, period = 10 }) end)
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
    local function example(args)
      local p = io.popen(H.example .. " bin/perf-lua record " .. args .. " 2>&1")
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

    it("says why an event cannot be sampled, without a traceback, and exits 1", function()
      local out, how, code = example("-e cycles -- true")
      assert.same({ "exit", 1 }, { how, code })
      H.assert_has('perf.open "cycles": No such file or directory (ENOENT)', out)
      assert.is_nil(out:find("traceback", 1, true))
    end)

    it("exits 128 + the signal's number when a signal ended the command", function()
      local _, how, code = example("-n 1 -- sh -c 'kill -9 $$'")
      assert.same({ "exit", 137 }, { how, code })
      _, how, code = example("-n 1 -- sh -c 'exit 3'")
      assert.same({ "exit", 3 }, { how, code })
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
    local work = os.tmpname()
    os.remove(work)
    assert(os.execute("mkdir -p " .. work))
    local socket = ("perf-lua-record-%d"):format(H.PID)
    local tmux = ("env -u LD_PRELOAD tmux -L %s "):format(socket)
    local preload = os.getenv("LD_PRELOAD")
    -- a command that keeps sampling for two seconds
    local cmd = ("cd %s && %s%s bin/perf-lua record -F 999 -o %s/p.data -- env -u LD_PRELOAD sh -c "
      .. "'end=$(($(date +%%s) + 2)); while [ $(date +%%s) -lt $end ]; do :; done'; "
      .. "echo \"exit $?\" > %s/status; sleep 60")
      :format(H.root, preload and ("LD_PRELOAD='%s' "):format(preload) or "", H.example, work, work)
    assert(os.execute(("%snew-session -d -s rec -x 150 -y 20 %s"):format(tmux, "'" .. cmd:gsub("'", "'\\''") .. "'")))
    local seen
    for _ = 1, 40 do
      os.execute("sleep 0.1")
      local screen = H.sh(tmux .. "capture-pane -p -t rec")
      seen = screen:match("%[ perf%-lua record: (%d+) samples, [%d.]+ MB " .. work:gsub("%p", "%%%0") .. "/p%.data %]")
      if seen and tonumber(seen) > 0 then break end
    end
    local status
    for _ = 1, 50 do
      local f = io.open(work .. "/status")
      if f then status = f:read("l") f:close() break end
      os.execute("sleep 0.2")
    end
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
