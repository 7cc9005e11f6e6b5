-- Shared test helpers: paths to the in-tree build, tracepoint ids, fd counts,
-- and running Lua code in a child process (for limits and privileges).
local H = {}

do
  local p = io.popen("pwd")
  H.root = p:read("l")
  p:close()
end
H.lua = os.getenv("LUA") or "lua5.4"

-- Under `make asan` the sanitizer build of the C core, once loaded, takes
-- the sanitizer runtimes out of LD_PRELOAD (csrc/sanitizer_env.c), so the
-- commands the specs start run without them. A shell command starting an
-- interpreter that loads the C core begins with H.core_env, which gives
-- them back ("" in a plain run; a command, so it may follow another such
-- as setpriv).
require "perf.core"
H.core_env = ""
if os.getenv("PERF_LUA_SANITIZER_PRELOAD") then
  H.core_env = ("env LD_PRELOAD='%s' "):format(os.getenv("PERF_LUA_SANITIZER_PRELOAD"))
end

-- A command line that runs an example script with the C core this suite
-- tests: under `make asan` the sanitizer build is loaded before the script
-- runs (examples look for ./perf/core.so, the plain build).
H.example = H.lua
do
  local cpath = os.getenv("PERF_LUA_CPATH")
  if cpath then
    local so = cpath:gsub("%?", "perf/core")
    H.example = ("%s%s -e \"package.loaded['perf.core'] = assert(package.loadlib('%s', "
      .. "'luaopen_perf_core'))('perf.core')\""):format(H.core_env, H.lua, so)
  end
end

-- Specs whose outcome depends on a hardware PMU carry the tag #hardware in
-- their name (`busted --exclude-tags=hardware` leaves them out). These two
-- mark the running test pending with busted's `pending`, saying why, and
-- return true when it cannot run here: `if H.needs_pmu(pending) then return end`.
function H.needs_pmu(pending)
  local caps = require("perf.event.capabilities").get()
  if caps.pmu then return false end
  pending(caps.why.pmu or "no hardware PMU here")
  return true
end

-- For the specs of what happens without a PMU (hardware events refused).
function H.needs_no_pmu(pending)
  if not require("perf.event.capabilities").get().pmu then return false end
  pending("tests hardware events where no PMU exists, and this machine has one")
  return true
end

-- The cgroup v2 hierarchy's mount (where the perf_event controller always
-- is), as systemd mounts it at boot: /sys/fs/cgroup or its unified/ part;
-- nil when none is mounted.
function H.cgroup2()
  for line in io.lines("/proc/self/mounts") do
    local dir, kind = line:match("^%S+ (%S+) (%S+)")
    if kind == "cgroup2" then return dir end
  end
end

-- Runs `code` as nobody where perf_event_paranoid refuses kernel-mode
-- counting to unprivileged users (the case the user-space retry is for).
-- Returns its output, or nil after marking the test pending, saying why,
-- with busted's `pending`.
function H.run_without_kernel_counting(code, pending)
  if require("perf.event.capabilities").get().paranoid < 2 then
    pending("perf_event_paranoid < 2 lets nobody count kernel mode")
    return nil
  end
  local out, why = H.run_as_nobody(code)
  if not out then pending(why) end
  return out
end

-- Builds the C test helper spec/fixtures/<name>.c (plus `extra` sources,
-- which may use csrc/'s headers) into a Lua module in a new temporary
-- directory. Returns the module's path and the directory (rm -rf it when
-- done).
function H.build_fixture(name, extra)
  local dir = os.tmpname()
  os.remove(dir)
  local so = ("%s/%s.so"):format(dir, name)
  assert(os.execute(("mkdir -p %s && cc -shared -fPIC -I/usr/include/lua5.4 -Icsrc -o %s spec/fixtures/%s.c %s")
    :format(dir, so, name, extra or "")))
  return so, dir
end

-- H.build_fixture, loaded: the module, and its directory.
function H.load_fixture(name, extra)
  local so, dir = H.build_fixture(name, extra)
  return assert(package.loadlib(so, "luaopen_" .. name))(), dir
end

-- The tracefs directory, as the library finds it (mounting tracefs on a
-- freshly booted machine): specs never rely on an earlier run's mount.
function H.tracefs()
  return assert(require("perf.event.tracefs").path())
end

-- The tracepoint id from tracefs, without going through the parser.
function H.tracepoint_id(sys, name)
  local f = assert(io.open(("%s/events/%s/%s/id"):format(H.tracefs(), sys, name)))
  local id = math.tointeger(f:read("n"))
  f:close()
  return id
end

-- A file's bytes; raises when it cannot be read.
function H.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- n openat(2) calls: the exact work the openat tracepoint counts.
function H.opens(n)
  for _ = 1, n do assert(io.open("/dev/null")):close() end
end

-- An openat tracepoint sampling every hit, with sample_type `fields` and
-- the attr fields of `extra`.
function H.openat_sampler(fields, extra)
  local attr = { type = "tracepoint", config = H.tracepoint_id("syscalls", "sys_enter_openat"),
                 sample_period = 1, sample_type = fields }
  for k, v in pairs(extra or {}) do attr[k] = v end
  return assert(require("perf").open(attr))
end

-- A record's bytes: the perf_event_header (type, misc, size), then the body.
function H.record_bytes(type, misc, body)
  return string.pack("<I4I2I2", type, misc, 8 + #body) .. body
end

-- A shallow copy (nested tables stay shared).
function H.copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- This process's pid, from /proc/self/stat.
H.PID = (function()
  local f = assert(io.open("/proc/self/stat"))
  local pid = math.tointeger(f:read("n"))
  f:close()
  return pid
end)()

-- A shell command's standard output (its errors are dropped).
function H.sh(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  local out = p:read("a")
  p:close()
  return out
end

-- Asserts the shape of a kernel failure, (nil, string, integer), and
-- returns the message and errno.
function H.fails(ok, msg, errno)
  assert(ok == nil, "expected a failure, got " .. tostring(ok))
  assert(type(msg) == "string", "message expected")
  assert(math.type(errno) == "integer", "errno expected")
  return msg, errno
end

-- The count of `ev` over one call of fn(...): reset, enable, call, disable.
function H.count(ev, fn, ...)
  assert(ev:reset())
  assert(ev:enable())
  fn(...)
  assert(ev:disable())
  return (ev:read())
end

-- The message perf.parse raises for `s` (asserting that it raises).
function H.parse_error(s)
  local ok, err = pcall(require("perf.event.parse").parse, s)
  assert(not ok, "expected an error for " .. s)
  return err
end

-- Asserts that the caret line of a parse error points at byte `pos` of `s`.
function H.assert_caret(err, s, pos)
  local expect = "\n    " .. s .. "\n    " .. (" "):rep(pos - 1) .. "^"
  assert(err:find(expect, 1, true), ("caret not at %d in:\n%s"):format(pos, err))
end

-- Asserts that `text` occurs in `err`, literally.
function H.assert_has(text, err)
  assert(err:find(text, 1, true), ("%q not in:\n%s"):format(text, err))
end

-- Open file descriptors of this process (after collecting garbage, so
-- file handles other code dropped are closed first). Probes /proc/self/fd
-- without a child process, which could see a half-made pipe.
function H.fd_count()
  collectgarbage()
  collectgarbage()
  local n = 0
  for fd = 0, 4095 do
    local f, _, errno = io.open("/proc/self/fd/" .. fd)
    if f then f:close() end
    if f or errno ~= 2 then n = n + 1 end
  end
  return n
end

-- A detached tmux session `name` (on a server of its own) running `cmd`
-- in a fresh directory: returns the tmux command prefix and the directory.
-- `cmd` is formatted with the tree's root, the interpreter and the
-- directory (twice).
function H.tmux_session(name, size, cmd)
  local work = os.tmpname()
  os.remove(work)
  assert(os.execute("mkdir -p " .. work))
  local tmux = ("env -u LD_PRELOAD tmux -L perf-lua-%s-%d "):format(name, H.PID)
  cmd = cmd:format(H.root, H.example, work, work)
  assert(os.execute(("%snew-session -d -s %s %s %s"):format(tmux, name, size, "'" .. cmd:gsub("'", "'\\''") .. "'")))
  return tmux, work
end

-- The line the session's shell wrote to `work`/status (at most 10 s).
function H.wait_status(work)
  for _ = 1, 50 do
    local f = io.open(work .. "/status")
    if f then
      local status = f:read("l")       -- nil while the shell has only opened it
      f:close()
      if status then return status end
    end
    os.execute("sleep 0.2")
  end
end

-- Runs `code` (a Lua chunk) in a fresh interpreter with the in-tree paths,
-- under `shell_prefix` (e.g. "ulimit -n 16;"), returning its stdout.
function H.run_lua(code, shell_prefix, dir)
  dir = dir or H.root
  local cpath = (os.getenv("PERF_LUA_CPATH") or "./?.so"):gsub("^%./", "")
  if cpath:sub(1, 1) ~= "/" then cpath = H.root .. "/" .. cpath end
  if dir ~= H.root then cpath = dir .. "/?.so" end
  local chunk = ("package.path=%q..package.path package.cpath=%q..package.cpath %s")
    :format(dir .. "/lua/?.lua;" .. dir .. "/lua/?/init.lua;", cpath .. ";", code)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(chunk)
  f:close()
  os.execute("chmod 644 " .. tmp)
  local p = io.popen(("%s %s%s %s 2>&1"):format(shell_prefix or "", H.core_env, H.lua, tmp))
  local out = p:read("a")
  p:close()
  os.remove(tmp)
  return out
end

-- Runs `code` as the unprivileged user nobody, from a copy of the build it
-- can read, after `shell_prefix` (e.g. "ulimit -l 0;"). Returns its output,
-- or nil and why it cannot run here (for pending()).
function H.run_as_nobody(code, shell_prefix)
  if H.sh("id -u") ~= "0\n" or H.sh("command -v setpriv") == "" then
    return nil, "needs root and setpriv to run a child as nobody"
  end
  local dir = os.tmpname()
  os.remove(dir)
  local build = (os.getenv("PERF_LUA_CPATH") or "./?.so"):gsub("%?%.so$", "")
  assert(os.execute(("mkdir -p %s && cp -r lua %s/ && cp -r %sperf %s/ && chmod -R a+rX %s")
    :format(dir, dir, build == "./" and "" or build, dir, dir)))
  local out = H.run_lua(code, (shell_prefix or "") ..
    " setpriv --reuid=65534 --regid=65534 --clear-groups", dir)
  os.execute("rm -rf " .. dir)
  return out
end

-- Touches 2 * `pages` new pages: string.rep fills a fresh buffer of that
-- size and copies it into a fresh string. Both are mmapped, so every page
-- is new, only when they are larger than glibc's mmap threshold, which
-- grows after a large block is freed, up to 32 MiB: give more than 8192
-- pages. Returns the string so it stays alive.
function H.touch_pages(pages)
  return string.rep("x", pages * 4096)
end

-- A word quoted for the shell.
function H.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- perf stat -x, on the command `argv` (with perf's `extra` options):
-- { [event] = count }.
function H.perf_stat(argv, events, extra)
  local out = os.tmpname()
  local cmd = {}
  for i, a in ipairs(argv) do cmd[i] = H.shell_quote(a) end
  local line = ("perf stat %s -x, -o %s -e %s -- %s >/dev/null 2>&1"):format(extra or "", out,
    table.concat(events, ","), table.concat(cmd, " "))
  assert(os.execute(line) ~= nil)
  local counts = {}
  for l in io.lines(out) do
    local value, name = l:match("^(%d+),[^,]*,([^,]+),")
    if value then counts[name] = math.tointeger(tonumber(value)) end
  end
  os.remove(out)
  return counts
end

-- The first entry of `list` whose fields equal those of `pred`, or nil.
function H.find(list, pred)
  for _, e in ipairs(list) do
    local ok = true
    for k, v in pairs(pred) do if e[k] ~= v then ok = false end end
    if ok then return e end
  end
end

-- Headless Chromium, where installed (a test dependency): H.chromium is
-- its path or nil; H.browse(flags, url) runs it once with a profile
-- directory of its own and returns what it printed (--dump-dom: the page
-- after its scripts ran).
H.chromium = H.sh("command -v chromium"):match("%S+")

function H.browse(flags, url)
  local profile = os.tmpname()
  os.remove(profile)
  local cmd = ("env -u LD_PRELOAD %s --headless --no-sandbox --disable-gpu --disable-quic "
    .. "--no-first-run --disable-background-networking --disable-component-update "
    .. "--disable-sync --user-data-dir=%s %s '%s' 2>/dev/null"):format(H.chromium, profile, flags, url)
  local out = H.sh(cmd)
  os.execute("rm -rf " .. profile)
  return out
end

-- width, height and size of a PNG file (nil when it is not one)
function H.png_info(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local data = f:read("a")
  f:close()
  if data:sub(1, 8) ~= "\137PNG\r\n\26\n" or data:sub(13, 16) ~= "IHDR" then return nil end
  local w, h = string.unpack(">I4I4", data, 17)
  return w, h, #data
end

return H
