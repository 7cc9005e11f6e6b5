-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.attach_target: what runs in a process to be profiled by pid: its
-- Lua (the release named by the lua_ident string of its executable or of
-- a library it mapped, liblua5.4.so.0 or a Lua built in), and whether this
-- process may trace it.
--
--   local t, msg, errno = require("perf.attach_target").inspect(pid)
--   t = { pid =, comm =, release = "5.4.4", file = "/usr/bin/lua5.4", how = "lua_ident" }
--
-- Files are read through /proc/PID/root, so a process in another mount or
-- pid namespace (a container), given by its pid here, is read as it sees
-- its files.
local core = require "perf.core"
local elf = require "perf.util.elf"

local E = core.errno
local M = {}

local function slurp(path, n)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read(n or "a")
  f:close()
  return s
end

local function my_pid()
  return tonumber((slurp("/proc/self/stat") or ""):match("^(%d+)"))
end

M.my_pid = my_pid

local function status_of(pid)
  local s = slurp(("/proc/%d/status"):format(pid))
  if not s then return nil end
  local t = {}
  for k, v in s:gmatch("([%w_]+):%s*([^\n]*)") do t[k] = v end
  return t
end
M.status_of = status_of

-- The files mapped executable in the process, the executable first.
local function mapped_files(pid)
  local f, msg, errno = io.open(("/proc/%d/maps"):format(pid), "rb")
  if not f then return nil, msg, errno end
  local maps = f:read("a")
  f:close()
  local files, seen, ranges = {}, {}, {}   -- the executable is mapped lowest
  for range, perms, file in maps:gmatch("(%x+%-%x+)%s+(%S+)%s+%x+%s+%S+%s+%d+%s+(/[^\n]*)") do
    ranges[file] = ranges[file] or range
    if perms:find("x", 1, true) and not seen[file] then
      seen[file] = true
      files[#files + 1] = file
    end
  end
  return files, ranges
end

-- Where this process reads a file the target mapped: through its root
-- (another mount namespace, a chroot), else through /proc/PID/map_files
-- (root only), where the maps name it by a path its root does not hold
-- (a mount namespace made inside a chroot names files from the real root).
local function readable(pid, path, ranges)
  local real = ("/proc/%d/root%s"):format(pid, path)
  local f = io.open(real, "rb")
  if f then f:close() return real end
  local mapped = ranges[path] and ("/proc/%d/map_files/%s"):format(pid, ranges[path])
  f = mapped and io.open(mapped, "rb")
  if f then f:close() return mapped end
  return real
end

-- "5.4.4" (and the whole ident) from a lua_ident string
local function release_of(ident)
  local r = ident and ident:match("%$LuaVersion: Lua (%d+%.%d+%.?%d*)")
  return r
end

-- What a file holds: Lua's release by its lua_ident symbol, LuaJIT by its
-- version symbol, or by the $LuaVersion string where symbols are stripped.
local function lua_in(path, real)
  local name = path:match("[^/]+$") or path
  local e = elf.open(real)
  if e then
    local sym = e:symbol("lua_ident")
    if sym and sym.offset then
      local f = io.open(real, "rb")
      if f then
        f:seek("set", sym.offset)
        local s = f:read(160)
        f:close()
        local r = release_of(s)
        if r then return { release = r, file = path, how = "lua_ident" } end
      end
    end
    if e.symbols.luaJIT_setmode then
      local body = slurp(real)
      return { jit = body and body:match("LuaJIT (%d[%w%.%-]*)") or "?", file = path }
    end
  end
  if name:match("lua") or not e or not next(e.symbols) then
    local body = slurp(real)
    local r = body and release_of(body:match("%$LuaVersion: Lua [%d%.]+"))
    if r then return { release = r, file = path, how = "$LuaVersion string" } end
    if body and body:find("LuaJIT %d") then return { jit = body:match("LuaJIT ([%d%.%-%w]+)"), file = path } end
  end
end

-- The Lua a process runs: { release, file, how } or nil, what was found.
local function find_lua(pid)
  local files, ranges, errno = mapped_files(pid)
  if not files then return nil, errno == E.ENOENT and "gone" or ranges, errno end
  local others = {}
  for i, path in ipairs(files) do
    -- the executable, then libraries that may hold Lua, then the rest
    if i == 1 or path:match("lua") then
      local found = lua_in(path, readable(pid, path, ranges))
      if found and found.release and found.release:match("^5%.4%.") then return found end
      if found then others[#others + 1] = found end
    end
  end
  for i, path in ipairs(files) do
    if i > 1 and not path:match("lua") and not path:match("^/usr/lib/.*/lib[cm]%.so")
        and not path:match("ld%-linux") then
      local found = lua_in(path, readable(pid, path, ranges))
      if found and found.release and found.release:match("^5%.4%.") then return found end
      if found then others[#others + 1] = found end
    end
  end
  local what = {}
  for _, o in ipairs(others) do
    what[#what + 1] = o.jit and ("LuaJIT %s in %s"):format(o.jit, o.file)
      or ("Lua %s in %s"):format(o.release, o.file)
  end
  return nil, #what > 0 and ("found " .. table.concat(what, ", "))
    or "found no Lua (no lua_ident in its executable or the libraries it mapped)"
end

--- inspect(pid [, tid]) -> target | nil, message, errno: the process, its
-- Lua, and why it cannot be traced when it cannot
function M.inspect(pid, tid)
  local st = status_of(pid)
  if not st or (tid and not status_of(tid)) then
    return nil, ("no process %d: it is gone (or never was)"):format(tid or pid), E.ESRCH
  end
  if pid == my_pid() then
    return nil, ("process %d is this one: profile it with perf.profile(fn)"):format(pid), E.EINVAL
  end
  local comm = (st.Name or "?")
  local lua, why, errno = find_lua(pid)
  if not lua then
    if why == "gone" then return nil, ("no process %d: it is gone"):format(pid), E.ESRCH end
    if errno then
      local t = { pid = pid, comm = comm, tracer = tonumber(st.TracerPid) or 0,
        uid = tonumber((st.Uid or ""):match("^%d+%s+(%d+)")) }
      return nil, M.why(t, "reading /proc/" .. pid .. "/maps", E.EPERM, errno), errno
    end
    return nil, ("process %d (%s) runs no Lua 5.4: %s"):format(pid, comm, why), E.ENOEXEC
  end
  if not core.attach_layout(lua.release) then
    return nil, ("process %d (%s) runs Lua %s (%s), whose layout is not known here (5.4.0 to 5.4.8 are)")
      :format(pid, comm, lua.release, lua.file), E.ENOEXEC
  end
  lua.pid, lua.comm = pid, comm
  lua.tracer = tonumber(st.TracerPid) or 0
  lua.uid = tonumber((st.Uid or ""):match("^%d+%s+(%d+)"))
  return lua
end

local CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON = 19, 21, 38

local function has_cap(capeff, bit)
  local v = tonumber(capeff or "0", 16) or 0
  return (v >> bit) & 1 == 1
end

--- whether this process may profile the kernel side of a process it
-- traces: perf_event_paranoid below 2, or CAP_PERFMON / CAP_SYS_ADMIN
function M.may_see_kernel()
  local me = status_of(my_pid()) or {}
  local paranoid = tonumber(slurp("/proc/sys/kernel/perf_event_paranoid") or "") or 2
  return paranoid < 2 or has_cap(me.CapEff, CAP_PERFMON) or has_cap(me.CapEff, CAP_SYS_ADMIN)
end

--- why(target, what, errno) -> the message for a refusal of ptrace or
-- perf_event_open: what was refused, why, what to do
function M.why(t, what, errno, shown)
  local me = status_of(my_pid()) or {}
  local caps = me.CapEff
  local myuid = tonumber((me.Uid or ""):match("^%d+%s+(%d+)"))
  local scope = tonumber(slurp("/proc/sys/kernel/yama/ptrace_scope") or "")
  local head = ("%s of process %d (%s) refused (%s)"):format(what, t.pid, t.comm, core.errno_name(shown or errno))
  local hint
  if what ~= "perf_event_open" and errno == E.EPERM then
    if t.tracer ~= 0 then
      local other = status_of(t.tracer) or {}
      hint = ("it is traced already, by process %d (%s): detach that first"):format(t.tracer, other.Name or "?")
    elseif scope == 3 then
      hint = "Yama's ptrace_scope is 3: no process can be traced until a reboot"
    elseif not has_cap(caps, CAP_SYS_PTRACE) and t.uid ~= myuid then
      hint = ("it is another user's (uid %d; this is uid %d): run as that user, as root, or with CAP_SYS_PTRACE")
        :format(t.uid or -1, myuid or -1)
    elseif scope == 2 and not has_cap(caps, CAP_SYS_PTRACE) then
      hint = "Yama's ptrace_scope is 2: tracing needs CAP_SYS_PTRACE (run as root, or setcap cap_sys_ptrace)"
    elseif scope == 1 and not has_cap(caps, CAP_SYS_PTRACE) then
      hint = "Yama's ptrace_scope is 1: only an ancestor may trace it; run as root, grant CAP_SYS_PTRACE, "
        .. "or set /proc/sys/kernel/yama/ptrace_scope to 0"
    else
      hint = "the kernel refused the trace (a setuid or non-dumpable process needs CAP_SYS_PTRACE)"
    end
  elseif what == "perf_event_open" and (errno == E.EACCES or errno == E.EPERM) then
    local paranoid = tonumber(slurp("/proc/sys/kernel/perf_event_paranoid") or "")
    if not (has_cap(caps, CAP_PERFMON) or has_cap(caps, CAP_SYS_ADMIN)) then
      hint = ("perf_event_paranoid is %s and this process lacks CAP_PERFMON: run as root, grant CAP_PERFMON, "
        .. "or lower /proc/sys/kernel/perf_event_paranoid (tracepoints need -1 or CAP_PERFMON)"):format(tostring(paranoid))
    end
  elseif errno == E.ESRCH then
    hint = "the process is gone"
  end
  return head .. (hint and (": " .. hint) or "")
end

return M
