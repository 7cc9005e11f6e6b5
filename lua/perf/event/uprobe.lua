-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- Documented on the perf page.
-- @submodule perf

-- perf.uprobe: count or sample the calls (or returns) of a function in a
-- binary or library, through the uprobe PMU.
--
--   local ev = perf.uprobe("libc.so.6", "getenv")            -- calls
--   local ev = perf.uprobe("/usr/bin/lua5.4", "luaV_execute", { ret = true })
--   local ev = perf.uprobe("/bin/true", 0x2590)              -- a file offset
--
-- The uprobe PMU takes the path of the file (config1) and the file offset
-- of the instruction (config2); `config` has the retprobe bit. A symbol is
-- placed with the ELF symbol tables; "sym+0x10" adds an offset. A binary
-- named without a '/' is looked up among the files mapped into this
-- process ("libc.so.6", or just "libc"), then in PATH.
--
-- opts: ret (probe returns instead of calls), ref_ctr_offset (an SDT
-- semaphore), plus target fields (pid, cpu, group, cgroup, flags) and attr
-- fields (sample_type, sample_period, ...). Hits are sampled one by one
-- (sample_period = 1) unless the attr says otherwise. The uprobe PMU needs
-- CAP_PERFMON (or root) whatever perf_event_paranoid says.

local core = require "perf.core"
local evbase = require "perf.event.base"
local elf = require "perf.util.elf"
local pmus = require "perf.event.pmu"
local fs = require "perf.util.fs"
local nearest = require "perf.util.nearest"

local options = require "perf.util.options"
local tracepoint = require "perf.event.tracepoint"

local E = core.errno

local M = {}

local OWN_KEYS = { ret = true, ref_ctr_offset = true }

-- The paths perf.uprobe gave the kernel, by their address: they stay alive
-- here, so an attr read back from an event (config1) can be made again.
local paths = {}


-- Files mapped into this process, from /proc/self/maps.
local function mapped_files()
  local out, seen = {}, {}
  for line in (fs.read("/proc/self/maps") or ""):gmatch("[^\n]+") do
    local path = line:match("%s(/%S+)$")
    if path and not seen[path] then
      seen[path] = true
      out[#out + 1] = path
    end
  end
  return out
end

-- The path of `binary`: a path as given, a mapped file by its base name
-- (exact, or followed by '.' or '-'), or a program in PATH.
function M.find_binary(binary)
  if binary:find("/", 1, true) then
    if fs.exists(binary) then return binary end
    return nil, ("no file %s"):format(binary)
  end
  local pat = "^" .. binary:gsub("%p", "%%%0")
  local files = mapped_files()
  for _, exact in ipairs { true, false } do
    for _, path in ipairs(files) do
      local base = path:match("[^/]+$")
      if base == binary or (not exact and (base:match(pat .. "%.") or base:match(pat .. "%-"))) then
        return path
      end
    end
  end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local p = dir .. "/" .. binary
    if fs.exists(p) then return p end
  end
  local bases = {}
  for _, path in ipairs(files) do bases[#bases + 1] = path:match("[^/]+$") end
  return nil, ("no binary '%s' mapped in this process or in PATH%s"):format(binary,
    nearest.hint(binary, bases))
end

-- The file offset, within `path`, of the code an IFUNC symbol resolved to
-- in this process (dlsym gives its address, /proc/self/maps its file).
function M.ifunc_target(path, sym)
  local addr = core.symbol(sym, path)
  if not addr then return nil end
  for line in (fs.read("/proc/self/maps") or ""):gmatch("[^\n]+") do
    local lo, hi, off, file = line:match("^(%x+)%-(%x+)%s+%S+%s+(%x+)%s+%S+%s+%d+%s+(%S+)")
    if lo then
      lo, hi, off = tonumber(lo, 16), tonumber(hi, 16), tonumber(off, 16)
      if addr >= lo and addr < hi then
        -- the same library, perhaps reached through another directory
        if file:match("[^/]+$") ~= path:match("[^/]+$") then return nil end
        return addr - lo + off
      end
    end
  end
end

-- Builds the attr and target of a uprobe. Raises on misuse; returns nil,
-- message, errno when the binary, the symbol or the uprobe PMU is missing.
function M.attr(binary, where, opts)
  opts = opts or {}
  if type(binary) ~= "string" then
    error(("perf.uprobe: expected the binary's path or name, got %s"):format(type(binary)), 3)
  end
  if type(opts) ~= "table" then
    error(("perf.uprobe: options must be a table, not %s"):format(type(opts)), 3)
  end
  local wtype = math.type(where) or type(where)
  if wtype ~= "integer" and wtype ~= "string" then
    error(("perf.uprobe: expected a symbol name or a file offset, got %s"):format(wtype), 3)
  end
  local p = pmus.find("uprobe")
  if not p then
    return nil, "perf.uprobe: this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)", E.ENOENT
  end
  local path, err = M.find_binary(binary)
  if not path then return nil, "perf.uprobe: " .. err, E.ENOENT end

  local offset, label
  if wtype == "integer" then
    if where < 0 then error("perf.uprobe: a file offset cannot be negative", 3) end
    offset, label = where, ("0x%x"):format(where)
  else
    local sym, add = where:match("^(.-)%+(0[xX]%x+)$")
    if not sym then sym, add = where:match("^(.-)%+(%d+)$") end
    sym = sym or where
    add = add and math.tointeger(tonumber(add)) or 0
    local e, msg, code = elf.open(path)
    if not e then return nil, "perf.uprobe: " .. msg, code end
    local s, serr = e:symbol(sym)
    if not s then
      return nil, ("perf.uprobe: %s%s"):format(serr, nearest.hint(sym, e:names())), E.ENOENT
    end
    offset, label = s.offset + add, where
    if s.type == "ifunc" then
      -- the symbol is a resolver: probe the implementation it chose here
      local impl = M.ifunc_target(path, sym)
      if not impl then
        error(("perf.uprobe: %s in %s is an IFUNC (its code is chosen when the " ..
          "library loads) and this process has not loaded it: probe the " ..
          "implementation by name or offset"):format(sym, path), 3)
      end
      offset = impl + add
    end
  end

  local config = 0
  if opts.ret then
    local f = p.format_bits.retprobe
    if not f then
      return nil, "perf.uprobe: the uprobe PMU has no retprobe format bit", E.EOPNOTSUPP
    end
    config = pmus.pack(f, config, 1)
  end
  if opts.ref_ctr_offset then
    local f = p.format_bits.ref_ctr_offset
    if not f then
      return nil, "perf.uprobe: this kernel's uprobe PMU has no ref_ctr_offset", E.EOPNOTSUPP
    end
    local v, perr = pmus.pack(f, config, opts.ref_ctr_offset)
    if not v then error("perf.uprobe: ref_ctr_offset: " .. perr, 3) end
    config = v
  end

  -- a uprobe fires in user space only: excluding the kernel changes no count
  -- and lets a refusal say what is really missing (CAP_PERFMON)
  paths[core.addressof(path)] = path
  local attr = { type = p.type, config = config, uprobe_path = path,
    probe_offset = offset, sample_period = 1, exclude_kernel = true, exclude_hv = true }
  local target = options.split(opts, attr, OWN_KEYS)
  attr.name = attr.name or ("%s:%s:%s%s"):format(opts.ret and "uretprobe" or "uprobe",
    path:match("[^/]+$"), label, "")
  return attr, target
end

---------------------------------------------------------------------------
-- Inherited uprobes, through tracefs.
--
-- The uprobe PMU's config1 is a pointer to the path in this process: an
-- inherited event is copied into every child task, and the kernel reads
-- that address again in the child's memory (in a child that exec'd it is
-- garbage and its fork fails). So an inherited uprobe is made as perf
-- makes one: a probe written into tracefs's uprobe_events
-- ("p:GROUP/EVENT PATH:0xOFFSET", "r:..." for returns) and opened as that
-- tracepoint. The probe is removed once its event is closed: by perf.stat
-- when it is done, otherwise when the event is collected (or the next time
-- a probe is made).


local Probe = {}
Probe.__index = Probe

local function events_file()
  local dir, why, errno = tracepoint.path()
  if not dir then return nil, why, errno end
  return dir .. "/uprobe_events"
end

local function write_line(line)
  local file, why, errno = events_file()
  if not file then return nil, why, errno end
  -- "r+": no O_TRUNC (which would remove every probe), no seek to the end
  local f, msg, code = io.open(file, "r+")
  if not f then return nil, msg, code end
  f:setvbuf("no")
  local ok, werr, wcode = f:write(line .. "\n")     -- one write(2): one command
  f:close()
  if not ok then return nil, werr, wcode end
  return true
end

-- Removes the probe from tracefs; true once it is gone. Busy while an
-- event is still open on it.
function Probe:remove()
  if self.removed then return true end
  local ok = write_line(("-:%s/%s"):format(self.group, self.event))
  if ok then self.removed = true end
  return ok
end
Probe.__gc = Probe.remove

local live = setmetatable({}, { __mode = "k" })     -- event -> its probe
local made = 0

-- Removes the probes whose events are closed.
function M.sweep()
  for ev, probe in pairs(live) do
    if not pcall(ev.fileno, ev) then
      probe:remove()
      live[ev] = nil
    end
  end
end

local function is_uprobe_type(t)
  local p = pmus.find("uprobe")
  return p ~= nil and (t == p.type or t == "uprobe"), p
end

-- If `attr` is an inherited event of the uprobe PMU, the same probe made in
-- tracefs (its event named after the symbol in `name`, "uprobe:libc.so.6:getenv"):
-- a tracepoint attr and the probe (remove it if the event does
-- not open; perf.core's event is bound to it with M.bind). Otherwise attr
-- itself. nil, message, errno when tracefs refuses.
function M.inheritable(attr, name)
  if not attr.inherit then return attr end
  local yes, p = is_uprobe_type(attr.type)
  if not yes then return attr end
  local path = attr.uprobe_path
  if math.type(path) == "integer" or path == nil then path = paths[path or attr.config1] end
  local offset = attr.probe_offset or attr.config2
  if type(path) ~= "string" or math.type(offset) ~= "integer" then
    error("an inherited uprobe needs its path and offset: make it with perf.uprobe, "
      .. "or give uprobe_path (a string) and probe_offset", 0)
  end
  local ret = false
  local f = p.format_bits and p.format_bits.retprobe
  if f and math.type(attr.config) == "integer" then
    ret = pmus.pack(f, 0, 1) & attr.config ~= 0
  end
  M.sweep()
  made = made + 1
  local probe = setmetatable({ group = "perf_lua_" .. ((fs.read("/proc/self/stat") or ""):match("^%d+") or "0"),
    event = ("%s_%d"):format(((name or "probe"):match("[^:]+$") or "probe")
      :gsub("[^%w_]", "_"):gsub("^(%d)", "_%1"), made) }, Probe)
  probe.removed = true                     -- until it is made
  local ok, msg, errno = write_line(("%s:%s/%s %s:0x%x"):format(ret and "r" or "p",
    probe.group, probe.event, path, offset))
  if not ok then
    return nil, ("inherited uprobe: cannot write %s: %s"):format(events_file() or "uprobe_events",
      msg), errno
  end
  probe.removed = false
  local id
  id, msg, errno = tracepoint.id(probe.group, probe.event)
  if not id then
    probe:remove()
    return nil, "inherited uprobe: " .. msg, errno
  end
  local a = {}
  for k, v in pairs(attr) do a[k] = v end
  a.uprobe_path, a.probe_offset, a.config1, a.config2 = nil, nil, nil, nil
  a.type, a.config = 2, id
  return a, probe
end

-- The event opened on `probe`: the probe goes once the event is closed.
function M.bind(probe, ev)
  live[ev] = probe
end

--- Counts or samples the calls (or returns) of a function in a binary or
-- library, through the uprobe PMU (needs CAP_PERFMON or root).
--
-- A symbol is placed with the ELF symbol tables (`perf.elf`);
-- `"sym+0x10"` adds an offset. Hits are sampled one by one
-- (`sample_period = 1`) unless the attr says otherwise.
-- @string binary a path, or a name looked up among the files mapped into
-- this process (`"libc.so.6"`, `"libc"`), then in PATH
-- @param where a symbol name (string) or a file offset (integer)
-- @tparam[opt] table opts `ret` (probe returns), `ref_ctr_offset` (an
-- SDT semaphore), target fields and attr fields
-- @treturn[1] perf.core.event the event
-- @return[2] nil, message, errno when the binary or symbol is not found,
-- or the kernel refuses
-- @usage
-- local ev <close> = assert(perf.uprobe("libc.so.6", "getenv"))
-- ev:enable() os.getenv("HOME") ev:disable()
-- print(ev:read())                                 --> 1 ...
-- @function uprobe
function M.uprobe(binary, where, opts)
  local attr, target, errno = M.attr(binary, where, opts)
  if not attr then return nil, target, errno end
  return evbase.open(attr, target)
end

return M
