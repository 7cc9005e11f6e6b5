-- perf-lua serve against the real engines, started here on loopback:
-- Debian's prometheus scraping it every second (its query API's
-- increase() equals the opens a command made), and go tool pprof reading
-- its profile endpoint by URL.
local H = require "helpers"
local S = require "serve_helpers"
local socket = require "socket"

local N = 23                     -- the opens of the known command
local FAMILY = "perf_syscalls_sys_enter_openat_total"

-- A port free now (bound, read, closed).
local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return math.tointeger(tonumber(port))
end

local function urlencode(s)
  return (s:gsub("[^%w%-_%.~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- Prometheus's /api/v1/query: the response body.
local function query(port, q, time)
  local ok, _, _, body = pcall(S.get, port, ("/api/v1/query?query=%s%s"):format(urlencode(q),
    time and "&time=" .. time or ""))
  return ok and body or ""                         -- "" while it starts
end

-- The samples of the family over the last minute: { { t = "1796..123", v = n }, ... }
local function samples(port)
  local out = {}
  local values = query(port, FAMILY .. "[1m]"):match('"values":%[(.-)%]%]')
  for t, v in (values or ""):gmatch('%[([%d%.]+),"(%d+)"') do
    out[#out + 1] = { t = t, v = math.tointeger(tonumber(v)) }
  end
  return out
end

local function wait_for(what, pred)
  for _ = 1, 300 do
    local r = pred()
    if r then return r end
    socket.sleep(0.1)
  end
  error("timed out waiting for " .. what)
end

describe("perf-lua serve with Prometheus", function()
  it("gives increase() of the openat counter over a window: exactly the opens made", function()
    local o = S.opener(N)
    local srv = S.start(("--listen 127.0.0.1:0 -e syscalls:sys_enter_openat -p %d"):format(o.pid))
    assert(srv.port, srv.log())
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local cfg = io.open(dir .. "/prometheus.yml", "w")
    cfg:write(("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
      .. "  - job_name: perf\n    scrape_interval: 1s\n    scrape_timeout: 1s\n"
      .. "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"):format(srv.port))
    cfg:close()
    local pport = free_port()
    os.execute(("prometheus --config.file=%s/prometheus.yml --storage.tsdb.path=%s/data "
      .. "--web.listen-address=127.0.0.1:%d >%s/log 2>&1 & echo $! > %s/pid")
      :format(dir, dir, pport, dir, dir))
    local ok, err = pcall(function()
      -- two scrapes before the command, the counter flat
      local before = wait_for("two scrapes", function()
        local s = samples(pport)
        return #s >= 2 and s
      end)
      local v0 = before[#before].v
      o.go()
      local all = wait_for("two scrapes after", function()
        local s = samples(pport)
        return #s >= 2 and s[#s].v == v0 + N and s[#s - 1].v == v0 + N and s
      end)
      local a, b                                     -- the last sample before, the last after
      for _, smp in ipairs(all) do
        if smp.v == v0 then a = smp end
      end
      b = all[#all]
      -- the window [a, b] exactly: its ends are samples, so increase()
      -- extrapolates nothing (Prometheus 2.x ranges include both ends)
      local ms = math.floor((tonumber(b.t) - tonumber(a.t)) * 1000 + 0.5)
      local body = query(pport, ("increase(%s[%dms])"):format(FAMILY, ms), b.t)
      assert.equal(tostring(N), body:match('"value":%[[%d%.]+,"([^"]+)"%]'), body)
      -- and the counter at the two instants
      local at_a = query(pport, FAMILY, a.t):match('"value":%[[%d%.]+,"(%d+)"%]')
      local at_b = query(pport, FAMILY, b.t):match('"value":%[[%d%.]+,"(%d+)"%]')
      assert.equal(N, tonumber(at_b) - tonumber(at_a))
      local up = query(pport, ('perf_target_up{pid="%d"}'):format(o.pid))
      assert.equal("1", up:match('"value":%[[%d%.]+,"(%d+)"%]'), up)
    end)
    os.execute(("kill $(cat %s/pid) 2>/dev/null; sleep 0.5; rm -rf %s"):format(dir, dir))
    o.finish()
    assert.equal(0, srv.stop("TERM"))
    assert(ok, err)
  end)
end)

describe("perf-lua serve with go tool pprof", function()
  it("serves a profile go tool pprof reads by URL", function()
    local srv = S.start("--listen 127.0.0.1:0 -e page-faults -C 0")
    assert(srv.port, srv.log())
    local tmp = os.tmpname()
    os.remove(tmp)
    -- scrapes meanwhile, so the server's Lua code runs on the CPU
    os.execute(("(for i in $(seq 300); do curl -s -o /dev/null http://127.0.0.1:%d/metrics; done) &")
      :format(srv.port))
    local out = H.sh(("mkdir %s && PPROF_TMPDIR=%s HOME=%s go tool pprof -top "
      .. "'http://127.0.0.1:%d/debug/pprof/profile?seconds=2' 2>&1; rm -rf %s")
      :format(tmp, tmp, tmp, srv.port, tmp))
    assert.equal(0, srv.stop("TERM"))
    H.assert_has("Type: cpu-clock", out)
    assert.matches("Showing nodes accounting for [%d%.]+m?s, [%d%.]+%% of [%d%.]+m?s total", out)
    H.assert_has("perf for Lua: cpu-clock at 999 Hz", out)
  end)
end)
