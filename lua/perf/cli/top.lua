-- perf-lua top: a live view of the hottest commands and functions on every
-- CPU, refreshed every second, as perf top shows them.
--
--   perf-lua top [-e EVENT] [-F HZ] [-C LIST] [-d SECS] [-E N]
--
--   -e, --event EVENT      the sampling event (default cpu-clock)
--   -F, --freq HZ          samples per second on each CPU (default 999)
--   -C, --cpu LIST         only these CPUs ("0-3,5"; default every CPU)
--   -d, --delay SECS       seconds between refreshes (default 1)
--   -E, --entries N        at most N rows of functions (default: what fits)
--
-- Kernel functions ([k]) are named from /proc/kallsyms, user functions
-- ([.]) from the ELF symbol tables of the files the processes mapped
-- ([unknown] where a stripped file has none). On a
-- terminal the view is redrawn in place (plain ANSI); q or ^C ends it and
-- restores the terminal. Not on a terminal, a report is printed for each
-- refresh. The counts are those of the last refresh period.
local arg = ...
local cpus = require "perf.counting.cpus"
local elf = require "perf.util.elf"
local kallsyms = require "perf.util.kallsyms"
local cli = require "perf.cli"
local core = require "perf.core"

local function usage(msg) cli.usage("top", msg) end

-- ---- options, with perf top's names ----
local LONG = { ["--event"] = "-e", ["--freq"] = "-F", ["--cpu"] = "-C", ["--delay"] = "-d",
  ["--entries"] = "-E", ["--help"] = "-h" }
local opts = { event = "cpu-clock", freq = 999, delay = 1 }
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    local long, v = a:match("^(%-%-[%w-]+)=(.*)$")
    if LONG[long or a] then a = LONG[long or a] .. (v or "") end
    local opt, joined = a:match("^(%-[eFCdE])(.+)$")
    opt = opt or a
    local function value()
      if joined then return joined end
      i = i + 1
      if arg[i] == nil then usage(opt .. " needs a value") end
      return arg[i]
    end
    if opt == "-h" then usage()
    elseif opt == "-e" then opts.event = value()
    elseif opt == "-F" then
      opts.freq = math.tointeger(tonumber(value()))
      if not opts.freq or opts.freq < 1 then usage("-F needs a positive number of samples per second") end
    elseif opt == "-C" then opts.cpus = value()
    elseif opt == "-d" then
      opts.delay = tonumber(value())
      if not opts.delay or opts.delay < 0.1 then usage("-d needs a number of seconds, at least 0.1") end
    elseif opt == "-E" then
      opts.entries = math.tointeger(tonumber(value()))
      if not opts.entries or opts.entries < 1 then usage("-E needs a positive count") end
    else cli.unknown_option("top", a) end
    i = i + 1
  end
end

-- ---- the terminal ----
local tty = os.execute("test -t 1 && test -t 0")
local saved_stty

local function stty(args)
  local p = io.popen("stty " .. args .. " </dev/tty 2>/dev/null")
  local out = p:read("a")
  p:close()
  return out
end

local function size()
  local rows, cols = stty("size"):match("(%d+) (%d+)")
  return math.tointeger(tonumber(rows)) or 24, math.tointeger(tonumber(cols)) or 80
end

local function enter()
  if not tty then return end
  saved_stty = stty("-g"):match("%S+")
  -- keys arrive one by one without echo, ^C as a byte; reads do not wait
  stty("-icanon -echo -isig min 0 time 0")
  io.stdin:setvbuf("no")
  io.stdout:write("\27[?1049h\27[?25l")     -- the alternate screen, no cursor
  io.stdout:flush()
end

local function leave()
  if not tty then return end
  io.stdout:write("\27[?25h\27[?1049l")
  io.stdout:flush()
  if saved_stty then stty(saved_stty) end
end

-- true when q or ^C was typed
local function quit_key()
  if not tty then return false end
  local c = io.stdin:read(1)
  while c do
    if c == "q" or c == "Q" or c == "\3" then return true end
    c = io.stdin:read(1)
  end
  return false
end

-- ---- the samples ----
-- one event per CPU, every process, with the names of the commands that
-- exec meanwhile (comm records); the rings wake the reader when 16 KiB are
-- ready (or at the poll's timeout), not at every sample
local set, msg = cpus.open({ opts.event, freq = true, sample_freq = opts.freq,
  sample_type = { "ip", "tid", "cpu" }, comm = true, wakeup_watermark = 16384 },
  { pid = -1, cpus = opts.cpus and cpus.parse_list(opts.cpus) or nil })
if not set then
  io.stderr:write("perf-lua top: ", msg, "\n")
  do return 1 end
end
do
  local ok, mmsg = set:mmap(16)
  if not ok then
    io.stderr:write("perf-lua top: ", mmsg, "\n")
    set:close()
    return 1
  end
end

local ks = kallsyms.load()               -- nil where kernel addresses are hidden
local comm_cache = {}
local locators = {}                      -- pid -> elf.locator(pid), for one refresh

local function comm_of(pid)
  if pid == 0 then return "swapper" end
  local c = comm_cache[pid]
  if c == nil then
    local f = io.open(("/proc/%d/comm"):format(pid))
    c = f and f:read("l") or "[exited]"
    if f then f:close() end
    comm_cache[pid] = c
  end
  return c
end

-- "[k] name", "[kernel]" or "[.] name", "file"
local function symbol(kernel, pid, ip)
  if kernel then
    local name, module
    if ks then local _; name, _, module = ks:lookup(ip) end
    return "[k] " .. (name or ("0x%x"):format(ip)), module and ("[" .. module .. "]") or "[kernel]"
  end
  local locate = locators[pid]
  if not locate then
    locate = elf.locator(pid)
    locators[pid] = locate
  end
  local w = locate(ip)
  if not w then return ("[.] 0x%x"):format(ip), "[unknown]" end
  -- an address no symbol covers (a stripped file) counts for its file, as
  -- perf names it: [unknown]
  return "[.] " .. (w.symbol or "[unknown]"), w.file:match("[^/]*$")
end

-- the counts of one refresh period
local by_comm, by_place, samples = {}, {}, 0

local function consume()
  for r in set:records() do
    if r.type == "sample" then
      samples = samples + 1
      local key = ("%s\0%d"):format(comm_of(r.pid), r.pid)
      by_comm[key] = (by_comm[key] or 0) + 1
      local kernel = r.cpumode == "kernel"
      local place = ("%s\0%d\0%d"):format(kernel and "k" or "u", kernel and 0 or r.pid, r.ip)
      by_place[place] = (by_place[place] or 0) + 1
    elseif r.type == "comm" and r.pid == r.tid then
      comm_cache[r.pid] = r.comm            -- a command that may be gone when shown
    end
  end
end

local function sorted(t)
  local rows = {}
  for k, n in pairs(t) do rows[#rows + 1] = { k, n } end
  table.sort(rows, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  return rows
end

-- ---- the view ----
local function render(elapsed)
  local rows, cols = 24, 100
  if tty then rows, cols = size() end
  local out = {}
  local function line(s) out[#out + 1] = s:sub(1, cols) end
  line(("perf-lua top: %s at %d Hz on %d CPUs, %d samples in %.1f s, %d lost%s")
    :format(opts.event, opts.freq, #set, samples, elapsed, (set:lost()), tty and "; q quits" or ""))
  line("")
  -- the functions: places summed by name
  local by_symbol = {}
  for place, n in pairs(by_place) do
    local kind, pid, ip = place:match("^(%a)%z(%d+)%z(%-?%d+)$")
    local name, dso = symbol(kind == "k", math.tointeger(pid), math.tointeger(ip))
    local key = ("%s\0%s"):format(name, dso)
    by_symbol[key] = (by_symbol[key] or 0) + n
  end
  local budget = tty and rows - 1 or 40
  local ncomm = math.max(3, budget // 3 - 2)
  local total = math.max(samples, 1)
  line(("%7s %8s  %s"):format("%", "samples", "command (pid)"))
  for i, r in ipairs(sorted(by_comm)) do
    if i > ncomm then break end
    local comm, pid = r[1]:match("^(.*)%z(%d+)$")
    line(("%6.2f%% %8d  %s (%s)"):format(100 * r[2] / total, r[2], comm, pid))
  end
  line("")
  line(("%7s %8s  %-50s %s"):format("%", "samples", "function", "object"))
  local nsym = opts.entries or math.max(1, budget - #out)
  for i, r in ipairs(sorted(by_symbol)) do
    if i > nsym then break end
    local name, dso = r[1]:match("^(.*)%z(.*)$")
    line(("%6.2f%% %8d  %-50s %s"):format(100 * r[2] / total, r[2], name, dso))
  end
  if tty then
    io.stdout:write("\27[H\27[2J", table.concat(out, "\r\n"))
  else
    io.stdout:write(table.concat(out, "\n"), "\n\n")
  end
  io.stdout:flush()
end

-- ---- run ----
-- seconds since boot, to the hundredth (/proc/uptime)
local function now()
  local f = assert(io.open("/proc/uptime"))
  local t = f:read("n")
  f:close()
  return t
end

local function run()
  assert(set:enable())
  local start = now()
  while true do
    local r, pmsg, perrno = set:poll(100)
    if r == nil and pmsg ~= "hangup" and perrno ~= core.errno.EINTR then error(pmsg, 0) end   -- a signal
    consume()
    if quit_key() then return end
    local t = now()
    if t - start >= opts.delay then
      render(t - start)
      by_comm, by_place, samples, start = {}, {}, 0, t
      comm_cache, locators = {}, {}
    end
  end
end

enter()
local done, err = pcall(run)
leave()
set:close()
if not done then
  if tostring(err):match("interrupted!$") then return 0 end   -- a SIGINT from elsewhere
  io.stderr:write("perf-lua top: ", tostring(err), "\n")
  return 1
end
return 0
