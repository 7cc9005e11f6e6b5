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
