-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

-- perf.processes: what perf.stat counts when it is given a running process,
-- thread or cgroup instead of a command, as perf stat -p, -t and -G do.
--
--   { pid = P }       every thread of process P (from /proc/P/task), each
--                     counter inheriting to the tasks they start, summed;
--                     { pid = { P1, P2 } } those of both (perf stat -p P1,P2)
--   { tid = T }       thread T alone (and the tasks it starts); or a list
--   { cgroup = G }    every task of cgroup G on every online CPU; G is a
--                     directory, or a name under the hierarchy perf_event
--                     counts in (a v1 hierarchy mounted with perf_event,
--                     else the cgroup2 one: perf.cgroup), as perf stat -G
--                     takes it
--   { cgroup = { G1, false, G3 } }
--                     event i in cgroup Gi, or everything on the CPUs
--                     where false or past the list's end (perf stat -G
--                     G1,,G3 pairs the names with the events so)
--
-- (perf_event_open's pid is one thread: a process is the sum of its
-- threads' counters, as perf stat -p opens one per thread.)
local fs = require "perf.util.fs"
local cgroup = require "perf.event.cgroup"

local M = {}

local KEYS = { pid = true, tid = true, cgroup = true }
local ESRCH, ENOENT = require("perf.core").errno.ESRCH, require("perf.core").errno.ENOENT
local nearest = require "perf.util.nearest"

--- processes.is_target(t) -> whether t is a target table, not an argv list
function M.is_target(t)
  if type(t) ~= "table" or t[1] ~= nil then return false end
  for k in pairs(KEYS) do
    if t[k] ~= nil then return true end
  end
  return false
end

--- processes.check(t): raises, naming the mistake, unless t is one target
function M.check(t)
  local n = 0
  nearest.check_keys(t, KEYS, "perf.stat: unknown target field", 0,
    "; a target is { pid = P }, { tid = T } or { cgroup = G }")
  for k, v in pairs(t) do
    n = n + 1
    if k == "cgroup" then
      local names = type(v) == "table" and v or { v }
      local ok = next(names) ~= nil
      for i, name in pairs(names) do
        ok = ok and math.type(i) == "integer" and i >= 1 and i <= #names
          and (name == false or type(name) == "string" and name ~= "")
      end
      if not ok then
        error("perf.stat: cgroup must be a cgroup directory, or a name under " .. (cgroup.root() or "/sys/fs/cgroup")
          .. ", or a list of them, one per event (false for none)", 0)
      end
    else
      local ids = type(v) == "table" and v or { v }
      local ok = #ids > 0
      for i, id in pairs(ids) do
        ok = ok and math.type(i) == "integer" and math.type(id) == "integer" and id > 0
      end
      if not ok then
        error(("perf.stat: %s must be a positive integer%s, got %s"):format(k,
          type(v) == "table" and " or a list of them" or "", tostring(v)), 0)
      end
    end
  end
  if n > 1 then error("perf.stat: a target is one of pid, tid and cgroup", 0) end
end

--- processes.describe(t) -> what perf stat's header names it ("system
-- wide" for a cgroup: perf names the cgroups on the rows)
function M.describe(t)
  local function ids(v) return type(v) == "table" and table.concat(v, ",") or tostring(v) end
  if t.pid then return ("process id '%s'"):format(ids(t.pid)) end
  if t.tid then return ("thread id '%s'"):format(ids(t.tid)) end
  return "system wide"
end

--- processes.cgroups(t, n) -> the cgroup of each of n events (a name, or
-- nil for none)
function M.cgroups(t, n)
  local list = {}
  for i = 1, n do
    if type(t.cgroup) == "string" then list[i] = t.cgroup else list[i] = t.cgroup[i] or nil end
  end
  return list
end

--- processes.cgroup_targets(name, cpus) -> one perf.open target per CPU | nil, message, errno
function M.cgroup_targets(name, cpus)
  local dir = cgroup.dir(name)
  if not fs.isdir(dir) then
    return nil, ("no cgroup %s (%s is no directory)"):format(name, dir), ENOENT
  end
  local list = {}
  for k, c in ipairs(cpus) do list[k] = { cgroup = dir, cpu = c } end
  return list
end

--- processes.thread_places(list) -> a row per thread of targets(t), as perf
-- stat --per-thread names them: { key = "comm-tid", comm, tid, cpus = { tid } }
-- (cpus: the targets whose counts the row sums, as for places on CPUs)
function M.thread_places(list)
  local places = {}
  for k, t in ipairs(list) do
    local comm = fs.read_trimmed(("/proc/%d/comm"):format(t.pid)) or ""
    places[k] = { key = comm .. "-" .. t.pid, comm = comm, tid = t.pid, cpus = { t.pid } }
  end
  return places
end

-- The threads of process pid, by tid, added to `list`; or nil, message, errno
local function add_threads(list, pid)
  local tids = fs.listdir(("/proc/%d/task"):format(pid))
  if #tids == 0 then return nil, ("no process %d"):format(pid), ESRCH end
  local own = {}
  for _, tid in ipairs(tids) do own[#own + 1] = math.tointeger(tonumber(tid)) end
  table.sort(own)
  for _, tid in ipairs(own) do list[#list + 1] = { pid = tid } end
  return list
end

--- processes.targets(t) -> list of perf.open targets, one per thread | nil, message, errno
-- (of each process or thread of a list in its order, as perf stat -p 1,2)
function M.targets(t)
  local list = {}
  for _, id in ipairs(type(t.pid or t.tid) == "table" and (t.pid or t.tid) or { t.pid or t.tid }) do
    if t.tid then
      if not fs.exists(("/proc/%d"):format(id)) then return nil, ("no thread %d"):format(id), ESRCH end
      list[#list + 1] = { pid = id }
    else
      local ok, msg, errno = add_threads(list, id)
      if not ok then return nil, msg, errno end
    end
  end
  return list
end

return M
