-- perf-lua profile (lua/perf/cli/profile.lua): the options of Profiling II,
-- each on a script whose lines the tests name.

local perf = require "perf"
local H = require "helpers"

local SCRIPT = "spec/fixtures/profile_script.lua"
local S = SCRIPT:gsub("%p", "%%%0")
local OPENAT = "syscalls:sys_enter_openat"
local with_tracefs = perf.capabilities().tracefs and it or pending

local function run(args)
  local p = io.popen(("%s bin/perf-lua profile %s 2>&1; echo \"exit $?\""):format(H.example, args))
  local out = p:read("a")
  p:close()
  return out
end

local function tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  return dir
end

describe("perf-lua profile options", function()
  with_tracefs("--counters charges each event's count per line", function()
    local out = run("-e " .. OPENAT .. " --counters syscalls:sys_enter_close,page-faults " .. SCRIPT .. " 30 10")
    assert.matches("exit 0\n$", out)
    assert.matches("# 40 samples, 0 lost\n", out)
    assert.matches("\n# syscalls:sys_enter_close   page%-faults  Line\n", out)
    -- each openat sample carries the close before it: 39 in all
    assert.matches("\n%s+39%s+%d+  %(all%)\n", out)
    assert.matches("\n%s+29%s+%d+  " .. S .. ":4  main chunk\n", out)
    assert.matches("\n%s+10%s+%d+  " .. S .. ":5  main chunk\n", out)
  end)

  it("--mode off-cpu charges the sleep to its line; wall adds the time on the CPU", function()
    local out = run("--mode off-cpu " .. SCRIPT)
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile: off%-CPU time, at every context switch\n", out)
    assert.matches("#    Self  Line\n%s+%d+%.%d+%%  " .. S .. ":6  main chunk\n", out)  -- the most
    out = run("--mode wall " .. SCRIPT)
    assert.matches("# perf.profile: wall time: cpu%-clock at 999 Hz and every context switch\n", out)
    assert.matches(S .. ":6  main chunk\n", out)
    assert.matches(S .. ":10  main chunk\n", out)
  end)

  it("--mode off-cpu on examples/waits.lua: the child's wait first, then the pipe's", function()
    local out = run("--mode off-cpu examples/waits.lua 100000")
    assert.matches("exit 0\n$", out)
    assert.matches("#    Self  Line\n%s+%d+%.%d+%%  examples/waits%.lua:17  wait_child\n", out)
    assert.matches("\n%s+%d+%.%d+%%  examples/waits%.lua:22  read_pipe\n", out)
  end)

  it("--mode alloc charges the bytes to the line that allocated", function()
    local out = run("--mode alloc " .. SCRIPT)
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile: allocated bytes, a sample every 524288 bytes\n", out)
    assert.matches("#    Self  Line\n%s+%d+%.%d+%%  " .. S .. ":8  main chunk\n", out)
  end)

  it("--timer samples with the CPU-time timer", function()
    local out = run("--timer -F 500 " .. SCRIPT)
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile: timer at 500 Hz\n", out)
    assert.matches(S .. ":10  main chunk\n", out)
  end)

  with_tracefs("-o x.pb.gz writes pprof", function()
    local dir = tmpdir()
    local out = run("-e " .. OPENAT .. " -o " .. dir .. "/p.pb.gz " .. SCRIPT .. " 3 1")
    assert.matches("# written to " .. dir:gsub("%p", "%%%0") .. "/p%.pb%.gz\n", out)
    local f = assert(io.open(dir .. "/p.pb.gz", "rb"))
    assert.equal("\31\139", f:read(2))                -- gzip
    f:close()
    local bytes = H.sh("gzip -dc " .. dir .. "/p.pb.gz")
    H.assert_has(OPENAT, bytes)
    H.assert_has(SCRIPT, bytes)
    os.execute("rm -rf " .. dir)
  end)

  with_tracefs("--diff BASE compares with an earlier run's folded stacks", function()
    local dir = tmpdir()
    local out = run("-e " .. OPENAT .. " -o " .. dir .. "/base.folded " .. SCRIPT .. " 30 10")
    assert.matches("exit 0\n$", out)
    out = run("-e " .. OPENAT .. " --diff " .. dir .. "/base.folded -o " .. dir .. "/d.folded " .. SCRIPT .. " 10 30")
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile diff: " .. OPENAT .. "\n# base 40 samples, now 40 samples\n", out)
    assert.matches("\n%s+75%.00%%%s+25%.00%%%s+%-50%.00  " .. S .. ":4  main chunk\n", out)
    assert.matches("\n%s+25%.00%%%s+75%.00%%%s+%+50%.00  " .. S .. ":5  main chunk\n", out)
    local f = assert(io.open(dir .. "/d.folded"))
    local folded = f:read("a")
    f:close()
    assert.matches("main chunk %(" .. S .. ":4%) 30 10\n", folded)
    assert.matches("main chunk %(" .. S .. ":5%) 10 30\n", folded)
    out = run("-e " .. OPENAT .. " --diff " .. dir .. "/base.folded -o " .. dir .. "/d.svg " .. SCRIPT .. " 10 30")
    assert.matches("# written to .-/d%.svg\n", out)
    f = assert(io.open(dir .. "/d.svg"))
    assert.matches("Differential flame graph", f:read("a"))
    f:close()
    H.assert_has("--diff: " .. dir .. "/none", run("--diff " .. dir .. "/none " .. SCRIPT))
    os.execute("rm -rf " .. dir)
  end)

  it("refuses options that do not go together", function()
    assert.matches("give %-e, %-%-timer or %-%-mode, not two of them", run("--timer --mode wall " .. SCRIPT))
    assert.matches("%-%-mode is off%-cpu, wall or alloc, not 'walll'", run("--mode walll " .. SCRIPT))
    assert.matches("exit 129\n$", run("--mode walll " .. SCRIPT))
    assert.matches("%-%-counters needs event names", run("--counters , " .. SCRIPT))
    local out = run("--counters page-fualts " .. SCRIPT)
    H.assert_has("page-fualts", out)
    assert.matches("exit 1\n$", out)
  end)
end)

-- A script `name` in dir with `text`, readable by anyone.
local function script(dir, name, text)
  local path = dir .. "/" .. name
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

local BUSY = "local x = 0 for i = 1, 3000000 do x = x + i % 7 end\n"

describe("perf-lua profile keeps what it measured", function()
  it("when the script calls os.exit: the report, the -o file, the script's code", function()
    local dir = tmpdir()
    local s = script(dir, "exit.lua", BUSY .. "os.exit(3)\n")
    local out = run("-o " .. dir .. "/p.folded " .. s)
    assert.matches("exit 3\n$", out)
    assert.matches("#    Self  Line\n%s+%d+%.%d+%%  " .. s:gsub("%p", "%%%0") .. ":1  main chunk\n", out)
    assert.matches("# written to .-/p%.folded\n", out)
    assert.matches("main chunk %(.-exit%.lua:1%) %d+\n", H.read_file(dir .. "/p.folded"))
    s = script(dir, "exit_true.lua", BUSY .. "os.exit(true, true)\n")
    out = run(s)
    assert.matches("exit 0\n$", out)
    assert.matches("exit_true%.lua:1  main chunk\n", out)
    s = script(dir, "exit_false.lua", BUSY .. "os.exit(false)\n")
    assert.matches("exit 1\n$", run(s))
    os.execute("rm -rf " .. dir)
  end)

  it("when the script raises: lua5.4's message and traceback, the report, status 1", function()
    local dir = tmpdir()
    script(dir, "err.lua", "local function f()\n  " .. BUSY .. "  error('boom')\nend\nf()\n")
    local lua_err = H.sh(("cd %s && %s err.lua 2>&1 >/dev/null; echo \"exit $?\""):format(dir, H.lua))
    local p = io.popen(("cd %s && %s %s/bin/perf-lua profile -o p.folded err.lua 2>err.txt; echo \"exit $?\"")
      :format(dir, H.example, H.root))
    local out = p:read("a")
    p:close()
    local err = H.read_file(dir .. "/err.txt")
    os.execute("rm -rf " .. dir)
    assert.matches("^lua5%.4: err%.lua:3: boom\nstack traceback:\n\t%[C%]: in function 'error'\n"
      .. "\terr%.lua:3: in local 'f'\n\terr%.lua:5: in main chunk\n\t%[C%]: in %?\nexit 1\n$", lua_err)
    assert.equal(lua_err, err .. "exit 1\n")
    assert.matches("exit 1\n$", out)
    assert.matches("err%.lua:2  f\n", out)
    assert.matches("# written to p%.folded\n", out)
  end)

  if H.sh("command -v tmux") == "" then
    it("needs tmux", function() pending("tmux is not installed (make test installs it)") end)
    return
  end

  -- Runs perf-lua profile on a terminal, presses ^C once the screen shows
  -- "ready", and returns the status, the screen and the -o file.
  local function interrupt(text)
    local dir = tmpdir()
    local s = script(dir, "intr.lua", text)
    local tmux, work = H.tmux_session("prof-intr", "-x 150 -y 40",
      "trap : INT; cd %s && %s bin/perf-lua profile -n 3 -o %s/p.folded " .. s
      .. "; echo \"exit $?\" > %s/status; sleep 60")
    local screen
    for _ = 1, 100 do
      os.execute("sleep 0.1")
      screen = H.sh(tmux .. "capture-pane -p -t prof-intr")
      if screen:find("ready 1") then break end
    end
    os.execute("sleep 0.3")
    assert(os.execute(tmux .. "send-keys -t prof-intr C-c"))
    local status = H.wait_status(work)
    screen = H.sh(tmux .. "capture-pane -p -S -200 -t prof-intr")
    os.execute(tmux .. "kill-server 2>/dev/null")
    local folded = H.read_file(work .. "/p.folded")
    os.execute("rm -rf " .. dir .. " " .. work)
    return status, screen, folded
  end

  it("at ^C: the report, the -o file, and it ends by SIGINT (130)", function()
    local status, screen, folded = interrupt("print('ready 1') io.stdout:flush()\nwhile true do end\n")
    assert.equal("exit 130", status, screen)
    assert.matches("#    Self  Line\n%s+%d+%.%d+%%  .-intr%.lua:2  main chunk\n", screen)
    assert.matches("main chunk %(.-intr%.lua:2%) %d+\n", folded or "", screen)
  end)

  it("at ^C while os.execute waits for a command: the first ^C ends the script", function()
    local status, screen, folded = interrupt([[
for i = 1, 3 do
  print("ready " .. i) io.stdout:flush()
  os.execute("sleep 5")
end
]])
    assert.equal("exit 130", status, screen)
    assert.is_nil(screen:find("ready 2", 1, true), screen)
    assert.matches("# perf%.profile: cpu%-clock", screen)
    assert.truthy(folded, screen)
  end)
end)
