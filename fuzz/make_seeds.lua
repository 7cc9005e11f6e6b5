-- Writes fuzz/seeds/*.bin: real ring contents in the fuzz target's input
-- format (see fuzz/fuzz_decode.c), so fuzzing starts from well-formed
-- records. Run from the top directory as root: lua5.4 fuzz/make_seeds.lua
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local perf = require "perf"

local function tp_id(name)
  local f = assert(io.open("/sys/kernel/tracing/events/syscalls/" .. name .. "/id"))
  local id = math.tointeger(f:read("n"))
  f:close()
  return id
end

-- layout header: sample_type (4), read_format (1), branch_sample_type >> 16
-- (4), regs_user (8), regs_intr (8), id (1), sample_id_all (1)
local function layout(ev)
  local a = ev:attr()
  local function bits(v) return math.type(v) == "integer" and v or 0 end
  return string.pack("<I4BI4i8i8BB", bits(a.sample_type) & 0xffffffff,
    bits(a.read_format) & 0xff, (bits(a.branch_sample_type) >> 16) & 0xffffffff,
    bits(a.sample_regs_user), bits(a.sample_regs_intr), 0, a.sample_id_all and 1 or 0)
end

local function write(name, ev, bytes)
  -- ring of 2^(8 + shift) bytes; start at 0, span = all the bytes
  local shift = 0
  while (1 << (8 + shift)) < #bytes and shift < 8 do shift = shift + 1 end
  local f = assert(io.open("fuzz/seeds/" .. name .. ".bin", "wb"))
  f:write(string.pack("<B", 0), layout(ev), string.pack("<Bi8I3", shift, 0, #bytes), bytes)
  f:close()
end

local function capture(attr, work)
  local ev = assert(perf.open(attr))
  local rb = assert(ev:mmap(4))
  ev:enable()
  work()
  ev:disable()
  local bytes = rb:raw()
  return ev, bytes
end

local ev, bytes = capture({ type = "tracepoint", config = tp_id("sys_enter_openat"),
  sample_period = 1, sample_id_all = true,
  sample_type = { "identifier", "ip", "tid", "time", "addr", "id", "stream_id", "cpu",
    "period", "read", "callchain", "raw", "regs_user", "stack_user", "weight",
    "data_src", "transaction", "regs_intr", "phys_addr", "cgroup",
    "data_page_size", "code_page_size" },
  read_format = { "total_time_enabled", "total_time_running", "id", "lost" },
  sample_regs_user = 0xff01ff, sample_regs_intr = 0x3, sample_stack_user = 24 },
  function() for _ = 1, 3 do io.open("/dev/null"):close() end end)
write("samples", ev, bytes:sub(1, 4000))

ev, bytes = capture({ type = "software", config = 9, sample_id_all = true,
  mmap = true, mmap2 = true, comm = true, comm_exec = true, task = true,
  sample_type = { "tid", "time", "id", "cpu", "identifier" } },
  function()
    os.execute("exec /bin/true")
    local lib = os.tmpname() .. ".so"
    os.execute("cp perf/core.so " .. lib)
    package.loadlib(lib, "*")
    os.remove(lib)
  end)
write("tasks", ev, bytes:sub(1, 8000))
print("seeds written")
