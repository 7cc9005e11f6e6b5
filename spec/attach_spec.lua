-- perf.profile({ pid = P }) and perf.profiler{ pid = P } (lua/perf/attach.lua,
-- csrc/attach*.c): a running Lua 5.4 program profiled by pid, without a
-- change to it, on Debian's lua5.4 running spec/fixtures/attach_target.lua.
local perf = require "perf"
local H = require "helpers"

local FIXTURE = H.root .. "/spec/fixtures/attach_target.lua"
local F = FIXTURE:gsub("%p", "%%%0")
local OPENAT = "syscalls:sys_enter_openat"
local OPEN_LINE, SPIN_LINE = 11, 18
local as_root = H.sh("id -u") == "0\n" and it or pending
local with_tracefs = (H.sh("id -u") == "0\n" and perf.capabilities().tracefs) and it or pending

local finish

-- Starts the fixture under lua5.4: { pid, out (its stdout), fifo }. The
-- shell waits for it and prints its exit status after it.
local function start_target(n, after)
  local fifo = os.tmpname()
  os.remove(fifo)
  assert(os.execute("mkfifo " .. fifo))
  local out = io.popen(("lua5.4 %s %s %d %s & echo $!; wait $! 2>/dev/null; echo \"status $?\"")
    :format(FIXTURE, fifo, n, after))
  local pid = math.tointeger(tonumber(out:read("l")))
  -- it is blocked opening the FIFO once /proc shows it in that open
  for _ = 1, 500 do
    local w = H.read_file(("/proc/%d/wchan"):format(pid))
    if w and w ~= "0" and w ~= "" and H.sh(("ls -l /proc/%d/fd"):format(pid)) ~= "" then break end
    os.execute("sleep 0.01")
  end
  local t = { pid = pid, out = out, fifo = fifo }
  finally(function() finish(t) end)
  return t
end

-- Lets the fixture go (its opens begin) and waits until it has done them.
local function go(t)
  local f = assert(io.open(t.fifo, "w"))
  f:write("go\n")
  f:close()
  assert.equal("done", t.out:read("l"))
end

-- Ends the fixture (if it runs still) and returns its exit status: "143"
-- when the SIGTERM sent here ended it.
function finish(t)
  if t.done then return t.status end
  t.done = true
  os.execute(("kill %d 2>/dev/null"):format(t.pid))
  local rest = t.out:read("a")
  t.out:close()
  os.remove(t.fifo)
  t.status = rest:match("status (%d+)")
  return t.status
end

-- What of a process a profiler must leave as it was.
local function state_of(pid)
  local st = H.read_file(("/proc/%d/status"):format(pid)) or ""
  local s = {}
  for _, k in ipairs { "TracerPid", "SigBlk", "SigIgn", "SigCgt", "SigPnd", "ShdPnd" } do
    s[k] = st:match(k .. ":%s*(%S+)")
  end
  s.fds = H.sh(("ls /proc/%d/fd"):format(pid))
  return s
end

describe("perf.profile of a running process", function()
  with_tracefs("charges each openat of lua5.4 to the line of its io.open, exactly", function()
    local t = start_target(37, "wait")
    local before = state_of(t.pid)
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)
    local prof = assert(p:stop())
    p:close()
    local after = state_of(t.pid)
    local lines = prof:lines()
    assert.equal(FIXTURE, lines[1].source)
    assert.equal(OPEN_LINE, lines[1].line)
    assert.equal(37, lines[1].count)
    assert.equal("opens", lines[1].name)
    assert.equal(37, prof.samples)      -- the FIFO's own open was under way already
    assert.matches(F .. ":21%);opens %(" .. F .. ":11%) 37\n", prof:folded())
    assert.matches("attached to pid %d+ %(lua5%.4%), Lua 5%.4%.%d by lua_ident in /usr/bin/lua5%.4", prof.note)
    assert.same(before, after)          -- handlers, mask, fds: as they were
    assert.equal("0", after.TracerPid)
    assert.equal("143", finish(t))      -- it ran on until killed here (SIGTERM)
  end)

  as_root("samples cpu-clock for a duration on the lines of the busy loop", function()
    local t = start_target(0, "spin")
    go(t)
    local before = state_of(t.pid)
    local prof = assert(perf.profile({ pid = t.pid }, { duration = 0.5, freq = 499 }))
    local after = state_of(t.pid)
    assert.equal("cpu-clock at 499 Hz", prof:sampling())
    assert.is_true(prof.samples > 0)
    for _, l in ipairs(prof:lines()) do
      assert.equal(FIXTURE, l.source)
      assert.is_true(l.line >= 16 and l.line <= SPIN_LINE + 1, "line " .. l.line)
      assert.equal("spin", l.name)
    end
    assert.equal("spin", prof:functions()[1].name)
    assert.same(before, after)
    assert.equal("143", finish(t))      -- it ran on until killed here (SIGTERM)
  end)

  it("refuses a process that is gone", function()
    local p = io.popen("sh -c 'echo $$'")
    local pid = math.tointeger(tonumber(p:read("l")))
    p:close()
    local msg, errno = H.fails(perf.profile({ pid = pid }, { duration = 0.1 }))
    assert.equal(perf.core.errno.ESRCH, errno)
    assert.matches("no process " .. pid .. ": it is gone", msg)
  end)

  as_root("refuses a process without Lua 5.4, saying what it found", function()
    local cases = {
      { "sleep 5", "found no Lua %(no lua_ident in its executable or the libraries it mapped%)" },
      { "lua5.3 -e 'while true do end'", "found Lua 5%.3%.%d+ in /usr/bin/lua5%.3" },
      { "luajit -e 'while true do end'", "found LuaJIT 2%.1[%w%.%-]* in /usr/bin/luajit" },
    }
    for _, c in ipairs(cases) do
      local p = io.popen(("%s & echo $!"):format(c[1]))
      local pid = math.tointeger(tonumber(p:read("l")))
      os.execute("sleep 0.1")
      local msg, errno = H.fails(perf.profile({ pid = pid }, { duration = 0.1 }))
      os.execute("kill " .. pid)
      p:close()
      assert.equal(perf.core.errno.ENOEXEC, errno)
      assert.matches("runs no Lua 5%.4: " .. c[2], msg)
    end
  end)

  it("raises for misuse: no duration or command, options not supported yet", function()
    assert.error_matches(function() perf.profile({ pid = 1 }) end, "needs opts.duration")
    assert.error_matches(function() perf.profile({ pid = 1, tid = 2 }, { duration = 1 }) end,
      "a target is { pid = P } or { tid = T }")
    assert.error_matches(function() perf.profile({ pid = 1 }, { duration = 1, native = true }) end,
      "native is not supported for a running process yet")
    assert.error_matches(function() perf.profile({ pid = 1 }, { duration = 0 }) end,
      "duration must be a number of seconds")
  end)

  as_root("perf-lua profile -p prints the report and writes -o", function()
    local t = start_target(0, "spin")
    go(t)
    local folded = os.tmpname()
    local out = H.sh(("%s bin/perf-lua profile -p %d --duration 0.3 -o %s.folded; echo \"exit $?\"")
      :format(H.example, t.pid, folded))
    finish(t)
    assert.matches("exit 0\n$", out)
    assert.matches("# perf.profile: cpu%-clock at 999 Hz\n", out)
    assert.matches("%d+%.%d+%%  " .. F .. ":1[6-9]  spin\n", out)
    local text = H.read_file(folded .. ".folded")
    os.remove(folded)
    os.remove(folded .. ".folded")
    assert.matches("^main chunk %(" .. F .. ":24%);spin %(" .. F .. ":1[6-9]%) %d+\n", text)
  end)
end)
