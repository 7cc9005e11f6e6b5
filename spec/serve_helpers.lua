-- Helpers for the specs of perf-lua serve: a server started in a child
-- process on a free loopback port, and raw HTTP clients (LuaSocket).
local H = require "helpers"
local socket = require "socket"

local S = {}

local function slurp(path)
  local f = io.open(path)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end
S.slurp = slurp

-- Starts `perf-lua serve ARGS` in the background; returns a handle with
-- port, pid, log() (its standard error so far), stop(signal) -> exit code.
-- Waits (up to 10 s) for its start line.
function S.start(args, env)
  local log, pidfile, rcfile = os.tmpname(), os.tmpname(), os.tmpname()
  os.remove(rcfile)
  -- the server must not keep the specs' pipes (an opener's stdin) open:
  -- descriptors past 2 are closed before it starts
  local close = [[for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done;]]
  local inner = ("echo $$ > %s; exec %s %s%s bin/perf-lua serve %s"):format(pidfile, env and "env " .. env or "",
    H.core_env, H.example, args)
  os.execute(("bash -c %s"):format(H.shell_quote(("%s { bash -c %s 2>%s; echo $? > %s; } &")
    :format(close, H.shell_quote(inner), log, rcfile))))
  local srv = { log = function() return slurp(log) end }
  for _ = 1, 200 do
    local text = slurp(log)
    srv.port = math.tointeger(tonumber(text:match("listening on http://[^ ]-:(%d+)/")))
    if srv.port or slurp(rcfile) ~= "" then break end
    socket.sleep(0.05)
  end
  srv.pid = math.tointeger(tonumber(slurp(pidfile)))
  function srv.stop(sig)
    if slurp(rcfile) == "" then os.execute(("kill -%s %d 2>/dev/null"):format(sig or "TERM", srv.pid)) end
    for _ = 1, 200 do
      local rc = slurp(rcfile)
      if rc ~= "" then
        os.remove(log) os.remove(pidfile) os.remove(rcfile)
        return math.tointeger(tonumber(rc))
      end
      socket.sleep(0.05)
    end
    os.execute(("kill -KILL %d 2>/dev/null"):format(srv.pid))
    error("the server did not stop within 10 s")
  end
  -- the exit code of a server that did not start (it has stopped)
  function srv.exit_code()
    for _ = 1, 200 do
      local rc = slurp(rcfile)
      if rc ~= "" then return math.tointeger(tonumber(rc)) end
      socket.sleep(0.05)
    end
  end
  return srv
end

-- Sends `raw` to the port, reads until the server closes (or `timeout`
-- seconds, default 5); returns status, headers (lower-case), body, all.
function S.raw(port, raw, timeout)
  local c = assert(socket.connect("127.0.0.1", port))
  c:settimeout(timeout or 5)
  if raw ~= "" then c:send(raw) end
  local all, err, partial = c:receive("*a")
  c:close()
  all = all or partial
  local status = math.tointeger(tonumber(all:match("^HTTP/1%.1 (%d%d%d)")))
  local head, body = all:match("^(.-)\r\n\r\n(.*)$")
  local headers = {}
  for name, value in (head or ""):gmatch("\n([^:\r\n]+): ([^\r\n]*)") do headers[name:lower()] = value end
  return status, headers, body, all, err
end

-- GET path with Connection: close
function S.get(port, path, timeout)
  return S.raw(port, ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"):format(path), timeout)
end

-- The value of a sample line `name{labels}` in a scrape, as an integer or number.
function S.value(text, series)
  local v = text:match("\n" .. series:gsub("%p", "%%%0") .. " (%S+)\n")
  return v and (math.tointeger(tonumber(v)) or tonumber(v))
end

-- The open descriptors and the resident set (kB) of process pid.
function S.fds(pid)
  return #H.sh(("ls /proc/%d/fd"):format(pid)):gsub("[^\n]", "")
end

-- Its descriptors once they are back to `n` (the server closes a
-- connection when it reads the client's end: give it up to 5 s).
function S.fds_settled(pid, n)
  local now
  for _ = 1, 100 do
    now = S.fds(pid)
    if now == n then break end
    socket.sleep(0.05)
  end
  return now
end

function S.rss(pid)
  return math.tointeger(tonumber(slurp(("/proc/%d/status"):format(pid)):match("VmRSS:%s*(%d+)")))
end

-- A process that opens `n` files each time a line comes on its standard
-- input (and nothing else: io.read makes no openat), and exits at its end.
-- Returns { pid, go() (one round), finish() }.
function S.opener(n)
  local pidfile = os.tmpname()
  local code = ("local f = io.open(%q, 'w') f:write(io.open('/proc/self/stat'):read('n')) f:close() "
    .. "while io.read('l') do for _ = 1, %d do io.open('/dev/null'):close() end "
    .. "io.stdout:write('done\\n') io.stdout:flush() end"):format(pidfile, n)
  local out = os.tmpname()
  local p = io.popen(("%s -e %s > %s"):format(H.lua, H.shell_quote(code), out), "w")
  local pid
  for _ = 1, 200 do
    pid = math.tointeger(tonumber(slurp(pidfile)))
    if pid then break end
    socket.sleep(0.05)
  end
  os.remove(pidfile)
  local rounds = 0
  local o = { pid = pid }
  function o.go()
    rounds = rounds + 1
    p:write("\n")
    p:flush()
    for _ = 1, 200 do
      local _, k = slurp(out):gsub("done\n", "")
      if k >= rounds then return end
      socket.sleep(0.02)
    end
    error("the opener did not answer")
  end
  function o.finish()
    p:close()
    os.remove(out)
  end
  return o
end

return S
