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
    -- in the lines, the child's wait before the pipe's (on a loaded machine
    -- the computing line's preemptions are off-CPU time too, and may lead)
    local lines = out:match("#    Self  Line\n(.*)$")
    local wait = lines:find("\n?%s+%d+%.%d+%%  examples/waits%.lua:17  wait_child\n")
    local pipe = lines:find("\n%s+%d+%.%d+%%  examples/waits%.lua:22  read_pipe\n")
    assert.truthy(wait and pipe and wait < pipe, out)
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
    local s = script(dir, "err.lua", "local function f()\n  " .. BUSY .. "  error('boom')\nend\nf()\n")
    local lua_err = H.sh(("%s %s 2>&1 >/dev/null; echo \"exit $?\""):format(H.lua, s))
    local p = io.popen(("%s bin/perf-lua profile -o %s/p.folded %s 2>%s/err.txt; echo \"exit $?\"")
      :format(H.example, dir, s, dir))
    local out = p:read("a")
    p:close()
    local err = H.read_file(dir .. "/err.txt")
    os.execute("rm -rf " .. dir)
    local e = s:gsub("%p", "%%%0")
    assert.matches("^lua5%.4: " .. e .. ":3: boom\nstack traceback:\n\t%[C%]: in function 'error'\n"
      .. "\t" .. e .. ":3: in local 'f'\n\t" .. e .. ":5: in main chunk\n\t%[C%]: in %?\nexit 1\n$", lua_err)
    assert.equal(lua_err, err .. "exit 1\n")
    assert.matches("exit 1\n$", out)
    assert.matches("err%.lua:2  f\n", out)
    assert.matches("# written to .-/p%.folded\n", out)
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

describe("perf-lua profile runs the script as lua5.4 does", function()
  it("with arg[-1] the interpreter, arg[0] the script, its arguments after", function()
    local dir = tmpdir()
    local s = script(dir, "args.lua", "print(arg[-1], arg[0], arg[1], arg[2], select('#', ...))\n")
    local out = run(s .. " a b")
    local lua_out = H.sh(("%s %s a b"):format(H.lua, s))
    os.execute("rm -rf " .. dir)
    assert.equal(H.lua .. "\t" .. s .. "\ta\tb\t2\n", lua_out)
    assert.equal(lua_out, out:match("^[^\n]*\n"))
  end)
end)

describe("perf-lua profile checks its options before the run", function()
  -- a script that leaves a mark when it runs
  local function marking(dir)
    return script(dir, "mark.lua", ("io.open(%q, 'w'):close()\n"):format(dir .. "/ran") .. BUSY)
  end

  it("refuses -o with a name of no known format, or where no file can be made", function()
    local dir = tmpdir()
    local s = marking(dir)
    local out = run("-o " .. dir .. "/p.xyz " .. s)
    assert.matches("exit 129\n$", out)
    H.assert_has("-o " .. dir .. "/p.xyz: cannot tell the format from the name: use .svg, .pb.gz, .json or .folded", out)
    assert.is_nil(out:find("traceback", 1, true), out)
    out = run("-o " .. dir .. "/none/p.svg " .. s)
    assert.matches("exit 1\n$", out)
    H.assert_has("-o " .. dir .. "/none/p.svg: No such file or directory", out)
    local ran = H.sh("ls " .. dir)
    os.execute("rm -rf " .. dir)
    assert.equal("mark.lua\n", ran)                   -- refused before the run
  end)

  it("takes as --diff BASE only folded stacks, not another file or format", function()
    local dir = tmpdir()
    local s = marking(dir)
    for _, ext in ipairs { "svg", "pb.gz", "json" } do
      assert.matches("exit 0\n$", run("-o " .. dir .. "/p." .. ext .. " " .. script(dir, "w.lua", BUSY)))
    end
    os.remove(dir .. "/ran")
    local function refused(base, why)
      local out = run("--diff " .. base .. " " .. s)
      assert.matches("exit 1\n$", out)
      H.assert_has("--diff " .. base .. ": " .. why, out)
      H.assert_has("give the folded stacks of an earlier run", out)
    end
    refused("/etc/passwd", "line 1 is not a folded stack")
    refused(dir .. "/p.svg", "an XML file (an SVG flame graph?)")
    refused(dir .. "/p.pb.gz", "a gzip file (pprof's .pb.gz?)")
    refused(dir .. "/p.json", "a JSON file (speedscope's?)")
    refused("/dev/null", "no stacks in it")
    local ran = io.open(dir .. "/ran")
    os.execute("rm -rf " .. dir)
    assert.is_nil(ran)
  end)

  it("samples at the kernel's maximum rate, at most, with perf's warning", function()
    local max = perf.capabilities().max_sample_rate
    if not max then pending("no perf_event_max_sample_rate here") return end
    local dir = tmpdir()
    local out = run("-F 1000000 " .. script(dir, "w.lua", BUSY))
    os.execute("rm -rf " .. dir)
    assert.matches("exit 0\n$", out)
    H.assert_has(("warning: Maximum frequency rate (%d Hz) exceeded, throttling from 1000000 Hz to %d Hz.")
      :format(max, max), out)
    -- perf.profile's own limit: a signal per sample
    local rate = math.min(max, 20000)
    assert.matches("# perf%.profile: cpu%-clock at " .. rate .. " Hz\n", out)
    if max > 20000 then H.assert_has(("sampling at 20000 Hz, not %d"):format(max), out) end
    assert.matches("w%.lua:1  main chunk\n", out)
  end)

  it("leaves no cut -o file when the disk is full: the file there stays as it was", function()
    local dir = tmpdir()
    os.execute("chmod 777 " .. dir)
    local f = assert(io.open(dir .. "/p.svg", "w"))
    f:write("before\n")
    f:close()
    local p = io.popen(("trap '' XFSZ; ulimit -f 2; %s bin/perf-lua profile -o %s/p.svg %s 2>&1; echo \"exit $?\"")
      :format(H.example, dir, script(dir, "w.lua", BUSY)))
    local out = p:read("a")
    p:close()
    local kept, listing = H.read_file(dir .. "/p.svg"), H.sh("ls " .. dir)
    os.execute("rm -rf " .. dir)
    assert.matches("exit 1\n$", out)
    H.assert_has("p.svg: File too large", out)
    assert.equal("before\n", kept)
    assert.equal("p.svg\nw.lua\n", listing)
  end)
end)

describe("perf-lua profile and record for a user without privileges (perf_event_paranoid 2)", function()
  -- runs perf-lua's args as nobody, with a script (text) nobody can read
  local function as_nobody(args, text)
    local dir = tmpdir()
    os.execute("chmod 755 " .. dir)
    local s = text and script(dir, "w.lua", text)
    local list = {}
    for w in args:gmatch("%S+") do list[#list + 1] = ("%q"):format(w) end
    if s then list[#list + 1] = ("%q"):format(s) end
    local out, why = H.run_as_nobody(("arg = { [0] = 'perf-lua' } io.stdout:setvbuf('no') "
      .. "local code = require('perf.cli').main { %s } print('exit ' .. code) os.exit(code)")
      :format(table.concat(list, ", ")))
    os.execute("rm -rf " .. dir)
    return out, why
  end
  local paranoid2 = (perf.capabilities().paranoid or 0) >= 2

  it("profile samples cpu-clock:u, not the timer", function()
    local out, why = as_nobody("profile", BUSY)
    if not out then pending(why) return end
    if not paranoid2 then pending("perf_event_paranoid is below 2 here") return end
    assert.matches("# perf%.profile: cpu%-clock:u at 999 Hz\n", out)
    H.assert_has("kernel-mode sampling is not permitted here (perf_event_paranoid", out)
    assert.matches("w%.lua:1  main chunk\n", out)
  end)

  it("--counters page-faults counts page-faults:u", function()
    local out, why = as_nobody("profile --counters page-faults,context-switches", BUSY)
    if not out then pending(why) return end
    if not paranoid2 then pending("perf_event_paranoid is below 2 here") return end
    assert.matches("\n#%s+page%-faults:u%s+context%-switches:u  Line\n", out)
  end)

  it("--mode off-cpu and wall say what works instead", function()
    for _, mode in ipairs { "off-cpu", "wall" } do
      local out, why = as_nobody("profile --mode " .. mode, BUSY)
      if not out then pending(why) return end
      if not paranoid2 then pending("perf_event_paranoid is below 2 here") return end
      H.assert_has("off-CPU and wall time need the kernel's context switches", out)
      H.assert_has("run with CAP_PERFMON (or paranoid <= 1), or profile CPU time", out)
      assert.is_nil(out:find("exclude_kernel", 1, true), out)
    end
  end)

  it("record without -a samples user space, where perf record works as the same user", function()
    local out, why = as_nobody("record -n 3 -- " .. H.lua, BUSY)
    if not out then pending(why) return end
    if not paranoid2 then pending("perf_event_paranoid is below 2 here") return end
    local data = os.tmpname()
    os.execute("chmod 666 " .. data)
    local perf_ok = os.execute(("setpriv --reuid=65534 --regid=65534 --clear-groups "
      .. "perf record -q -o %s -- true >/dev/null 2>&1"):format(data))
    os.remove(data)
    assert.is_true(perf_ok)                            -- perf record works here
    assert.matches("[1-9]%d* samples of cpu%-clock:u at 999 Hz on %d+ CPUs", out)
    assert.matches("exit 0\n$", out)
  end)
end)
