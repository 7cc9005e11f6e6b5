-- Layer lua/perf/serving/: the Prometheus exporter and the HTTP server; it requires perf.core
-- and the layers below it (util, event, counting, profiling, recording) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.serve: an HTTP endpoint for Prometheus and pprof scrapers, over
-- LuaSocket (Debian's lua-socket), one process, one thread.
--
--   GET /metrics                  e:metrics() (perf.exporter), text 0.0.4
--   GET /debug/pprof/profile?seconds=N[&event=E][&frequency=HZ]
--                                 e:profile's gzipped pprof, after N seconds
--
-- Every socket is non-blocking and one socket.select waits on them all (and
-- on ^C and SIGTERM, as a signalfd): a slow client, or one profile's N
-- seconds, never hold the others up. Each connection has a deadline
-- (opts.timeout seconds, default 10) to send a whole request head and to
-- read the response; past it, it is answered 408 (or dropped) and closed.
-- A deadline is set when the connection's request begins, not moved by each
-- byte, so a client that trickles bytes times out as a silent one does.
-- Refusals: 405 (only GET), 414 and 431 (perf.serve_http's limits), 400
-- (malformed; seconds past the cap, named), 404, 429 with Retry-After (a
-- profile is running), 503 (over opts.max_clients connections). Each
-- refusal and error is one line of the log (opts.log, default standard
-- error); so is the start, saying whether the address is reachable from the
-- network (anything but loopback), and the stop.
local core = require "perf.core"
local base = require "perf.event.base"
local exporter = require "perf.serving.exporter"
local http = require "perf.serving.serve_http"
local nearest = require "perf.util.nearest"
local serve_profile = require "perf.serving.serve_profile"

local M = {}

local OPTS = { listen = true, events = true, all_cpus = true, cpus = true, pid = true,
  cgroup = true, max_seconds = true, profile = true, timeout = true, max_clients = true,
  log = true, name = true }
local EXPORTER_OPTS = { "events", "all_cpus", "cpus", "pid", "cgroup", "max_seconds", "profile" }

M.DEFAULT_LISTEN = "127.0.0.1:9464"
M.NO_SOCKET = "needs LuaSocket for Lua 5.4, which is not installed: install Debian's "
  .. "lua-socket (apt-get install lua-socket) or LuaRocks' luasocket"

-- LuaSocket's bind errors (strerror's words) to their Linux errno
local BIND_ERRNO = { ["address already in use"] = 98, ["permission denied"] = 13,
  ["cannot assign requested address"] = 99, ["host or service not provided, or not known"] = 22,
  ["Name or service not known"] = 22 }

local Server = { __name = "perf.server" }
Server.__index = Server

--- listen_address("ADDR:PORT") -> host, port | nil, why ("[::1]:9464", ":9464")
function M.listen_address(s)
  if type(s) ~= "string" then return nil, "the address must be a string ADDR:PORT" end
  local host, port = s:match("^%[([%x:%.]+)%]:(%d+)$")
  if not host then host, port = s:match("^([^:]*):(%d+)$") end
  port = math.tointeger(tonumber(port))
  if not host or not port or port > 65535 then
    return nil, ("'%s' is not ADDR:PORT (such as 127.0.0.1:9464 or [::1]:9464)"):format(s)
  end
  return host == "" and "0.0.0.0" or host, port
end

--- is_loopback(ip) -> whether only this machine can reach ip
function M.is_loopback(ip)
  return ip:match("^127%.") ~= nil or ip == "::1" or ip == "localhost"
end

local function check(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then error(("perf.serve: options must be a table, got %s"):format(type(opts)), 0) end
  nearest.check_keys(opts, OPTS, "perf.serve: unknown option", 0,
    "; options: listen, timeout, max_clients, log, name and perf.exporter's")
  local host, port = M.listen_address(opts.listen or M.DEFAULT_LISTEN)
  if not host then error("perf.serve: listen: " .. port, 0) end
  for _, k in ipairs { "timeout", "max_clients" } do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v <= 0 or v ~= v or (k == "max_clients" and math.type(v) ~= "integer")) then
      error(("perf.serve: %s must be a positive %s"):format(k, k == "timeout" and "number of seconds" or "integer"), 0)
    end
  end
  if opts.log ~= nil and opts.log ~= false and type(opts.log) ~= "function" then
    error("perf.serve: log must be a function(line) or false", 0)
  end
  return opts, host, port
end

-- The log: opts.log(line), or "NAME: line" on standard error.
local function logger(opts)
  if opts.log == false then return function() end end
  if opts.log then return opts.log end
  local name = opts.name or "perf.serve"
  return function(line)
    io.stderr:write(name, ": ", line, "\n")
    io.stderr:flush()
  end
end

--- The server, listening (see the module comment): `srv:step(timeout)`,
-- `srv:run()`, `srv:close()`, `srv.host`, `srv.port`, `srv.exporter`.
-- @tparam[opt] table opts `listen` (`"ADDR:PORT"`, default
-- `"127.0.0.1:9464"`; port 0 picks a free one), `timeout` (seconds, 10),
-- `max_clients` (64), `log` (a function of a line, or false), and
-- perf.exporter's options (`events`, `all_cpus`, `cpus`, `pid`, `cgroup`,
-- `max_seconds`, `profile`)
-- @treturn[1] table the server
-- @return[2] nil, message, errno (no LuaSocket, an event that cannot be
-- opened, an address that cannot be bound)
-- @function server
function M.new(opts)
  local ok, o, host, port = pcall(check, opts)
  if not ok then error(base.strip_position(o), 2) end
  -- optional, so required here: LuaSocket (Debian's lua-socket) may be missing
  local has, socket = pcall(require, "socket")
  if not has then return nil, "perf.serve " .. M.NO_SOCKET, core.errno.ENOENT end
  local eopts = {}
  for _, k in ipairs(EXPORTER_OPTS) do eopts[k] = o[k] end
  local e, msg, errno
  ok, e, msg, errno = pcall(exporter.new, eopts)
  if not ok then error(base.strip_position(e):gsub("^perf%.exporter", "perf.serve"), 2) end
  if not e then return nil, msg, errno end
  local sock, err = socket.bind(host, port, 128)
  if not sock then
    e:close()
    return nil, ("perf.serve: cannot listen on %s:%d: %s"):format(host, port, err), BIND_ERRNO[err] or 22
  end
  sock:settimeout(0)
  local ip, bound = sock:getsockname()
  local srv = setmetatable({ socket = socket, sock = sock, exporter = e, host = ip,
    port = math.tointeger(tonumber(bound)), conns = {}, nconns = 0, log = logger(o),
    timeout = o.timeout or 10, max_clients = o.max_clients or 64, limits = http.LIMITS }, Server)
  srv.log(("listening on http://%s:%d/metrics and /debug/pprof/profile (%s); %d events, %s")
    :format(ip:find(":", 1, true) and "[" .. ip .. "]" or ip, srv.port,
      M.is_loopback(ip) and "loopback only" or "reachable from the network",
      #e.names, tostring(e):match("%d+ places") or ""))
  return srv
end

-- ---- connections ----

local function close_conn(srv, c)
  if srv.conns[c.sock] then
    srv.conns[c.sock] = nil
    srv.nconns = srv.nconns - 1
  end
  c.sock:close()
  c.state = "closed"
end

-- Sends what it can of c.out; on the end, keeps the connection for the
-- next request or closes it.
local function write(srv, c, now)
  local i, err, last = c.sock:send(c.out, c.sent + 1)
  c.sent = i or last or c.sent
  if err and err ~= "timeout" then
    close_conn(srv, c)
    return
  end
  if c.sent < #c.out then return end
  c.out, c.served = nil, true
  if c.keep then
    c.state, c.deadline = "read", now + srv.timeout
    srv:_process(c, now)
  else                                      -- drain what the client still sends, then close
    c.sock:shutdown("send")
    c.state, c.deadline = "drain", now + 1
  end
end

local function respond(srv, c, bytes, keep, now)
  c.out, c.sent, c.keep, c.state = bytes, 0, keep, "write"
  c.deadline = now + srv.timeout
  write(srv, c, now)
end

-- A refusal: one log line and an error response; the connection closes.
local function refuse(srv, c, status, why, now, extra, what)
  srv.log(('%s "%s" %d %s'):format(c.peer, what or c.line or "-", status, why))
  respond(srv, c, http.error_response(status, why, extra), false, now)
end

local METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
local INDEX = "perf for Lua: /metrics (Prometheus), /debug/pprof/profile?seconds=N[&event=E][&frequency=HZ]\n"

-- /debug/pprof/profile: the query checked, then the profile started; the
-- response goes out when it ends (Server:_tick).
local function profile_request(srv, c, req, now)
  local q, cap = req.query, srv.exporter.max_seconds
  local secs = q.seconds == nil and math.min(30, cap) or math.tointeger(tonumber(q.seconds:match("^%d+$") or ""))
  if not secs or secs < 1 or secs > cap then
    return refuse(srv, c, 400, ("seconds must be a whole number from 1 to %d (the cap), got '%s'")
      :format(cap, q.seconds), now)
  end
  local freq = q.frequency and math.tointeger(tonumber(q.frequency:match("^%d+$") or ""))
  if q.frequency and (not freq or freq < 1) then
    return refuse(srv, c, 400, ("frequency must be a whole number of samples per second, got '%s'")
      :format(q.frequency), now)
  end
  if srv.profile then
    local left = math.max(1, math.ceil(srv.profile.deadline - now))
    return refuse(srv, c, 429, ("a profile is running (one at a time); retry in %d s"):format(left),
      now, { { "Retry-After", tostring(left) } })
  end
  local s, msg, status = serve_profile.start(srv.exporter, secs,
    { event = q.event ~= "" and q.event or nil, freq = freq })
  if not s then return refuse(srv, c, status, msg, now) end
  srv.profile = { conn = c, deadline = now + secs, session = s, keep = req.keep_alive }
  c.state, c.deadline = "profile", math.huge
end

local function route(srv, c, req, now)
  if req.path == "/metrics" then
    local ok, text = pcall(srv.exporter.metrics, srv.exporter)
    if not ok then return refuse(srv, c, 500, tostring(text), now) end
    respond(srv, c, http.response(200, text, { { "Content-Type", METRICS_TYPE } }, req.keep_alive),
      req.keep_alive, now)
  elseif req.path == "/debug/pprof/profile" then
    profile_request(srv, c, req, now)
  elseif req.path == "/" then
    respond(srv, c, http.response(200, INDEX, { { "Content-Type", "text/plain; charset=utf-8" } },
      req.keep_alive), req.keep_alive, now)
  else
    refuse(srv, c, 404, "no such path (/metrics, /debug/pprof/profile)", now)
  end
end

-- The requests complete in c's buffer, one at a time (a pipelined one
-- waits for the response before it).
function Server:_process(c, now)
  if c.state ~= "read" then return end
  local req, status, why = http.parse(c.buf, self.limits)
  -- the request line as the log shows it: 80 bytes, control and non-ASCII bytes escaped
  c.line = c.buf:match("^[\r\n]*([^\r\n]*)"):sub(1, 80)
    :gsub("[%c\127-\255\"\\]", function(ch) return ("\\x%02x"):format(ch:byte()) end)
  if not req and not status and #c.buf > 2 * self.limits.head then
    status, why = 431, ("request head longer than %d bytes"):format(self.limits.head)
  end
  if status then return refuse(self, c, status, why, now) end
  if not req then return end
  c.buf = c.buf:sub(req.size + 1)
  route(self, c, req, now)
end

local function read(srv, c, now)
  local data, err, partial = c.sock:receive(8192)
  data = data or partial
  if c.state == "drain" then
    if err == "closed" then close_conn(srv, c) end
    return
  end
  if data and #data > 0 then c.buf = c.buf .. data end
  if c.state ~= "read" and #c.buf > 2 * srv.limits.head then
    err = "closed"                          -- sending on and on while it waits: dropped
  end
  if err == "closed" then
    if c.state == "profile" then
      srv.log(("%s left before its profile ended"):format(c.peer))
      srv.profile.session:cancel()
      srv.profile = nil
    end
    return close_conn(srv, c)
  end
  srv:_process(c, now)
end

function Server:_accept(now)
  while true do
    local s, err = self.sock:accept()
    if not s then
      if err ~= "timeout" then
        self.log("accept: " .. tostring(err))
        self.paused = now + 0.1                    -- out of descriptors: breathe
      end
      return
    end
    s:settimeout(0)
    local ip, port = s:getpeername()
    local c = { sock = s, peer = ("%s:%s"):format(ip, port), buf = "", state = "read",
      deadline = now + self.timeout }
    if self.nconns >= self.max_clients then
      self.log(("%s refused: %d connections open (the limit)"):format(c.peer, self.nconns))
      s:send(http.error_response(503, "too many connections; try again"))
      s:close()
    else
      self.conns[s], self.nconns = c, self.nconns + 1
    end
  end
end

-- Deadlines past, and the profile's end.
function Server:_tick(now)
  for _, c in pairs(self.conns) do
    if now >= c.deadline then
      if c.state == "read" and (c.buf:find("%S") or not c.served) then
        refuse(self, c, 408, ("no complete request within %g s"):format(self.timeout), now)
      elseif c.state == "write" then
        self.log(("%s did not read its response within %g s"):format(c.peer, self.timeout))
        close_conn(self, c)
      else
        close_conn(self, c)
      end
    end
  end
  local p = self.profile
  if p and now >= p.deadline then
    self.profile = nil
    local bytes, msg, status = p.session:finish()
    local c = p.conn
    if c.state == "profile" then
      c.state = "read"
      if not bytes then return refuse(self, c, status, msg, now) end
      respond(self, c, http.response(200, bytes, { { "Content-Type", "application/octet-stream" },
        { "Content-Disposition", 'attachment; filename="profile"' } }, p.keep), p.keep, now)
    end
  end
end

--- srv:step([timeout]): waits up to timeout seconds (default 1) for
-- sockets (and `stop`, a perf.core.stop_signals handle), serves what is
-- ready; returns the signal's number when `stop` has one.
-- @function server:step
function Server:step(timeout, stop)
  if self.closed then error("attempt to use a closed perf.server", 2) end
  local socket = self.socket
  local now = socket.gettime()
  local recvt, sendt, wake = {}, {}, now + (timeout or 1)
  if not self.paused or now >= self.paused then self.paused = nil; recvt[1] = self.sock end
  if stop then recvt[#recvt + 1] = stop end
  for s, c in pairs(self.conns) do
    if c.state == "write" then sendt[#sendt + 1] = s else recvt[#recvt + 1] = s end
    if c.deadline < wake then wake = c.deadline end
  end
  if self.profile and self.profile.deadline < wake then wake = self.profile.deadline end
  local readable, writable = socket.select(recvt, sendt, math.max(0, wake - now))
  now = socket.gettime()
  if stop and readable[stop] then
    local sig = stop:take()
    if sig then return sig end
  end
  if readable[self.sock] then self:_accept(now) end
  for _, s in ipairs(readable) do
    local c = self.conns[s]
    if c then self:_guard(c, read, c, now) end
  end
  for _, s in ipairs(writable) do
    local c = self.conns[s]
    if c and c.state == "write" then self:_guard(c, write, c, now) end
  end
  self:_guard(nil, self._tick, now)
end

-- fn(self, ...), an error in it logged and its connection closed: no
-- request can stop the server.
function Server:_guard(c, fn, ...)
  local ok, err = pcall(fn, self, ...)
  if ok then return end
  self.log("error: " .. tostring(err))
  if c and c.state ~= "closed" then close_conn(self, c) end
  if self.profile and self.profile.conn.state == "closed" then
    self.profile.session:cancel()
    self.profile = nil
  end
end

--- srv:run(): serves until SIGINT or SIGTERM; returns the signal's number.
-- @function server:run
function Server:run()
  local stop <close> = assert(core.stop_signals())
  while true do
    local sig = self:step(1, stop)
    if sig then
      self.log(("stopping on %s"):format(core.signal_name(sig)))
      return sig
    end
  end
end

--- srv:close(): every connection, the listening socket and the counters
-- (idempotent).
-- @function server:close
function Server:close()
  if self.closed then return true end
  self.closed = true
  if self.profile then
    self.profile.session:cancel()
    self.profile = nil
  end
  for _, c in pairs(self.conns) do c.sock:close() end
  self.conns, self.nconns = {}, 0
  self.sock:close()
  self.exporter:close()
  return true
end
Server.__close = Server.close
Server.__gc = Server.close

function Server:__tostring()
  if self.closed then return "perf.server (closed)" end
  return ("perf.server (%s:%d, %d connections)"):format(self.host, self.port, self.nconns)
end

--- Serves until SIGINT or SIGTERM (perf.server, then srv:run, then srv:close).
-- @tparam[opt] table opts as perf.server's
-- @treturn[1] integer the signal that stopped it
-- @return[2] nil, message, errno when it cannot start
-- @function serve
function M.serve(opts)
  local ok, srv, msg, errno = pcall(M.new, opts)
  if not ok then error(base.strip_position(srv), 2) end
  if not srv then return nil, msg, errno end
  local sig = srv:run()
  srv:close()
  return sig
end

return M
