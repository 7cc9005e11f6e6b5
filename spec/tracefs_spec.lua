-- perf.tracefs: tracepoints work on a freshly booted machine, where nothing
-- has mounted tracefs yet. Each case runs the library in a private mount
-- namespace with every tracefs and debugfs unmounted (spec/fixtures/
-- fresh_ns.sh), so the host's mounts neither help nor change.
local H = require "helpers"

local FRESH = ("unshare -m --propagation private sh %s/spec/fixtures/fresh_ns.sh"):format(H.root)
local ENV = "package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path\n"

-- Why these cases cannot run here, or nil.
local function cannot()
  if H.sh("id -u") ~= "0\n" then return "needs root (mount namespaces)" end
  if H.sh("command -v unshare") == "" then return "needs unshare (util-linux)" end
  if H.sh(FRESH .. " echo ok") ~= "ok\n" then return "cannot make a private mount namespace here" end
end

-- Runs Lua `code` in a fresh namespace, after the shell commands `setup`.
local function fresh(code, setup)
  return H.run_lua(code, setup and (FRESH .. " sh -c '" .. setup .. "; exec \"$0\" \"$@\"'") or FRESH)
end

-- tracefs and debugfs mount lines of the namespace, as Lua code prints them.
local MOUNTS = [[
local function mounts()
  local out = {}
  for l in io.lines("/proc/self/mounts") do
    local dir, kind = l:match("^%S+ (%S+) (%S+)")
    if kind == "tracefs" or kind == "debugfs" then out[#out + 1] = kind .. " " .. dir end
  end
  return table.concat(out, ",")
end
]]

-- perf stat's count of `event` for `cmd`, in a fresh namespace of its own.
local function perf_stat_fresh(event, cmd)
  local log = os.tmpname()
  os.execute(FRESH .. (" perf stat -x, -o %s -e %s -- %s >/dev/null 2>&1"):format(log, event, cmd))
  local out = H.sh("cat " .. log)
  os.remove(log)
  return math.tointeger(tonumber(out:match("\n(%d+),[^,]*," .. event:gsub("%p", "%%%0") .. ",")))
end

describe("tracefs on a freshly booted machine", function()
  local why = cannot()
  if why then
    it("(skipped)", function() pending(why) end)
    return
  end

  it("is mounted once where perf mounts it, on first use", function()
    local out = fresh(MOUNTS .. [[
      local perf = require "perf"
      print("before", mounts())
      local tp = assert(perf.tracepoint "sched:sched_switch")
      print("tracepoint", tp.name, tp.id, #tp.fields)
      local attr = perf.parse "syscalls:sys_enter_openat"
      print("parse", attr.type, attr.config)
      local r = assert(perf.stat({ "ls", "/" }, "syscalls:sys_enter_openat", { stdout = "/dev/null" }))
      print("stat", r[1], r.status)
      print("after", mounts())
    ]])
    assert.matches("before\t\n", out, 1, true)
    assert.matches("tracepoint\tsched:sched_switch\t" .. H.tracepoint_id("sched", "sched_switch") .. "\t%d+\n", out)
    assert.matches("parse\t2\t" .. H.tracepoint_id("syscalls", "sys_enter_openat") .. "\n", out)
    local n = math.tointeger(tonumber(out:match("stat\t(%d+)\t0\n")))
    assert(n and n > 0, out)
    assert.are.equal(perf_stat_fresh("syscalls:sys_enter_openat", "ls /"), n)
    assert.matches("after\ttracefs /sys/kernel/tracing\n", out, 1, true)
  end)

  it("uses a tracefs that is already mounted, without mounting another", function()
    local out = fresh(MOUNTS .. [[
      local perf = require "perf"
      assert(perf.tracepoint "sched:sched_switch")
      print(perf.capabilities().tracefs, mounts())
    ]], "mkdir -p /tmp && mount -t tracefs nodev /sys/kernel/tracing")
    assert.are.equal("/sys/kernel/tracing\ttracefs /sys/kernel/tracing\n", out)
  end)

  it("uses debugfs's tracing/ where debugfs is mounted", function()
    local out = fresh(MOUNTS .. [[
      local perf = require "perf"
      assert(perf.tracepoint "sched:sched_switch")
      print(perf.capabilities().tracefs, (mounts():gsub("tracefs /sys/kernel/debug/tracing", "automount")))
    ]], "mount -t debugfs nodev /sys/kernel/debug")
    assert.are.equal("/sys/kernel/debug/tracing\tdebugfs /sys/kernel/debug,automount\n", out)
  end)

  it("mounts debugfs where the kernel has no tracefs", function()
    -- /proc/filesystems is read through perf.fs: a kernel without tracefs
    -- is one whose list lacks it
    local out = fresh(ENV .. MOUNTS .. [[
      local fs = require "perf.util.fs"
      local read = fs.read
      fs.read = function(path)
        local s = read(path)
        if path == "/proc/filesystems" then s = s:gsub("[^\n]*\ttracefs\n", "") end
        return s
      end
      local tracefs = require "perf.event.tracefs"
      print(tracefs.path())
      print((mounts():gsub(",?tracefs /sys/kernel/debug/tracing", "")))
    ]])
    assert.are.equal("/sys/kernel/debug/tracing\ndebugfs /sys/kernel/debug\n", out)
  end)

  it("does not remember a failure: tracefs mounted by hand is found on the next call", function()
    -- a tmpfs over /sys/kernel hides the mount point, so mounting fails
    local out = fresh(MOUNTS .. [[
      local perf = require "perf"
      print(perf.tracepoint "sched:sched_switch")
      print(pcall(perf.parse, "syscalls:sys_enter_openat"))
      print("why", perf.capabilities().why.tracefs)
      assert(os.execute("umount /sys/kernel && mount -t tracefs nodev /sys/kernel/tracing"))
      print("again", perf.tracepoint "sched:sched_switch")
      print("parse", perf.parse("syscalls:sys_enter_openat").config)
      print("caps", perf.capabilities().tracefs, perf.capabilities().why.tracefs)
      print("after", mounts())
    ]], "mount -t tmpfs -o ro,size=4k none /sys/kernel")
    H.assert_has("nil\tperf.tracepoint sched:sched_switch: mount -t tracefs nodev /sys/kernel/tracing: "
      .. "No such file or directory (ENOENT); the mount point does not exist\t2\n", out)
    H.assert_has("false\t\"syscalls:sys_enter_openat\": mount -t tracefs nodev /sys/kernel/tracing", out)
    H.assert_has("why\tmount -t tracefs nodev /sys/kernel/tracing", out)
    H.assert_has('again\tperf.tracepoint "sched:sched_switch" (id ' .. H.tracepoint_id("sched", "sched_switch"), out)
    H.assert_has("parse\t" .. H.tracepoint_id("syscalls", "sys_enter_openat") .. "\n", out)
    H.assert_has("caps\t/sys/kernel/tracing\tnil\n", out)
    H.assert_has("after\ttracefs /sys/kernel/tracing\n", out)
  end)

  it("tells an unprivileged user why and what to run", function()
    local out, why_not = H.run_as_nobody([[
      local perf = require "perf"
      print(perf.tracepoint "sched:sched_switch")
      print(perf.open "syscalls:sys_enter_openat")
      print(perf.capabilities().why.tracefs)
    ]], FRESH)
    if not out then return pending(why_not) end
    local msg = "tracefs is not mounted, and mounting it needs root (CAP_SYS_ADMIN): "
      .. "as root, run `mount -t tracefs nodev /sys/kernel/tracing`"
    H.assert_has("nil\tperf.tracepoint sched:sched_switch: " .. msg .. "\t1\n", out)
    H.assert_has('nil\tperf.open "syscalls:sys_enter_openat": ' .. msg .. "\t1\n", out)
    H.assert_has("\n" .. msg .. "\n", out)
  end)

  it("tells an unprivileged user when tracefs is there but not readable", function()
    local out, why_not = H.run_as_nobody([[
      print(require("perf").tracepoint "sched:sched_switch")
    ]], FRESH .. " sh -c 'mount -t tracefs -o mode=700 nodev /sys/kernel/tracing; exec \"$0\" \"$@\"'")
    if not out then return pending(why_not) end
    H.assert_has("nil\tperf.tracepoint sched:sched_switch: cannot read /sys/kernel/tracing "
      .. "(permission denied): tracepoints need root, or read access to tracefs\t13\n", out)
  end)
end)

-- The rest of what a freshly booted machine lacks or sets differently, and
-- what the library does about each (see also kallsyms_spec: kptr_restrict
-- hides kernel addresses, which perf.kallsyms says rather than reading
-- zeros; ring_spec: the perf_event_mlock_kb allowance, which the mmap
-- failure names, as perf does not raise it either).
describe("a freshly booted machine", function()
  local perf = require "perf"

  it("counts a cgroup of the v2 hierarchy, with no perf_event hierarchy mounted by hand", function()
    local root = H.cgroup2()
    if H.sh("id -u") ~= "0\n" or not root then
      return pending("needs root and a cgroup2 mount")
    end
    local dir = ("%s/perf-lua-spec-%d"):format(root, H.PID)
    assert(os.execute("mkdir " .. dir))
    local events = {}
    for _, cpu in ipairs(require("perf.event.capabilities").online_cpus()) do
      events[#events + 1] = assert(perf.open("syscalls:sys_enter_openat", { cgroup = dir, cpu = cpu }))
    end
    for _, ev in ipairs(events) do assert(ev:enable()) end
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("for i = 1, 7 do io.open('/dev/null'):close() end\n")
    f:close()
    local lua = H.lua .. " " .. script
    assert(os.execute(("sh -c 'echo $$ > %s/cgroup.procs && exec %s'"):format(dir, lua)))
    local n = 0
    for _, ev in ipairs(events) do
      assert(ev:disable())
      n = n + ev:read()
      ev:close()
    end
    os.execute("rmdir " .. dir)
    -- the shell started before it joined: only the program it became counts
    local theirs = assert(perf.stat({ H.lua, script }, "syscalls:sys_enter_openat"))
    os.remove(script)
    assert.is_true(n >= 7)
    assert.are.equal(theirs[1], n)
  end)
end)
