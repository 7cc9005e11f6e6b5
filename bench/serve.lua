-- Serving counters: the scrape latency of perf-lua serve's /metrics next
-- to node_exporter's perf collector (Debian's prometheus-node-exporter,
-- --collector.perf), both counting on every CPU, scraped in one run,
-- alternating, over one keep-alive connection each, as Prometheus scrapes.
-- perf-lua serve counts page-faults, context-switches, cpu-migrations and
-- syscalls:sys_enter_openat; node_exporter 1.5 counts the software
-- events it has (page faults, context switches, CPU migrations, minor and
-- major faults: it has no switch to leave some out), the same tracepoint,
-- and tries its hardware and cache profilers (none here: no PMU). Also the
-- CPU time each server spent per scrape (utime + stime from /proc, over
-- all the scrapes).
--
--   lua5.4 bench/serve.lua [scrapes]     (root: counting every CPU)
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local ok, socket = pcall(require, "socket")
if not ok then
  print("bench/serve.lua: needs LuaSocket (Debian: lua-socket)")
  return
end

local N = math.tointeger(tonumber(arg[1] or "")) or 2000
local EVENTS = "page-faults,context-switches,cpu-migrations,syscalls:sys_enter_openat"
local CPUS = "0-" .. (#require("perf.event.capabilities").online_cpus() - 1)

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out
end

local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return math.tointeger(tonumber(port))
end

-- Starts a server in the background; returns its pid.
local function start(cmd)
  return math.tointeger(tonumber(sh(("%s >/dev/null 2>&1 & echo $!"):format(cmd))))
end

-- A keep-alive client: get() returns the body of one GET /metrics.
local function client(port)
  local c
  for _ = 1, 100 do
    c = socket.connect("127.0.0.1", port)
    if c then break end
    socket.sleep(0.05)
  end
  assert(c, "cannot connect to port " .. port)
  c:settimeout(10)
  local req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
  return function()
    assert(c:send(req))
    local len, chunked
    while true do
      local line = assert(c:receive("*l"))
      if line == "" then break end
      local name, value = line:match("^([^:]+):%s*(.*)$")
      name = name and name:lower()
      if name == "content-length" then len = tonumber(value) end
      if name == "transfer-encoding" then chunked = value:lower() == "chunked" end
    end
    if not chunked then return assert(c:receive(len)) end
    local parts = {}
    while true do                                  -- chunks, then an empty trailer
      local size = tonumber(assert(c:receive("*l")):match("^%x+"), 16)
      if size == 0 then assert(c:receive("*l")) break end
      parts[#parts + 1] = assert(c:receive(size))
      assert(c:receive("*l"))
    end
    return table.concat(parts)
  end
end

local function cpu_ticks(pid)
  local s = sh(("cat /proc/%d/stat"):format(pid)):match("^.*%) (.*)$")
  local f = {}
  for x in s:gmatch("%S+") do f[#f + 1] = x end
  return tonumber(f[12]) + tonumber(f[13])         -- utime, stime (fields 14, 15)
end

local function quantile(list, q)
  table.sort(list)
  return list[math.max(1, math.ceil(#list * q))]
end

if sh("command -v prometheus-node-exporter") == "" then
  print("bench/serve.lua: needs prometheus-node-exporter (Debian's package) to compare with")
  return
end
-- node_exporter 1.5 finds tracepoints under debugfs only
local node_tp = io.open("/sys/kernel/debug/tracing/events/syscalls/sys_enter_openat/id")
if node_tp then node_tp:close() end
local lua_port, node_port = free_port(), free_port()
local sides = {
  { name = "perf-lua serve", pid = start(("lua5.4 bin/perf-lua serve --listen 127.0.0.1:%d -C %s -e %s")
    :format(lua_port, CPUS, EVENTS)), port = lua_port },
  { name = "node_exporter --collector.perf", pid = start(("prometheus-node-exporter --collector.disable-defaults "
    .. "--collector.perf --collector.perf.cpus=%s %s--web.disable-exporter-metrics "
    .. "--web.listen-address=127.0.0.1:%d"):format(CPUS,
      node_tp and "--collector.perf.tracepoint=syscalls:sys_enter_openat " or "", node_port)), port = node_port },
}
local hz = tonumber(sh("getconf CLK_TCK")) or 100
local measured, err = pcall(function()
  for _, s in ipairs(sides) do
    s.get, s.us = client(s.port), {}
    for _ = 1, 50 do s.get() end                   -- warm up
    s.body = s.get()
    s.ticks = cpu_ticks(s.pid)
  end
  for i = 1, N do
    for _, s in ipairs(sides) do
      local t0 = socket.gettime()
      s.get()
      s.us[i] = (socket.gettime() - t0) * 1e6
    end
  end
end)
if not measured then                               -- neither server is left running
  for _, s in ipairs(sides) do os.execute(("kill %d 2>/dev/null"):format(s.pid)) end
  error(err, 0)
end
print(("scraping /metrics: %d scrapes each, alternating, one keep-alive connection each, CPUs %s (%s)")
  :format(N, CPUS, os.date("!%Y-%m-%d %H:%M UTC")))
print(("%-32s %10s %10s %12s %8s %8s"):format("", "median us", "p99 us", "CPU us/scrape", "bytes", "samples"))
if not node_tp then
  print("(node_exporter without the tracepoint: it reads tracepoints from debugfs, not mounted here)")
end
for _, s in ipairs(sides) do
  local cpu = (cpu_ticks(s.pid) - s.ticks) / hz / N * 1e6
  local _, samples = s.body:gsub("\n[%a_][%w_]*[{ ][^\n]*", "")
  s.median = quantile(s.us, 0.5)
  print(("%-32s %10.1f %10.1f %12.1f %8d %8d"):format(s.name, s.median, quantile(s.us, 0.99),
    cpu, #s.body, samples))
  os.execute(("kill %d"):format(s.pid))
end
print(("target: perf-lua serve's median no worse than node_exporter's: %s")
  :format(sides[1].median <= sides[2].median and "met" or "MISSED"))
