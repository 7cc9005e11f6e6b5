-- examples/record.lua: the start of a profiler.
--
--   lua5.4 examples/record.lua [-F hz] [-e event] [-n top] [-a] [-- command args...]
--
-- Samples a command and its children (or, with no command, a little Lua
-- workload in this process) on every CPU, then prints what was hot: samples
-- per command/thread, per DSO, and per symbol, as perf report does. User
-- ips are placed in their files from the mmap2 records the kernel wrote
-- while the command ran and named from the files' symbol tables
-- (perf.elf); kernel ips from /proc/kallsyms (perf.kallsyms). An ip no
-- symbol covers (a stripped file) shows as file+offset. With -a, everything
-- on every CPU is sampled while the command runs, as perf record -a does
-- (the processes that were running already are found in /proc).
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"
local cpus = require "perf.cpus"
local elf = require "perf.elf"
local kallsyms = require "perf.kallsyms"

-- ---- options ----
local opts = { hz = 999, event = "cpu-clock", top = 10, all = false }
local cmd = {}
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--" then
      table.move(arg, i + 1, #arg, 1, cmd)
      break
    elseif a == "-F" then opts.hz = math.tointeger(tonumber(arg[i + 1])); i = i + 1
    elseif a == "-e" then opts.event = arg[i + 1]; i = i + 1
    elseif a == "-n" then opts.top = math.tointeger(tonumber(arg[i + 1])); i = i + 1
    elseif a == "-a" then opts.all = true
    else
      io.stderr:write("usage: lua5.4 examples/record.lua [-F hz] [-e event] [-n top] [-a] [-- command args...]\n")
      os.exit(2)
    end
    i = i + 1
  end
end

-- ---- the target: a child waiting to exec, or this process ----
local pid, child, self_mode = nil, nil, #cmd == 0
if self_mode then
  local f = assert(io.open("/proc/self/stat"))
  pid = math.tointeger(f:read("n"))
  f:close()
else
  -- the child waits before its exec until the events are open; they start
  -- counting at its exec (enable_on_exec), as perf record's do
  local msg
  child, msg = perf.core.spawn(cmd)
  if not child then
    io.stderr:write(msg, "\n")
    os.exit(1)
  end
  pid = child:pid()
end

if opts.all and self_mode then
  io.stderr:write("record.lua: -a samples the whole system while a command runs: give one\n")
  os.exit(2)
end
local spec = { opts.event, freq = true, sample_freq = opts.hz,
               sample_type = { "identifier", "ip", "tid", "time", "cpu", "period" },
               sample_id_all = true, mmap = true, mmap2 = true, comm = true,
               task = true, inherit = not opts.all, enable_on_exec = not self_mode and not opts.all }
local set = assert(cpus.open(spec, { pid = opts.all and -1 or pid }))
assert(set:mmap(64))

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

local rec_t = {}
local function consume()
  for r in set:records(rec_t) do
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

-- ---- run ----
local function start_child()
  local ok, msg = child:start()
  if not ok then
    io.stderr:write(msg, "\n")
    os.exit(1)
  end
end

if self_mode then
  read_maps(pid)
  local f = assert(io.open("/proc/self/comm"))
  comm[pid] = f:read("l")
  f:close()
  set:enable()
  -- the workload: string building, sorting, a few table-heavy loops
  local deadline = os.clock() + 1
  local n = 0
  while os.clock() < deadline do
    local t = {}
    for i = 1, 2000 do t[i] = ("%08x"):format((i * 2654435761) % 2^32) end
    table.sort(t)
    n = n + #table.concat(t)
    consume()
  end
  set:disable()
  consume()
elseif opts.all then
  set:enable()                             -- from here, as perf record -a
  start_child()
  repeat consume() until child:wait(100)   -- CPU-wide events never hang up
  set:disable()
  consume()
else
  start_child()
  while true do
    local ready = set:poll(200)
    consume()
    if ready == nil then break end         -- hangup: the command exited
  end
  child:wait()
end

-- ---- report ----
local lost = set:lost()
set:close()

local function report(title, t)
  local rows = {}
  for k, v in pairs(t) do rows[#rows + 1] = { k, v } end
  table.sort(rows, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  print(title)
  for i = 1, math.min(opts.top, #rows) do
    print(("  %6.2f%%  %7d  %s"):format(100 * rows[i][2] / samples, rows[i][2], rows[i][1]))
  end
end

print(("%d samples of %s at %d Hz on %d CPUs over %.2f s, %d lost")
  :format(samples, opts.event, opts.hz, #set, ((t_last or 0) - (t_first or 0)) / 1e9, lost))
if samples == 0 then return end
report("by command pid/tid:", by_thread)
report("by DSO:", by_dso)
-- ---- symbols: each distinct place named once ----
local ks = kallsyms.load()              -- nil where kernel addresses are hidden
local files = {}                        -- path -> perf.elf object or false

local function symbol(path, off)
  local dso = path:match("[^/]*$")
  if path == "[kernel]" then
    local name = ks and ks:lookup(off)
    return ("%-14s [k] %s"):format(dso, name or ("0x%x"):format(off))
  end
  local e = files[path]
  if e == nil then
    e = elf.open(path) or false
    files[path] = e
  end
  local vaddr = e and e:vaddr_of(off)
  local sym = vaddr and e:symbol_at(vaddr)
  return ("%-14s [.] %s"):format(dso, sym and sym.name or ("0x%x"):format(off))
end

local by_symbol = {}
for place, n in pairs(by_place) do
  local path, off = place:match("^(.*)%z(%-?%d+)$")
  local key = symbol(path, math.tointeger(off))
  by_symbol[key] = (by_symbol[key] or 0) + n
end
report("by symbol:", by_symbol)
