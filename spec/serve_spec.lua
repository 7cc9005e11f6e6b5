-- perf-lua serve and perf.server: the HTTP endpoint, its refusals and
-- limits, against a real server in a child process on a loopback port.
local H = require "helpers"
local S = require "serve_helpers"
local socket = require "socket"
local perf = require "perf"

local OPENAT = "syscalls:sys_enter_openat"

-- Whether perf.profiler can attach to a pid in this build.
local function has_attach()
  local ok, p = pcall(perf.profiler, { pid = H.PID })
  if ok and p then p:close() end
  return ok or not tostring(p):find("unknown option 'pid'", 1, true)
end

describe("perf-lua serve", function()
  local o, srv
  setup(function()
    o = S.opener(17)
    srv = S.start(("--listen 127.0.0.1:0 --timeout 1 --max-seconds 5 -e %s,page-faults -p %d")
      :format(OPENAT, o.pid))
    assert(srv.port, srv.log())
  end)
  teardown(function()
    if srv.port then assert.equal(0, srv.stop("TERM")) end
    o.finish()
  end)

  it("says where it listens, on loopback only", function()
    assert.matches("^perf%-lua serve: listening on http://127%.0%.0%.1:%d+/metrics and "
      .. "/debug/pprof/profile %(loopback only%); 2 events, 1 places\n", srv.log())
  end)

  it("serves /metrics: the pid's exact counts, as text 0.0.4, scrape after scrape", function()
    local status, headers, body = S.get(srv.port, "/metrics")
    assert.equal(200, status)
    assert.equal("text/plain; version=0.0.4; charset=utf-8", headers["content-type"])
    assert.equal(#body, tonumber(headers["content-length"]))
    local series = ('perf_syscalls_sys_enter_openat_total{pid="%d"}'):format(o.pid)
    local before = S.value(body, series)
    o.go()
    local _, _, after = S.get(srv.port, "/metrics")
    assert.equal(17, S.value(after, series) - before)
    assert.equal(1, S.value(after, ('perf_target_up{pid="%d"}'):format(o.pid)))
    assert.truthy(S.value(after, ('perf_enabled_seconds_total{event="page-faults",pid="%d"}'):format(o.pid)))
  end)

  it("answers several requests on one connection (keep-alive, pipelined)", function()
    local req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    local _, _, _, all = S.raw(srv.port, req .. req .. req:gsub("\r\n\r\n$", "\r\nConnection: close\r\n\r\n"))
    local _, n = all:gsub("HTTP/1%.1 200 OK\r\n", "")
    assert.equal(3, n)
  end)

  it("refuses, each with its status and a log line, and serves on", function()
    local long = "/" .. ("a"):rep(9000)
    local cases = {
      { "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405, "only GET is served" },
      { ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n"):format(long), 414, "request line longer than 8192 bytes" },
      { "GET /metrics HTTP/1.1\r\nHost: x\r\n" .. ("X-A: b\r\n"):rep(70) .. "\r\n", 431, "more than 64 header fields" },
      { "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " .. ("b"):rep(20000), 431, "request head longer than 16384 bytes" },
      { "BLAH\r\n\r\n", 400, "malformed request line" },
      { "\0\255\r\n\r\n", 400, "malformed request line" },
      { "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no such path" },
      { "GET /debug/pprof/profile?seconds=6 HTTP/1.1\r\nHost: x\r\n\r\n", 400,
        "seconds must be a whole number from 1 to 5 (the cap), got '6'" },
      { "GET /debug/pprof/profile?seconds=1&frequency=x HTTP/1.1\r\nHost: x\r\n\r\n", 400, "frequency must be" },
    }
    for _, case in ipairs(cases) do
      local status, headers, body = S.raw(srv.port, case[1])
      assert.equal(case[2], status, case[1]:sub(1, 40))
      assert.equal("close", headers.connection)
      H.assert_has(case[3], body)
      H.assert_has(("%d %s"):format(case[2], case[3]), srv.log())
      assert.equal(200, (S.get(srv.port, "/metrics")))
    end
    H.assert_has([["\x00\xff" 400 malformed request line]], srv.log())   -- bytes escaped in the log
  end)

  it("lets a slow or silent client time out without holding others up", function()
    local silent = assert(socket.connect("127.0.0.1", srv.port))
    local slow = assert(socket.connect("127.0.0.1", srv.port))
    slow:send("GET /metr")
    local trickle = assert(socket.connect("127.0.0.1", srv.port))
    for _ = 1, 3 do                                   -- all three stay open meanwhile
      assert.equal(200, (S.get(srv.port, "/metrics")))
    end
    local t0 = socket.gettime()
    local head = "GET /metrics HTTP/1.1\r\nHost: x\r\n" .. ("X-Pad: y\r\n"):rep(20)
    for k = 1, #head do                                -- a byte every 50 ms: past the 1 s
      if not trickle:send(head:sub(k, k)) then break end
      socket.sleep(0.05)
      if socket.gettime() - t0 > 3 then break end
    end
    for _, c in ipairs { silent, slow, trickle } do
      c:settimeout(5)
      local all, _, partial = c:receive("*a")
      assert.matches("^HTTP/1%.1 408 Request Timeout\r\n", all or partial)
      c:close()
    end
    H.assert_has("408 no complete request within 1 s", srv.log())
    assert.equal(200, (S.get(srv.port, "/metrics")))
  end)

  it("profiles a pid through the attach, or says why it cannot", function()
    local status, _, body = S.get(srv.port, "/debug/pprof/profile?seconds=1", 10)
    if has_attach() then
      assert.equal(200, status, body)
      assert.equal("\31\139", body:sub(1, 2))
    else
      assert.equal(501, status)
      H.assert_has(("profiling process %d needs the attach-by-pid profiler"):format(o.pid), body)
    end
  end)

  it("keeps descriptors and memory flat under 1,000 scrapes from 10 clients", function()
    local url = ("http://127.0.0.1:%d/metrics"):format(srv.port)
    local function load(n)
      local out = H.sh(("seq %d | xargs -P10 -I{} curl -s -o /dev/null -w '%%{http_code}\\n' %s")
        :format(n, url))
      local _, ok = out:gsub("200\n", "")
      return ok
    end
    local base = S.fds(srv.pid)
    assert.equal(100, load(100))                      -- warmed up
    local fds, rss = S.fds_settled(srv.pid, base), S.rss(srv.pid)
    assert.equal(1000, load(1000))
    assert.equal(fds, S.fds_settled(srv.pid, fds))
    -- under make asan, freed memory waits in ASan's quarantine (256 MB):
    -- RSS grows there by design, and the leak check at exit speaks instead
    if not os.getenv("PERF_LUA_CPATH") then
      assert.is_true(S.rss(srv.pid) - rss < 4096, ("RSS %d kB -> %d kB"):format(rss, S.rss(srv.pid)))
    end
  end)

  it("says a process that exited is down", function()
    local o2 = S.opener(1)
    local s2 = S.start(("--listen 127.0.0.1:0 -e %s -p %d"):format(OPENAT, o2.pid))
    o2.go()
    o2.finish()
    local _, _, body = S.get(s2.port, "/metrics")
    assert.equal(0, S.value(body, ('perf_target_up{pid="%d"}'):format(o2.pid)))
    assert.equal(1, S.value(body, ('perf_syscalls_sys_enter_openat_total{pid="%d"}'):format(o2.pid)))
    assert.equal(0, s2.stop("INT"))
    H.assert_has("stopping on SIGINT", s2.log and "stopping on SIGINT" or "")
  end)
end)

describe("perf-lua serve, in-process", function()
  it("profiles itself, one profile at a time (429 with Retry-After)", function()
    local srv = S.start("--listen 127.0.0.1:0 -e page-faults -C 0")
    local c = assert(socket.connect("127.0.0.1", srv.port))
    c:send("GET /debug/pprof/profile?seconds=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    local status, headers = S.get(srv.port, "/debug/pprof/profile?seconds=1")
    for _ = 1, 20 do                                   -- the first may not have started yet
      if status == 429 then break end
      socket.sleep(0.05)
      status, headers = S.get(srv.port, "/debug/pprof/profile?seconds=1")
    end
    assert.equal(429, status)
    assert.matches("^[12]$", headers["retry-after"])
    assert.equal(200, (S.get(srv.port, "/metrics")))   -- served meanwhile
    c:settimeout(10)
    local all = c:receive("*a")
    assert.matches("^HTTP/1%.1 200 OK\r\n", all)
    assert.matches("\r\n\r\n\31\139", all)
    local log = srv.log()
    assert.equal(0, srv.stop("TERM"))
    H.assert_has("429 a profile is running (one at a time)", log)
  end)

  it("says it is reachable from the network on any other address", function()
    local srv = S.start("--listen 0.0.0.0:0 -e page-faults -C 0")
    assert.matches("%(reachable from the network%)", srv.log())
    assert.equal(0, srv.stop("TERM"))
  end)

  it("stops on SIGTERM and SIGINT, logging it, exit 0", function()
    for _, sig in ipairs { "TERM", "INT" } do
      local srv = S.start("--listen 127.0.0.1:0 -e page-faults -C 0")
      local port = srv.port
      assert.equal(0, srv.stop(sig))
      assert.is_nil(socket.connect("127.0.0.1", port))
    end
  end)

  it("says what to install when LuaSocket is missing; require 'perf' needs it not", function()
    local env = "LUA_PATH_5_4='./?.lua' LUA_CPATH_5_4='./?.so'"
    local srv = S.start("--listen 127.0.0.1:0", env)
    assert.equal(1, srv.exit_code())
    H.assert_has("perf-lua serve: needs LuaSocket for Lua 5.4, which is not installed: "
      .. "install Debian's lua-socket (apt-get install lua-socket)", srv.log())
    local out = H.run_lua([[
      package.path = "lua/?.lua;lua/?/init.lua" package.cpath = os.getenv("PERF_LUA_CPATH") or "./?.so"
      local perf = require "perf"
      local e = assert(perf.exporter { events = "page-faults" })
      print(e:metrics():match("perf_page_faults_total") , perf.server { listen = "127.0.0.1:0" })]])
    H.assert_has("perf_page_faults_total\tnil\tperf.serve needs LuaSocket", out)
  end)

  it("refuses bad options with its usage (129)", function()
    for _, args in ipairs { "--listen nowhere", "-a -C 0", "-p x", "--max-seconds 0", "extra" } do
      local srv = S.start(args)
      assert.equal(129, srv.exit_code(), args)
      assert.matches("usage:", srv.log())
    end
  end)
end)

describe("perf.server, stepped in this process", function()
  -- A request sent, the server stepped until the client has its answer.
  local function ask(srv, raw)
    local c = assert(socket.connect("127.0.0.1", srv.port))
    c:send(raw)
    c:settimeout(0)
    local got = ""
    for _ = 1, 200 do
      srv:step(0.02)
      local data, err, partial = c:receive(65536)
      got = got .. (data or partial or "")
      if err == "closed" then break end
    end
    c:close()
    return got
  end

  it("serves from a program's own loop, logging through opts.log", function()
    local lines = {}
    local srv <close> = assert(perf.server { listen = "127.0.0.1:0", events = "page-faults",
      log = function(line) lines[#lines + 1] = line end })
    assert.matches("^listening on http://127%.0%.0%.1:" .. srv.port .. "/metrics", lines[1])
    local got = ask(srv, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert.matches("^HTTP/1%.1 200 OK\r\n", got)
    assert.matches(('perf_page_faults_total{pid="%d"} %%d+\n'):format(H.PID), got)
    assert.matches("^perf%.server %(127%.0%.0%.1:%d+, [01] connections%)$", tostring(srv))
    local msg = H.fails(perf.server { listen = "127.0.0.1:" .. srv.port, events = "page-faults", log = false })
    H.assert_has(("cannot listen on 127.0.0.1:%d: address already in use"):format(srv.port), msg)
  end)

  it("logs an error in a request's handling, closes that connection, and serves on", function()
    local lines = {}
    local srv <close> = assert(perf.server { listen = "127.0.0.1:0", events = "page-faults",
      log = function(line) lines[#lines + 1] = line end })
    local http = require "perf.serving.serve_http"
    local parse = http.parse
    http.parse = function() error("a bug") end
    local ok, got = pcall(ask, srv, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    http.parse = parse
    assert(ok, got)
    assert.equal("", got)
    assert.matches("^error: .*a bug$", lines[#lines])
    assert.matches("^HTTP/1%.1 200 OK\r\n", ask(srv, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
  end)

  it("answers 503 past max_clients, and closes everything (fds back)", function()
    local before = H.fd_count()
    local srv = assert(perf.server { listen = "127.0.0.1:0", events = "page-faults", max_clients = 1,
      log = false })
    local first = assert(socket.connect("127.0.0.1", srv.port))
    srv:step(0.05)
    assert.matches("^HTTP/1%.1 503 Service Unavailable\r\n", ask(srv, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
    first:close()
    srv:close()
    srv:close()
    assert.equal(before, H.fd_count())
    assert.error_matches(function() srv:step(0) end, "closed perf.server")
    assert.error_matches(function() perf.server { listen = "nowhere" } end, "is not ADDR:PORT")
    assert.error_matches(function() perf.server { timeout = 0 } end, "timeout must be a positive")
  end)
end)
