-- perf-lua top, driven on a terminal: tmux runs it in a detached session,
-- the spec reads the screen (capture-pane) and types (send-keys).
local H = require "helpers"

local function sh(cmd) return H.sh(cmd) end

local function slurp(path)
  local f = io.open(path)
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- Waits (at most `seconds`) until `probe()` returns a true value; returns it.
local function wait_for(seconds, probe)
  for _ = 1, seconds * 5 do
    local v = probe()
    if v then return v end
    os.execute("sleep 0.2")
  end
  return probe()
end

describe("perf-lua top on a terminal", function()
  if sh("command -v tmux") == "" then
    it("needs tmux", function() pending("tmux is not installed (make test installs it)") end)
    return
  end

  local socket = ("perf-lua-spec-%d"):format(H.PID)
  local tmux = ("env -u LD_PRELOAD tmux -L %s "):format(socket)
  local dir, spinner

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    -- a busy command with a name of its own: a shell loop run as "top-spec-spin"
    assert(os.execute(("ln -s /bin/sh %s/top-spec-spin"):format(dir)))
    spinner = sh(("env -u LD_PRELOAD %s/top-spec-spin -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"):format(dir))
      :match("%d+")
  end)

  teardown(function()
    os.execute(tmux .. "kill-server 2>/dev/null")
    if spinner then os.execute("kill " .. spinner) end
    os.execute("rm -rf " .. dir)
  end)

  -- Starts top in a 150x40 terminal; after it ends, the shell writes its
  -- exit status and the terminal's settings to files in `dir`.
  local function start(name)
    local cmd = ("cd %s && %s bin/perf-lua top; echo \"exit $?\" > %s/%s.status; stty -a > %s/%s.stty; sleep 60")
      :format(H.root, H.example, dir, name, dir, name)
    local quoted = "'" .. cmd:gsub("'", "'\\''") .. "'"
    assert(os.execute(("%snew-session -d -s %s -x 150 -y 40 %s"):format(tmux, name, quoted)))
  end

  local function screen(name)
    return sh(("%scapture-pane -p -t %s"):format(tmux, name))
  end

  it("shows the hottest commands and functions, and q ends it and restores the terminal", function()
    start("q")
    local pattern = "\n +%d+%.%d%d%% +%d+  top%-spec%-spin %(" .. spinner .. "%)\n"
    local text = wait_for(20, function()
      local s = screen("q")
      return s:match(pattern) and s:match("\n +%% +samples  function +object\n.*%d%%") and s
    end) or screen("q")
    assert.matches("^perf%-lua top: cpu%-clock at 999 Hz on %d+ CPUs, %d+ samples in %d+%.%d s, %d+ lost; q quits\n", text)
    assert.matches("\n +%% +samples  command %(pid%)\n", text)
    assert.matches(pattern, text)
    -- a function row: its share, its samples, [k] or [.], its name and object
    assert.matches("\n +%d+%.%d%d%% +%d+  %[[k.]%] %S+ +%S+", text)
    assert(os.execute(("%ssend-keys -t q q"):format(tmux)))
    local status = wait_for(10, function() return slurp(dir .. "/q.status") end)
    assert.equal("exit 0\n", status)
    local settings = wait_for(5, function() return slurp(dir .. "/q.stty") end)
    assert.matches("[^-]icanon", settings)       -- the line discipline is back
    assert.matches("[^-]echo ", settings)
    assert.matches("[^-]isig", settings)
    assert.not_matches("perf%-lua top:", screen("q"))   -- the alternate screen is gone
  end)

  it("ends on ^C, with exit code 0", function()
    start("intr")
    wait_for(20, function() return screen("intr"):match("samples  function") end)
    assert.matches("^perf%-lua top: ", screen("intr"))
    assert(os.execute(("%ssend-keys -t intr C-c"):format(tmux)))
    local status = wait_for(10, function() return slurp(dir .. "/intr.status") end)
    assert.equal("exit 0\n", status)
    assert.matches("[^-]icanon", wait_for(5, function() return slurp(dir .. "/intr.stty") end))
  end)
end)

describe("perf-lua top not on a terminal", function()
  it("prints a report for each refresh, and stops on SIGINT", function()
    local out, pidfile = os.tmpname(), os.tmpname()
    -- interrupted once two refreshes of 0.2 s are out (however long a busy
    -- machine takes to start it)
    os.execute(("(%s bin/perf-lua top -d 0.2 -E 5 > %s 2>&1 & echo $! > %s; wait $!; echo \"exit $?\" >> %s) &")
      :format(H.example, out, pidfile, out))
    local function two_reports()
      local _, n = (slurp(out) or ""):gsub("perf%-lua top: ", "")
      return n >= 2
    end
    assert.is_true(wait_for(20, two_reports), slurp(out))
    os.execute("kill -INT " .. assert(slurp(pidfile)):match("%d+"))
    assert.truthy(wait_for(20, function() return (slurp(out) or ""):match("\nexit %d+\n$") end), slurp(out))
    os.remove(pidfile)
    local text = slurp(out)
    os.remove(out)
    assert.matches("^perf%-lua top: cpu%-clock at 999 Hz on %d+ CPUs, %d+ samples in 0%.%d s, %d+ lost\n", text)
    assert.not_matches("\27", text)                 -- no escape sequences
    local _, reports = text:gsub("perf%-lua top: ", "")
    assert.is_true(reports >= 2, text)
    assert.matches("\nexit 0\n$", text)
  end)

  it("refuses a bad option with exit code 129", function()
    local text = sh(("%s bin/perf-lua top -F 0 2>&1; echo \"exit $?\""):format(H.example))
    assert.matches("^perf%-lua top: %-F needs a positive number of samples per second\n", text)
    assert.matches("\nexit 129\n$", text)
  end)
end)
