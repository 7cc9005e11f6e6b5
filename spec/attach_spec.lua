-- perf.profile({ pid = P }) and perf.profiler{ pid = P } (lua/perf/profiling/attach.lua,
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

-- What a test leaves to undo, undone after it (busted keeps one finally()).
local deferred = {}
local function defer(fn) deferred[#deferred + 1] = fn end

-- A file's bytes, or nil when it cannot be read (a process that is gone).
local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- Whether pid has exited (gone, or a zombie).
local function gone(pid)
  local st = read(("/proc/%d/stat"):format(pid))
  return not st or st:match("^%d+ %b() Z")
end

-- Starts the fixture under lua5.4: { pid, out (its stdout), fifo }. The
-- shell waits for it and prints its exit status after it.
local function start_target(n, after, how, prefix, program)
  local fifo = os.tmpname()
  os.remove(fifo)
  assert(os.execute("mkfifo -m 666 " .. fifo))
  local out = io.popen(("%s%s %s %d %s %s & echo $!; wait $! 2>/dev/null; echo \"status $?\"")
    :format(prefix or "", program or ("lua5.4 " .. FIXTURE), fifo, n, after, how or "-"))
  local pid = math.tointeger(tonumber(out:read("l")))
  if prefix and prefix:match("unshare") then     -- its child is the fixture
    for _ = 1, 500 do
      local kids = read(("/proc/%d/task/%d/children"):format(pid, pid)) or ""
      local kid = math.tointeger(tonumber(kids:match("%d+")))
      if kid then pid = kid break end
      os.execute("sleep 0.01")
    end
  end
  -- it is blocked opening the FIFO once /proc shows it waiting for a writer
  -- (a fixture that never gets there would leave go() waiting for ever)
  local waiting = false
  for _ = 1, 1000 do
    waiting = (read(("/proc/%d/wchan"):format(pid)) or ""):match("wait_for_partner")
    if waiting or gone(pid) then break end
    os.execute("sleep 0.01")
  end
  if not waiting then
    os.execute("kill -9 " .. pid .. " 2>/dev/null")
    error("the fixture did not start: " .. out:read("a"), 2)
  end
  local t = { pid = pid, out = out, fifo = fifo, ns = prefix and prefix:match("unshare") }
  defer(function() finish(t) end)
  return t
end

-- Lets the fixture go (its opens begin) and waits until it has done them.
-- The FIFO stays open for writing, so that "wait" then blocks reading it
-- (an open of its own would race with the profiler's stop).
local function go(t)
  local f = assert(io.open(t.fifo, "w"))
  f:write("go\n")
  f:flush()
  t.writer = f
  assert.equal("done", t.out:read("l"))
end

-- Ends the fixture (if it runs still) and returns its exit status: "143"
-- when the SIGTERM sent here ended it.
function finish(t)
  if t.done then return t.status end
  t.done = true
  -- the init of a pid namespace takes from outside only SIGKILL (and handled signals)
  os.execute(("kill %s %d 2>/dev/null"):format(t.ns and "-9" or "", t.pid))
  local rest = t.out:read("a")
  t.out:close()
  if t.writer then t.writer:close() end
  os.remove(t.fifo)
  t.status = rest:match("status (%d+)")
  return t.status
end

-- What of a process a profiler must leave as it was.
local function state_of(pid)
  local st = read(("/proc/%d/status"):format(pid)) or ""
  local s = {}
  for _, k in ipairs { "TracerPid", "SigBlk", "SigIgn", "SigCgt", "SigPnd", "ShdPnd" } do
    s[k] = st:match(k .. ":%s*(%S+)")
  end
  s.fds = H.sh(("ls /proc/%d/fd"):format(pid))
  return s
end

-- Waits until f() is true (up to 10 s); returns its last value.
local function until_true(f)
  local v
  for _ = 1, 1000 do
    v = f()
    if v then return v end
    os.execute("sleep 0.01")
  end
  return v
end

local function traced(pid) return state_of(pid).TracerPid ~= "0" end
-- Whether pid's tracer samples it already: it holds the event (opened enabled).
local function sampled(pid)
  local tracer = state_of(pid).TracerPid
  return tracer ~= "0" and H.sh(("ls -l /proc/%s/fd 2>/dev/null"):format(tracer)):match("perf_event") ~= nil
end

-- perf-lua profile ARGS in the background: its pid and output file.
local function cli_in_background(args)
  local out = os.tmpname()
  local p = io.popen(("%s bin/perf-lua profile %s >%s 2>&1 & echo $!"):format(H.example, args, out))
  local pid = math.tointeger(tonumber(p:read("l")))
  p:close()
  defer(function() os.execute("kill -9 " .. pid .. " 2>/dev/null") os.remove(out) end)
  return pid, out
end

describe("perf.profile of a running process", function()
  after_each(function()
    for i = #deferred, 1, -1 do deferred[i]() end
    deferred = {}
  end)

  with_tracefs("charges each openat of lua5.4 to the line of its io.open, exactly", function()
    local t = start_target(37, "wait")
    local before = state_of(t.pid)
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    -- the tracer keeps stdio, its two pipes, its signalfd and the thread's event
    local tracer = p.running[1].handle:tracer()
    local _, nfds = H.sh(("ls /proc/%d/fd"):format(tracer)):gsub("\n", "\n")
    assert.equal(7, nfds)
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
    assert.matches(F .. ":26%);opens %(" .. F .. ":11%) 37\n", prof:folded())
    assert.matches("attached to pid %d+ %(lua5%.4%), Lua 5%.4%.%d by lua_ident in /usr/bin/lua5%.4", prof.note)
    -- the fixture's own fd since go, the FIFO it holds, is not the profiler's
    after.fds = after.fds:gsub("%d+\n", function(fd)
      local target = H.sh(("readlink /proc/%d/fd/%s"):format(t.pid, fd:sub(1, -2)))
      if target == t.fifo .. "\n" then return "" end
    end)
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

  with_tracefs("charges a coroutine's openat to its line, with the frames of its resumer", function()
    local t = start_target(23, "wait", "co")
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)
    local prof = assert(p:stop())
    p:close()
    assert.equal(23, prof.samples)
    assert.equal("main chunk (" .. FIXTURE .. ":24);opens (" .. FIXTURE .. ":11) 23\n", prof:folded())
  end)

  with_tracefs("profiles one thread: { tid = T }", function()
    local t = start_target(11, "wait")
    local p = assert(perf.profiler { tid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)
    local prof = assert(p:stop())
    p:close()
    assert.equal(11, prof.samples)
    assert.equal(OPEN_LINE, prof:lines()[1].line)
    assert.equal(1, prof.attached.threads)
    assert.matches("^perf.profiler \"syscalls:sys_enter_openat\" %(tid %d+, closed%)$", tostring(p))
  end)

  with_tracefs("follows the threads a process starts, each with a lua_State of its own", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    defer(function() os.execute("rm -rf " .. dir) end)
    local exe = dir .. "/threads"
    assert(os.execute(("cc -I/usr/include/lua5.4 -o %s spec/fixtures/attach_threads.c -llua5.4 -lpthread")
      :format(exe)))
    local t = start_target(41, "wait", nil, nil, exe)
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)                                -- the threads start after the tracer
    local prof = assert(p:stop())
    p:close()
    assert.equal(82, prof.samples)
    assert.equal("main chunk (worker:3) 82\n", prof:folded())
    assert.equal(3, prof.attached.threads)
    assert.matches("%(threads%), Lua 5%.4%.%d by lua_ident in /[%w/_%-]*/liblua5%.4%.so%.0", prof.note)
  end)

  with_tracefs("ends early, with the samples, when the target exits with its own status", function()
    local t = start_target(19, "exit")
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)
    until_true(function() return p:finished() end)
    assert.is_true(p:finished())
    local prof = assert(p:stop())
    p:close()
    assert.equal(19, prof:lines()[1].count)
    assert.equal("7", finish(t))
  end)

  with_tracefs("profiles while opts.command runs", function()
    local t = start_target(13, "exit")
    local cmd = ("echo go > %s; while kill -0 %d 2>/dev/null; do sleep 0.01; done"):format(t.fifo, t.pid)
    local prof, res = perf.profile({ pid = t.pid }, { event = OPENAT, command = { "sh", "-c", cmd } })
    assert(prof, res)
    assert.equal(0, res.status)
    assert.equal(13, prof.samples)
    assert.equal(OPEN_LINE, prof:lines()[1].line)
    assert.equal("done", t.out:read("l"))
    assert.equal("7", finish(t))
  end)

  with_tracefs("delivers the target's signals to it unchanged: its SIGINT handler runs, a stop stays one", function()
    local t = start_target(50, "wait")
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    os.execute("kill -STOP " .. t.pid)
    assert.truthy(until_true(function() return state_of(t.pid) and
      (read(("/proc/%d/stat"):format(t.pid)) or ""):match("^%d+ %b() [tT]") end))
    os.execute("kill -CONT " .. t.pid)
    -- lua.c's handler (laction, without SA_RESTART) ends the FIFO's open
    -- with EINTR and sets a hook, which raises "interrupted!"
    os.execute("kill -INT " .. t.pid)
    local rest = t.out:read("a")
    t.done, t.status = true, rest:match("status (%d+)")
    local prof = assert(p:stop())
    p:close()
    assert.equal("1", t.status)          -- lua5.4's exit after an error: the handler ran
    for _, l in ipairs(prof:lines()) do  -- interrupted before the opens: only the FIFO's
      assert.equal(8, l.line)            -- open, restarted by the kernel after SIGCONT
    end
    assert.is_true(prof.attached.signals >= 2, "signals " .. prof.attached.signals)  -- SIGSTOP, SIGINT passed on
  end)

  with_tracefs("perf-lua profile -p: ^C stops it, prints the report and writes -o", function()
    local t = start_target(29, "wait")
    local svg = os.tmpname() .. ".svg"
    local pid, out = cli_in_background(("-p %d -e %s -o %s"):format(t.pid, OPENAT, svg))
    assert.truthy(until_true(function() return sampled(t.pid) end))
    go(t)
    os.execute("kill -INT " .. pid)
    assert.truthy(until_true(function() return gone(pid) end))
    local text = H.read_file(out)
    local drawn = H.read_file(svg)
    os.remove(svg)
    assert.matches("# 29 samples, 0 lost\n", text)
    assert.matches("\n%s+100%.00%%  " .. F .. ":11  opens\n", text)
    assert.matches("# written to ", text)
    assert.matches("^<%?xml", drawn)
    assert.equal("0", state_of(t.pid).TracerPid)
    assert.equal("143", finish(t))
  end)

  as_root("perf-lua profile -p SIGKILLed: the target is detached, sampling 999 Hz, and lives on", function()
    local t = start_target(0, "spin")
    go(t)
    local before = state_of(t.pid)
    local pid = cli_in_background(("-p %d -F 999"):format(t.pid))
    assert.truthy(until_true(function() return traced(t.pid) end))
    os.execute("sleep 0.3")
    os.execute("kill -9 " .. pid)
    assert.truthy(until_true(function() return not traced(t.pid) end))
    os.execute("sleep 0.2")
    assert.same(before, state_of(t.pid))
    assert.equal("143", finish(t))       -- our SIGTERM, not a SIGTRAP (133)
  end)

  with_tracefs("profiles a process of another pid namespace by its host pid", function()
    if H.sh("command -v unshare") == "" then pending("needs unshare") return end
    local t = start_target(17, "wait", nil, "unshare --pid --fork --mount-proc ")
    local p = assert(perf.profiler { pid = t.pid, event = OPENAT })
    assert(p:start())
    go(t)
    local prof = assert(p:stop())
    p:close()
    assert.equal(17, prof.samples)
    assert.equal(FIXTURE, prof:lines()[1].source)
  end)

  with_tracefs("profiles lighttpd's mod_magnet handler (liblua5.4.so.0): 5 openat per request on its line", function()
    if H.sh("command -v lighttpd") == "" then pending("needs lighttpd (make deps installs it)") return end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    defer(function() os.execute("rm -rf " .. dir) end)
    -- mod_magnet names the chunk by its path: a short one is not cut
    local handler = dir .. "/h.lua"
    assert(os.execute(("cp %s/spec/fixtures/attach_magnet.lua %s"):format(H.root, handler)))
    local pid, port
    for _ = 1, 5 do                      -- a free port on loopback
      port = math.random(20000, 40000)
      local f = assert(io.open(dir .. "/lighttpd.conf", "w"))
      f:write(('server.modules = ( "mod_magnet" )\nserver.document-root = "%s"\n'
        .. 'server.bind = "127.0.0.1"\nserver.port = %d\nserver.errorlog = "%s/error.log"\n'
        .. 'magnet.attract-raw-url-to = ( "%s" )\n'):format(dir, port, dir, handler))
      f:close()
      local p = io.popen(("lighttpd -D -f %s/lighttpd.conf -m /usr/lib/lighttpd >/dev/null 2>&1 & echo $!"):format(dir))
      pid = math.tointeger(tonumber(p:read("l")))
      p:close()
      local started = until_true(function()
        local log = read(dir .. "/error.log") or ""
        return log:match("server started") and "yes" or (gone(pid) and "no")
      end)
      if started == "yes" then break end
      pid = nil
    end
    assert.truthy(pid, "lighttpd did not start")
    defer(function() os.execute("kill " .. pid) end)
    local function get()
      return H.sh(("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; printf \"GET /x HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'")
        :format(port))
    end
    assert.matches("\r\n\r\nok\n$", get())  -- the handler is compiled and runs
    local p = assert(perf.profiler { pid = pid, event = OPENAT })
    assert(p:start())
    for _ = 1, 3 do assert.matches("ok\n$", get()) end
    local prof = assert(p:stop())
    p:close()
    local lines = prof:lines()
    assert.equal(1, #lines)
    assert.equal(15, lines[1].count)
    assert.equal(6, lines[1].line)
    assert.equal(('[string "%s"]'):format(handler), lines[1].source)
    assert.equal("handle", lines[1].name)
    assert.matches("%(lighttpd%), Lua 5%.4%.%d by lua_ident in /[%w/_%-]*/liblua5%.4%.so%.0", prof.note)
  end)

  it("refuses a process that is gone", function()
    local p = io.popen("sh -c 'echo $$'")
    local pid = math.tointeger(tonumber(p:read("l")))
    p:close()
    local msg, errno = H.fails(perf.profile({ pid = pid }, { duration = 0.1 }))
    assert.equal(perf.core.errno.ESRCH, errno)
    assert.matches("no process " .. pid .. ": it is gone", msg)
  end)

  local NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups "

  as_root("refuses another user's process, and a tracepoint to a user; samples user space for a user", function()
    local t = start_target(0, "spin")
    go(t)
    local out, why = H.run_as_nobody(("print(select(2, require('perf').profile({ pid = %d }, { duration = 0.1 })))")
      :format(t.pid))
    if not out then pending(why) return end
    assert.matches("reading /proc/" .. t.pid .. "/maps of process " .. t.pid .. " %(lua5%.4%) refused %(EACCES%): "
      .. "it is another user's %(uid 0; this is uid 65534%): run as that user, as root, or with CAP_SYS_PTRACE", out)
    -- nobody's own target runs a copy of the fixture it can read
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute(("mkdir -m 755 %s && cp %s %s/ && chmod 644 %s/attach_target.lua"):format(dir, FIXTURE, dir, dir)))
    defer(function() os.execute("rm -rf " .. dir) end)
    local mine = start_target(0, "spin", nil, NOBODY, "lua5.4 " .. dir .. "/attach_target.lua")
    go(mine)
    out = H.run_as_nobody(("local perf = require 'perf' "
      .. "print(select(2, perf.profile({ pid = %d }, { duration = 0.1, event = %q }))) "
      .. "local prof = assert(perf.profile({ pid = %d }, { duration = 0.3 })) print(prof.samples > 0, prof.note)")
      :format(mine.pid, OPENAT, mine.pid))
    assert.matches('perf.profile "syscalls:sys_enter_openat": cannot read /sys/kernel/tracing '
      .. "%(permission denied%): tracepoints need root, or read access to tracefs\t13\n", out)
    assert.matches("\ntrue\tattached to pid " .. mine.pid .. " .-user space only %(exclude_kernel", out)
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
      defer(function() os.execute("kill " .. pid .. " 2>/dev/null") end)
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
    assert.matches("^main chunk %(" .. F .. ":30%);spin %(" .. F .. ":1[6-9]%) %d+\n", text)
  end)
end)
