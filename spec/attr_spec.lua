-- attr conversion: every field by its kernel name, checked byte for byte
-- against the installed <linux/perf_event.h> compiled here; names, ranges
-- and the errors misuse raises.
local perf = require "perf"
local core = perf.core

local U64, U32, U16, S32 = 0x0123456789abcdef, 0x89abcdef, 0xbeef, 0x7654321

-- field -> value to set (true for 1-bit flags); these exist in the 6.1 header
local header_fields = {
  type = U32, config = U64, sample_period = U64, sample_type = U64,
  read_format = U64, wakeup_events = U32, bp_type = U32, config1 = U64,
  config2 = U64, branch_sample_type = U64, sample_regs_user = U64,
  sample_stack_user = U32, clockid = S32, sample_regs_intr = U64,
  aux_watermark = U32, sample_max_stack = U16, aux_sample_size = U32,
  sig_data = U64, precise_ip = 3,
  bp_addr = U64, bp_len = U64, kprobe_func = U64, uprobe_path = U64,
  kprobe_addr = U64, probe_offset = U64, sample_freq = U64,
  wakeup_watermark = U32,
}
local flags = { "disabled", "inherit", "pinned", "exclusive", "exclude_user",
  "exclude_kernel", "exclude_hv", "exclude_idle", "mmap", "comm", "freq",
  "inherit_stat", "enable_on_exec", "task", "watermark", "mmap_data",
  "sample_id_all", "exclude_host", "exclude_guest", "exclude_callchain_kernel",
  "exclude_callchain_user", "mmap2", "comm_exec", "use_clockid",
  "context_switch", "write_backward", "namespaces", "ksymbol", "bpf_event",
  "aux_output", "cgroup", "text_poke", "build_id", "inherit_thread",
  "remove_on_exec", "sigtrap" }
for _, f in ipairs(flags) do header_fields[f] = true end

-- Compiles a program that sets each field through the installed header and
-- prints the attr bytes in hex, one line per field.
local function header_bytes()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local src = { "#include <linux/perf_event.h>", "#include <stdio.h>",
    "#include <string.h>",
    "static void dump(const char *n, const struct perf_event_attr *a) {",
    "  const unsigned char *p = (const void *)a; printf(\"%s \", n);",
    "  for (size_t i = 0; i < sizeof *a; i++) printf(\"%02x\", p[i]);",
    "  printf(\"\\n\"); }",
    "int main(void) { struct perf_event_attr a;" }
  for name, v in pairs(header_fields) do
    local value = v == true and "1" or ("0x%xULL"):format(v)
    src[#src + 1] = ("  memset(&a, 0, sizeof a); a.size = sizeof a; a.%s = %s; dump(%q, &a);")
      :format(name, value, name)
  end
  src[#src + 1] = "  printf(\"size %zu\\n\", sizeof a); return 0; }"
  local f = assert(io.open(dir .. "/attr.c", "w"))
  f:write(table.concat(src, "\n"))
  f:close()
  assert(os.execute(("cc -o %s/attr %s/attr.c"):format(dir, dir)))
  local out = {}
  local p = io.popen(dir .. "/attr")
  for line in p:lines() do
    local name, hex = line:match("^(%S+) (%S+)$")
    out[name] = hex
  end
  p:close()
  os.execute("rm -rf " .. dir)
  return out
end

local function hex(s)
  return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

describe("attr layout", function()
  it("matches the installed kernel header for every field it has", function()
    local want = header_bytes()
    local size = math.tointeger(tonumber(want.size))
    assert.is_true(size >= 64)
    local checked = 0
    for name, v in pairs(header_fields) do
      local t = { size = size, [name] = v }
      -- fields that imply a flag: the header program does not set it
      if name == "sample_freq" then t.freq = false end
      if name == "wakeup_watermark" then t.watermark = false end
      if name == "clockid" then t.use_clockid = false end
      local got = hex(core.attr_bytes(t):sub(1, size))
      assert.are.equal(want[name], got, name)
      checked = checked + 1
    end
    assert.are.equal(#flags + 27, checked)
  end)

  it("places the fields newer than the header where Linux 6.18 has them", function()
    local b = core.attr_bytes { config3 = U64 }
    assert.are.equal(136, #b)
    assert.are.equal(U64, (string.unpack("<i8", b, 129)))
    b = core.attr_bytes { aux_start_paused = true, aux_resume = true }
    assert.are.equal(5, (string.unpack("<I4", b, 117)))
    b = core.attr_bytes { aux_action = 2 }
    assert.are.equal(2, (string.unpack("<I4", b, 117)))
  end)

  it("lists every field in the kernel's order", function()
    local fields = core.attr_fields()
    assert.are.equal("type", fields[1])
    assert.are.equal("config3", fields[#fields])
    local seen = {}
    for _, f in ipairs(fields) do seen[f] = true end
    for name in pairs(header_fields) do assert.is_true(seen[name], name) end
  end)
end)

describe("attr conversion", function()
  it("takes bit-sets as name lists, single names or integers", function()
    local a = core.attr { sample_type = { "ip", "tid", "time", "weight_struct" } }
    assert.are.equal(core.PERF_SAMPLE_IP | core.PERF_SAMPLE_TID | core.PERF_SAMPLE_TIME
      | core.PERF_SAMPLE_WEIGHT_STRUCT, a.sample_type)
    assert.are.equal(core.PERF_FORMAT_LOST, core.attr { read_format = "lost" }.read_format)
    assert.are.equal(0x30, core.attr { branch_sample_type = 0x30 }.branch_sample_type)
    assert.are.equal(core.PERF_SAMPLE_BRANCH_COUNTERS | core.PERF_SAMPLE_BRANCH_USER,
      core.attr { branch_sample_type = { "counters", "user" } }.branch_sample_type)
  end)

  it("lists the names of a field in the kernel's order, each a key to its value", function()
    local st = core.attr_names("sample_type")
    assert.is_true(#st >= 25)
    for i, name in ipairs(st) do          -- PERF_SAMPLE_* are bits 0, 1, 2, ...
      assert.equal(1 << (i - 1), st[name], name)
      local const = core["PERF_SAMPLE_" .. name:upper()]
      if const then assert.equal(const, st[name], name) end
    end
    local rf = core.attr_names("read_format")
    assert.same({ "total_time_enabled", "total_time_running", "id", "group", "lost" },
      { table.unpack(rf) })
    assert.equal(core.PERF_FORMAT_GROUP, rf.group)
    assert.equal(core.PERF_TYPE_BREAKPOINT, core.attr_names("type").breakpoint)
    assert.has_error(function() core.attr_names("config") end, "attr field 'config' takes no names")
    assert.has_error(function() core.attr_names("sampel_type") end,
      "unknown attr field 'sampel_type' (did you mean 'sample_type'?)")
  end)

  it("converts one field's value as open does", function()
    for _, c in ipairs {
      { "read_format", { "id", "group" } }, { "read_format", "lost" }, { "read_format", 7 },
      { "sample_type", { "ip", "tid", "callchain" } }, { "bp_type", "rw" }, { "bp_type", "x" },
      { "clockid", "monotonic_raw" }, { "branch_sample_type", { "any_call", "user" } },
      { "type", "tracepoint" }, { "type", "msr" }, { "sample_period", 4000 },
    } do
      assert.equal(core.attr({ [c[1]] = c[2] })[c[1]], core.attr_value(c[1], c[2]))
    end
    assert.has_error(function() core.attr_value("read_format", { "grup" }) end,
      "attr field 'read_format': unknown name 'grup' (did you mean 'group'?)")
    assert.has_error(function() core.attr_value("bp_len", "eight") end)
  end)

  it("takes type, bp_type and clockid by name", function()
    assert.are.equal(1, core.attr { type = "software" }.type)
    assert.are.equal(3, core.attr { type = "hw_cache" }.type)
    local function pmu_type(name)
      local f = assert(io.open("/sys/bus/event_source/devices/" .. name .. "/type"))
      local n = f:read("n")
      f:close()
      return n
    end
    local tp = pmu_type("tracepoint")
    assert.are.equal(tp, core.attr { type = "tracepoint" }.type)
    local msr = pmu_type("msr")
    assert.are.equal(msr, core.attr { type = "msr" }.type)
    local bp = core.attr { type = "breakpoint", bp_type = "rw", bp_addr = 4096, bp_len = 8 }
    assert.are.same({ 3, 4096, 8 }, { bp.bp_type, bp.bp_addr, bp.bp_len })
    assert.is_nil(bp.config1)
    local c = core.attr { clockid = "monotonic_raw" }
    assert.are.equal(4, c.clockid)
    assert.is_true(c.use_clockid)
  end)

  it("sets freq with sample_freq and watermark with wakeup_watermark", function()
    local a = core.attr { sample_freq = 4000 }
    assert.are.equal(4000, a.sample_freq)
    assert.is_true(a.freq)
    assert.is_nil(a.sample_period)
    local w = core.attr { wakeup_watermark = 4096 }
    assert.is_true(w.watermark)
    assert.are.equal(4096, w.wakeup_watermark)
    assert.is_nil(core.attr { sample_freq = 10, freq = false }.freq)
  end)

  it("reads back what perf.open opened", function()
    local ev <close> = assert(perf.open { type = "software", config = 1,
      sample_period = 1000, sample_type = { "ip", "tid" }, exclude_kernel = true,
      clockid = "monotonic", config3 = 0 })
    local a = ev:attr()
    assert.are.same({ 1, 1, 1000, 3, 136 }, { a.type, a.config, a.sample_period, a.sample_type, a.size })
    assert.is_true(a.exclude_kernel)
    assert.is_true(a.disabled)
    assert.is_true(a.use_clockid)
    assert.are.equal(1, a.clockid)
  end)
end)

describe("attr misuse raises", function()
  local function raises(t, pattern)
    local ok, err = pcall(core.attr, t)
    assert.is_false(ok)
    assert.matches(pattern, err)
  end

  it("names the nearest valid key for an unknown one", function()
    raises({ sample_perod = 1 }, "unknown attr field 'sample_perod' %(did you mean 'sample_period'%?%)")
    raises({ exclude_kernal = true }, "did you mean 'exclude_kernel'")
    raises({ zzzzzzzzzzzz = 1 }, "unknown attr field 'zzzzzzzzzzzz'$")
  end)

  it("names the nearest valid name in bit-sets and enums", function()
    raises({ sample_type = { "ip", "tdi" } }, "sample_type': unknown name 'tdi' %(did you mean 'id' or 'tid'%?%)")
    raises({ read_format = "groupp" }, "did you mean 'group'")
    raises({ type = "softwar" }, "did you mean 'software'")
    raises({ bp_type = "rx" }, "bp_type': unknown name 'rx'")
    raises({ clockid = "monotonik" }, "did you mean 'monotonic'")
  end)

  it("refuses wrong types", function()
    raises({ sample_period = "often" }, "sample_period': integer expected, got string")
    raises({ sample_period = 1.5 }, "number has no integer representation")
    raises({ disabled = "yes" }, "disabled': integer expected, got string")
    raises({ config = "cycles" }, "names are resolved by perf.open")
    raises({ 5 }, "positional")
  end)

  it("refuses out-of-range values", function()
    raises({ wakeup_events = 1 << 32 }, "out of range")
    raises({ sample_max_stack = 65536 }, "out of range")
    raises({ clockid = 1 << 31 }, "out of range")
    raises({ precise_ip = 4 }, "2%-bit value out of range")
    raises({ disabled = 2 }, "1%-bit value out of range")
    raises({ type = -1 }, "out of range")
  end)

  it("refuses sample_period with sample_freq", function()
    raises({ sample_period = 1, sample_freq = 1 }, "give one")
  end)

  it("refuses unknown target keys", function()
    local ok, err = pcall(perf.open, { type = "software", config = 1 }, { cpus = 0 })
    assert.is_false(ok)
    assert.matches("unknown target field 'cpus' %(did you mean 'cpu'%?%)", err)
  end)
end)

describe("register masks", function()
  local x86 = io.popen("uname -m"):read("l") == "x86_64"

  it("take register names as perf's --user-regs does, and export the constants", function()
    if not x86 then return pending("register names are x86's") end
    local c = perf.core
    assert.same({ 0, 8, 9, 16, 23, 32, 62 }, { c.PERF_REG_X86_AX, c.PERF_REG_X86_IP,
      c.PERF_REG_X86_FLAGS, c.PERF_REG_X86_R8, c.PERF_REG_X86_R15, c.PERF_REG_X86_XMM0,
      c.PERF_REG_X86_XMM15 })
    local ev <close> = assert(perf.open { "syscalls:sys_enter_openat", sample_type = { "regs_user" },
      sample_regs_user = { "ip", "sp", "bp", "r15" }, sample_regs_intr = "ax" })
    assert.equal(1 << c.PERF_REG_X86_IP | 1 << c.PERF_REG_X86_SP | 1 << c.PERF_REG_X86_BP
      | 1 << c.PERF_REG_X86_R15, ev:attr().sample_regs_user)
    assert.equal(1, ev:attr().sample_regs_intr)
    -- the samples name the same registers
    local rb <close> = assert(ev:mmap(1))
    assert(ev:enable())
    assert(io.open("/dev/null")):close()
    assert(ev:disable())
    local names = {}
    for rec in rb:records() do
      for k in pairs(rec.regs_user) do names[#names + 1] = k end
    end
    table.sort(names)
    assert.same({ "abi", "bp", "ip", "r15", "sp" }, names)
    local ok, err = pcall(perf.open, { "task-clock", sample_regs_user = { "ipp" } })
    assert.is_false(ok)
    assert.matches("attr field 'sample_regs_user': unknown register 'ipp' %(did you mean 'ip'%?%)", err)
  end)
end)
