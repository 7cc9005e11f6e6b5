-- csrc/consts.c: perf.core's constants under their C names, compared with
-- the installed uapi headers, parsed at test time (spec/uapi.lua).
local core = require "perf.core"
local uapi = require "uapi"

local HEADERS = { uapi.PERF_EVENT_H, uapi.HW_BREAKPOINT_H }

local header = uapi.constants(HEADERS)

describe("perf.core constants", function()
  it("are the values the uapi headers give, for every name the headers define", function()
    local compared, newer = 0, {}
    for name, value in pairs(core) do
      if type(name) == "string" and (name:match("^PERF_") or name:match("^HW_BREAKPOINT_"))
         and not name:match("^PERF_REG_") then
        if header[name] ~= nil then
          assert.equal(header[name], value, name)
          compared = compared + 1
        else
          newer[#newer + 1] = name
        end
      end
    end
    -- names the installed header (Linux 6.1) lacks come from csrc/perf_uapi.h
    table.sort(newer)
    for _, name in ipairs(newer) do
      assert.matches("^PERF_", name)
    end
    assert.is_true(#newer < 15, "few names should be newer than the header: " .. table.concat(newer, " "))
    assert.is_true(compared > 300, compared .. " compared")
  end)

  it("cover each family of the header: a sample, each compared", function()
    local sample = {
      "PERF_TYPE_SOFTWARE", "PERF_COUNT_SW_DUMMY", "PERF_COUNT_HW_CACHE_RESULT_MISS",
      "PERF_SAMPLE_IP", "PERF_SAMPLE_IDENTIFIER", "PERF_FORMAT_LOST", "PERF_SAMPLE_BRANCH_CALL",
      "PERF_EVENT_IOC_ENABLE", "PERF_EVENT_IOC_ID", "PERF_EVENT_IOC_MODIFY_ATTRIBUTES",
      "PERF_EVENT_IOC_QUERY_BPF", "PERF_FLAG_FD_CLOEXEC", "PERF_RECORD_MMAP2",
      "PERF_RECORD_MISC_EXACT_IP", "PERF_CONTEXT_USER", "PERF_CONTEXT_MAX",
      "PERF_SAMPLE_BRANCH_PLM_ALL", "PERF_MEM_LVLNUM_RAM", "PERF_TXN_ABORT_MASK",
      "PERF_ATTR_SIZE_VER5", "HW_BREAKPOINT_RW", "HW_BREAKPOINT_LEN_8",
    }
    for _, name in ipairs(sample) do
      assert.equal("integer", math.type(header[name]), name .. " parsed from the header")
      assert.equal(header[name], core[name], name)
    end
    -- spot checks of the parser itself: values the kernel's ABI fixes
    assert.equal(9, header.PERF_COUNT_SW_DUMMY)                  -- implicit enum value
    assert.equal(-32, header.PERF_CONTEXT_HV)                    -- (__u64)-32
    assert.equal(0x2400, header.PERF_EVENT_IOC_ENABLE)           -- _IO('$', 0)
    assert.equal(0x80082407, header.PERF_EVENT_IOC_ID)           -- _IOR('$', 7, __u64 *)
  end)

  it("name the sample_regs bits as asm/perf_regs.h does, each register", function()
    local regs = uapi.constants { uapi.PERF_REGS_H }
    local want, got = {}, {}
    for name, value in pairs(regs) do
      if name:match("^PERF_REG_X86_") and not name:match("_MAX$") then want[name] = value end
    end
    for name, value in pairs(core) do
      if type(name) == "string" and name:match("^PERF_REG_X86_") then got[name] = value end
    end
    assert.equal(16 + 24, (function() local n = 0 for _ in pairs(want) do n = n + 1 end return n end)())
    assert.same(want, got)
  end)

  it("are all Lua integers, never floats", function()
    for name, value in pairs(core) do
      if type(name) == "string" and name:match("^PERF_[%u%d_]+$") then
        assert.equal("integer", math.type(value), name)
      end
    end
  end)
end)

describe("perf.core constants, by value and by name", function()
  it("carry the kernel's values, including those newer than the header", function()
    local c = core
    assert.are.same({ 0, 1, 2, 3, 4, 5 }, { c.PERF_TYPE_HARDWARE, c.PERF_TYPE_SOFTWARE,
      c.PERF_TYPE_TRACEPOINT, c.PERF_TYPE_HW_CACHE, c.PERF_TYPE_RAW, c.PERF_TYPE_BREAKPOINT })
    assert.are.equal(1 << 24, c.PERF_SAMPLE_WEIGHT_STRUCT)
    assert.are.equal(1 << 4, c.PERF_FORMAT_LOST)
    assert.are.equal(21, c.PERF_RECORD_AUX_OUTPUT_HW_ID)
    assert.are.equal(11, c.PERF_COUNT_SW_CGROUP_SWITCHES)
    assert.are.equal(0x2400, c.PERF_EVENT_IOC_ENABLE)
    assert.are.equal(0x2401, c.PERF_EVENT_IOC_DISABLE)
    assert.are.equal(0x40082404, c.PERF_EVENT_IOC_PERIOD)
    assert.are.equal(0x80082407, c.PERF_EVENT_IOC_ID)
    assert.are.equal(1, c.PERF_IOC_FLAG_GROUP)
    assert.are.equal(8, c.PERF_FLAG_FD_CLOEXEC)
    assert.are.equal(-128, c.PERF_CONTEXT_KERNEL)
    assert.are.equal(136, c.PERF_ATTR_SIZE_VER8)
  end)

  it("name every constant of the installed linux/perf_event.h", function()
    local c, names = core, {}
    for line in io.lines("/usr/include/linux/perf_event.h") do
      local n = line:match("^%s*(PERF_[%w_]+)%s*=") or line:match("^%s*(PERF_[%w_]+),")
        or line:match("^#define%s+(PERF_[%w_]+)%s")
      if n then names[#names + 1] = n end
    end
    assert.is_true(#names > 300)
    local missing = {}
    for _, n in ipairs(names) do
      if math.type(c[n]) ~= "integer" then missing[#missing + 1] = n end
    end
    assert.same({}, missing)
    assert.same({ 1, 1, 7, 7, 0x0d, 32, 1 << 24 }, { c.PERF_AUX_FLAG_TRUNCATED,
      c.PERF_BPF_EVENT_PROG_LOAD, c.PERF_BR_SYSCALL, c.PERF_SAMPLE_BRANCH_PLM_ALL,
      c.PERF_MEM_LVLNUM_RAM, c.PERF_TXN_ABORT_SHIFT, c.PERF_SAMPLE_WEIGHT_STRUCT })
  end)
end)
