-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- What this machine's kernel lets perf do, probed once and cached, except
-- what can change from one moment to the next: tracefs (it can be mounted
-- later) and the free hardware breakpoint slots (other processes' CPU-wide
-- breakpoints and this thread's own take them), probed at every call.
--
-- perf.capabilities() returns a fresh table each call:
--   kernel, paranoid, pmu, rdpmc, tracefs, breakpoints, max_breakpoints,
--   uprobes, max_sample_rate, max_stack, mlock_kb, attr_size, read_lost,
--   cpus, pmus, and `why`: for each capability that is unavailable, a
--   sentence saying why.
local core = require "perf.core"

local M = {}

local fs = require "perf.util.fs"
-- tracefs lookup, loaded on first use (it is not needed to require perf)
local function tracepoint() return require "perf.event.tracepoint" end
local read, exists = fs.read_trimmed, fs.exists

local function number(path)
  return math.tointeger(tonumber(read(path) or ""))
end

-- The tracefs directory, or nil and why it is missing.
function M.tracefs()
  return tracepoint().path()
end

-- The online CPUs, from /sys/devices/system/cpu/online ("0-3,5").
function M.online_cpus()
  local list = {}
  for a, b in (read("/sys/devices/system/cpu/online") or "0"):gmatch("(%d+)%-?(%d*)") do
    for cpu = tonumber(a), tonumber(b ~= "" and b or a) do list[#list + 1] = cpu end
  end
  return list
end

local function probe(attr)
  local ev, _, errno = core.open(attr, nil, "probe")
  if ev then ev:close() return true end
  return false, core.errno_name(errno), errno
end

local EACCES, EPERM, ENOSPC = core.errno.EACCES, core.errno.EPERM, core.errno.ENOSPC

-- PERF_FORMAT_LOST, probed alone and once: perf.open asks for it on its
-- first event, and must not pay for the whole probe. The dummy event
-- counts in user space only, so paranoid settings do not hide the answer;
-- a refusal for permission is told apart from an old kernel.
local read_lost, read_lost_why
function M.read_lost()
  if read_lost == nil then
    local ok, name, errno = probe { type = "software", config = 9, disabled = true,
      exclude_kernel = true, exclude_hv = true, read_format = { "lost" } }
    read_lost = ok
    if ok then
      read_lost_why = nil
    elseif errno == EACCES or errno == EPERM then
      read_lost_why = ("could not be probed: opening an event gives %s (permission: "
        .. "perf_event_paranoid, seccomp or a container)"):format(name)
    else
      read_lost_why = ("PERF_FORMAT_LOST needs Linux 6.0 (the probe gives %s)"):format(name)
    end
  end
  return read_lost, read_lost_why
end

-- The hardware breakpoint slots free for this thread now: read/write
-- watchpoints on one byte opened until the kernel says ENOSPC. The kernel
-- counts a thread's slots on each CPU together with the CPU-wide
-- breakpoints there (kernel/events/hw_breakpoint.c), so a process holding
-- every slot of one CPU leaves none, until it lets them go.
local function breakpoint_slots()
  local anchor = string.rep("b", 16)
  local addr = core.addressof(anchor)
  local open, err = {}, nil
  for _ = 1, 16 do
    local ev, msg, errno = core.open({ type = "breakpoint", bp_type = "rw",
      bp_addr = addr, bp_len = 1, disabled = true, exclude_kernel = true,
      exclude_hv = true }, nil, "breakpoint probe")
    if not ev then
      if errno ~= ENOSPC then err = msg end   -- the end of slots
      break
    end
    open[#open + 1] = ev
  end
  for _, ev in ipairs(open) do ev:close() end
  return #open, err
end

local cached

local function probe_all()
  local t, why = {}, {}
  t.kernel = read("/proc/sys/kernel/osrelease")
  t.paranoid = number("/proc/sys/kernel/perf_event_paranoid")
  t.max_sample_rate = number("/proc/sys/kernel/perf_event_max_sample_rate")
  t.max_stack = number("/proc/sys/kernel/perf_event_max_stack")
  t.mlock_kb = number("/proc/sys/kernel/perf_event_mlock_kb")
  t.attr_size = core.kernel_attr_size()
  t.pmus = fs.listdir("/sys/bus/event_source/devices")
  t.cpus = #M.online_cpus()

  local ok, err = probe { type = "hardware", config = 0, exclude_kernel = true,
                          exclude_hv = true, disabled = true }
  t.pmu = ok
  if not ok then
    why.pmu = "no hardware PMU: opening cpu-cycles gives " .. err ..
      " and /sys/bus/event_source/devices has no cpu PMU (virtual machines often expose none)"
  end
  local rdpmc = number("/sys/bus/event_source/devices/cpu/rdpmc")
  t.rdpmc = rdpmc ~= nil and rdpmc > 0
  if not t.rdpmc then
    why.rdpmc = rdpmc and "rdpmc is disabled (/sys/bus/event_source/devices/cpu/rdpmc = 0)"
      or "no cpu PMU, so no counters to read with rdpmc; reads use read(2)"
  end

  t.tracefs, why.tracefs = M.tracefs()

  t.uprobes = exists("/sys/bus/event_source/devices/uprobe/type")
  if not t.uprobes then why.uprobes = "the kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)" end

  t.read_lost, why.read_lost = M.read_lost()
  t.why = why
  return t
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
  return c
end

function M.get()
  cached = cached or probe_all()
  local t = copy(cached)
  -- tracefs can be mounted after a failure, and breakpoint slots freed:
  -- never report a stale answer
  t.tracefs, t.why.tracefs = M.tracefs()
  local slots, err = breakpoint_slots()
  t.max_breakpoints, t.breakpoints, t.why.breakpoints = slots, slots > 0, nil
  if slots == 0 then
    t.why.breakpoints = err or "no hardware breakpoint slot is free now (this thread's "
      .. "breakpoints and the CPU-wide ones of any process take them)"
  end
  return core.show(t, "perf.capabilities")
end

return M
