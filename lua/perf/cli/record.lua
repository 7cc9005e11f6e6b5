-- perf-lua record: sample a command and show what was hot.
--
--   perf-lua record [-F HZ | -c PERIOD] [-e EVENT] [-g] [-o FILE] [-n N] [-a] [--] command [args...]
--
-- A thin front of perf.record: samples a command and its children (or,
-- with no command, a little Lua workload in a Lua interpreter) on every
-- CPU, every hit of a tracepoint or software event (as perf record), 999
-- Hz for the clocks. -e names the event (default cpu-clock; --event),
-- -F a frequency (--freq), -c a period (--count), -g records call chains
-- (--call-graph), -o keeps the perf.data file for perf report and perf
-- script (--output), -a samples everything on every CPU while the command
-- runs (--all-cpus), -n shows the top N rows (default 10). Then it reads
-- the file back and prints what was hot: samples per command/thread, per
-- DSO and per symbol, as perf report does. User ips are named from the
-- files' symbol tables (perf.elf; for a file stripped of .symtab, such as
-- libc, its debug file in /usr/lib/debug/.build-id, as perf), kernel ips from /proc/kallsyms
-- (perf.kallsyms). On a terminal, the samples so far and the file's size
-- are shown while the command runs. -F above the kernel's maximum rate
-- records at the maximum, with perf's warning; an event this machine
-- lacks is not supported (cycles falls back to cpu-clock, as in perf);
-- where perf_event_paranoid refuses sampling the kernel too, the command
-- is sampled in user space only (cpu-clock:u), as perf record retries.
-- ^C (or SIGTERM) stops the recording: the command is ended and what was
-- recorded is written and shown. Exits as perf record: with the command's
-- status, or by the signal that ended the command or the recording; 255
-- when the recording cannot start, 129 for a usage error.
local arg = ...
local perf = require "perf"
local elf = require "perf.util.elf"
local kallsyms = require "perf.util.kallsyms"
local cli = require "perf.cli"
local core = require "perf.core"

local function usage(msg)
  cli.usage("record", msg)
end

-- ---- options ----
local opts = { event = "cpu-clock", top = 10, all = false }
local cmd = cli.each_option("record", arg, { long = { ["--event"] = "-e", ["--freq"] = "-F",
  ["--count"] = "-c", ["--call-graph"] = "-g", ["--output"] = "-o", ["--all-cpus"] = "-a" } },
  function(a, value, count)
    if a == "-F" then opts.hz = count()
    elseif a == "-c" then opts.period = count()
    elseif a == "-o" then opts.output = value()
    elseif a == "-g" then opts.callchain = true
    elseif a == "-e" then opts.event = value()
    elseif a == "-n" then opts.top = count()
    elseif a == "-a" then opts.all = true
    else return false end
    return true
  end)
if opts.hz and opts.period then usage("give -F or -c, not both") end

-- ---- record ----
if opts.all and #cmd == 0 then
  usage("-a samples the whole system while a command runs: give one")
end
local self_mode = #cmd == 0
if self_mode then
  -- the workload: string building, sorting, a few table-heavy loops
  local first = 0                        -- the interpreter: arg's lowest index
  local argv = _G.arg or {}
  while argv[first - 1] do first = first - 1 end
  cmd = { first < 0 and argv[first] or "lua5.4", "-e", [[
    local deadline, n = os.clock() + 1, 0
    while os.clock() < deadline do
      local t = {}
      for i = 1, 2000 do t[i] = ("%08x"):format((i * 2654435761) % 2^32) end
      table.sort(t)
      n = n + #table.concat(t)
    end]] }
end
local data_path = opts.output or os.tmpname()
-- progress on a terminal only: the samples so far and the file's size
local on_progress, shown
if os.execute("test -t 2") then
  on_progress = function(p)
    shown = true
    io.stderr:write(("\r[ perf-lua record: %d samples, %.3f MB %s ]\27[K")
      :format(p.samples, p.bytes / 1e6, opts.output or "(temporary file)"))
    io.stderr:flush()
  end
end
-- perf's limit on -F: above the kernel's maximum rate, the maximum, said so
if opts.hz then opts.hz = cli.max_freq(opts.hz) end
local function record()
  return perf.record(cmd, opts.event, { freq = opts.hz, period = opts.period,
    callchain = opts.callchain, all_cpus = opts.all, output = data_path, on_progress = on_progress,
    cmdline = { "perf-lua", "record", table.unpack(arg) } })
end
local result, msg, errno = record()
-- no such event here: cycles falls back to cpu-clock, as perf's does
local UNSUPPORTED = { [2] = true, [19] = true, [95] = true }     -- ENOENT, ENODEV, EOPNOTSUPP
local event_failed = msg and msg:find("^perf%.record: perf%.open ") ~= nil
if not result and event_failed and UNSUPPORTED[errno] then
  local ok, attr = pcall(perf.parse, opts.event)
  if ok and (attr.type == 0 or attr.type == "hardware") and attr.config == 0 then
    local event = "cpu-clock" .. (opts.event:match("(:[^:]*)$") or "")
    io.stderr:write(("Warning: the %s event is not supported here (no hardware PMU): "
      .. "falling back to %s, as perf does\n"):format(opts.event, event))
    opts.event = event
    result, msg, errno = record()
    event_failed = msg and msg:find("^perf%.record: perf%.open ") ~= nil
  end
end
if shown then io.stderr:write("\r\27[K") end
if not result then
  if not opts.output then os.remove(data_path) end
  msg = msg:gsub("^perf%.record: ", "")
  if event_failed and UNSUPPORTED[errno] then
    msg = ("The %s event is not supported: %s"):format(opts.event, msg)
  end
  io.stderr:write(msg, "\n")
  os.exit(255)
end
local file = assert(perf.data.open(data_path))
if not opts.output then os.remove(data_path) end
local attr = file.attrs[1].attr
local rate = attr.freq and ("at %d Hz"):format(attr.sample_freq)
  or attr.sample_period == 1 and "at every hit" or ("every %d"):format(attr.sample_period)

-- ---- what the records say ----
local comm = {}            -- tid -> command name
local maps = {}            -- pid -> list of { start, stop, pgoff, name }
local by_thread, by_dso, by_place = {}, {}, {}   -- by_place["path\0offset"]
local samples, t_first, t_last = 0, nil, nil

local function add_map(p, start, len, pgoff, name)
  local list = maps[p] or {}
  maps[p] = list
  list[#list + 1] = { start = start, stop = start + len, pgoff = pgoff, name = name }
end

-- this process's existing mappings (the kernel reports new ones only)
local function read_maps(p)
  local f = io.open(("/proc/%d/maps"):format(p))
  if not f then return end
  for line in f:lines() do
    local a, b, perms, off, name = line:match("^(%x+)%-(%x+) (%S+) (%x+) %S+ %d+%s*(.*)$")
    if a and perms:find("x") and name ~= "" then
      add_map(p, tonumber(a, 16), tonumber(b, 16) - tonumber(a, 16), tonumber(off, 16), name)
    end
  end
  f:close()
end

local function resolve(p, ip)
  if maps[p] == nil and opts.all then      -- a process that ran already
    maps[p] = {}
    read_maps(p)
  end
  local list = maps[p]
  if list then
    for i = #list, 1, -1 do               -- the newest mapping wins
      local m = list[i]
      if ip >= m.start and ip < m.stop then
        return m.name, ip - m.start + m.pgoff
      end
    end
  end
  return "[unknown]", ip
end

local function bump(t, k) t[k] = (t[k] or 0) + 1 end

-- The name of a thread that ran already (pid 0 is the idle task, which
-- perf calls swapper), or nil when it is gone.
local function comm_of(p, tid)
  if p == 0 then return "swapper" end
  local f = io.open(("/proc/%d/task/%d/comm"):format(p, tid))
  if not f then return nil end
  local name = f:read("l")
  f:close()
  return name
end

-- in time order, as perf report reads them: the file holds each CPU's
-- records as its ring was drained, so a sample on one CPU may come before
-- the exec that named its process on another
local function in_time_order()
  local list = {}
  for r in file:records() do
    if r.time then
      r.seq = #list
      list[#list + 1] = r
    end
  end
  table.sort(list, function(a, b)
    if a.time ~= b.time then return a.time < b.time end
    return a.seq < b.seq
  end)
  return list
end

local function consume()
  for _, r in ipairs(in_time_order()) do
    local ty = r.type
    if ty == "sample" then
      samples = samples + 1
      t_first = t_first or r.time
      t_last = r.time
      if opts.all and not comm[r.tid] then comm[r.tid] = comm_of(r.pid, r.tid) end
      bump(by_thread, ("%s %d/%d"):format(comm[r.tid] or comm[r.pid] or "?", r.pid, r.tid))
      local path, off
      if r.cpumode == "kernel" then path, off = "[kernel]", r.ip
      else path, off = resolve(r.pid, r.ip) end
      bump(by_dso, (path:match("[^/]*$")))
      bump(by_place, path .. "\0" .. off)
    elseif ty == "mmap2" or ty == "mmap" then
      add_map(r.pid, r.addr, r.len, r.pgoff, r.filename)
    elseif ty == "comm" then
      comm[r.tid] = r.comm
    elseif ty == "fork" then
      comm[r.tid] = comm[r.ptid]
      if r.pid ~= r.ppid then          -- a new process: a copy of the maps
        local copy = {}
        for i, m in ipairs(maps[r.ppid] or {}) do copy[i] = m end
        maps[r.pid] = copy
      end
    end
  end
end

consume()

-- ---- report ----
local lost = result.lost
local ncpus = #file.attrs[1].ids
file:close()

local function report(title, t)
  local rows = {}
  for k, v in pairs(t) do rows[#rows + 1] = { k, v } end
  table.sort(rows, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  print(title)
  for i = 1, math.min(opts.top, #rows) do
    print(("  %6.2f%%  %7d  %s"):format(100 * rows[i][2] / samples, rows[i][2], rows[i][1]))
  end
end

print(("%d samples of %s %s on %d CPUs over %.2f s, %d lost")
  :format(samples, table.concat(result.events, ","), rate, ncpus, ((t_last or 0) - (t_first or 0)) / 1e9, lost))
if opts.output then print(("written to %s (perf report -i %s)"):format(opts.output, opts.output)) end
-- perf's exit: the signal that ended the command (or stopped the
-- recording) is raised again in this process, else the command's status
local function exit()
  io.stdout:flush()
  io.stderr:flush()
  local signo = result.signo or result.interrupted_signo
  if signo then
    core.reraise(signo)
    os.exit(128 + signo)
  end
  if math.type(result.status) == "integer" and result.status ~= 0 then os.exit(result.status) end
end
if samples == 0 then exit() return end
report("by command pid/tid:", by_thread)
report("by DSO:", by_dso)
-- ---- symbols: each distinct place named once ----
local ks = kallsyms.load()              -- nil where kernel addresses are hidden
local files = {}                        -- path -> perf.elf object or false

local width
local function symbol(path, off)
  local dso = path:match("[^/]*$")
  if path == "[kernel]" then
    local name = ks and ks:lookup(off)
    return ("%-" .. width .. "s [k] %s"):format(dso, name or ("0x%x"):format(off))
  end
  local e = files[path]
  if e == nil then
    e = elf.open(path) or false
    files[path] = e
  end
  local vaddr = e and e:vaddr_of(off)
  local sym = vaddr and e:symbol_at(vaddr)
  return ("%-" .. width .. "s [.] %s"):format(dso, sym and sym.name or ("0x%x"):format(off))
end

local by_symbol = {}
-- the DSO column as wide as the longest name shown (at least 14)
width = 14
for place in pairs(by_place) do
  local dso = place:match("^(.-)%z"):match("[^/]*$")
  if #dso > width then width = #dso end
end
for place, n in pairs(by_place) do
  local path, off = place:match("^(.*)%z(%-?%d+)$")
  local key = symbol(path, math.tointeger(off))
  by_symbol[key] = (by_symbol[key] or 0) + n
end
report("by symbol:", by_symbol)
exit()
