-- perf.watch: hardware breakpoints with exact counts.

local perf = require "perf"
local H = require "helpers"

local PID = H.PID

local caps = perf.capabilities()
local needs_bp = caps.breakpoints and it or pending
local x86 = (io.open("/proc/sys/kernel/arch") or io.popen("uname -m")):read("l"):match("86") ~= nil

local count = H.count

describe("perf.watch", function()
  needs_bp("counts every call of a C function through an execute breakpoint", function()
    local ev <close> = assert(perf.watch("getenv"))
    assert.equal("getenv:x", ev:name())
    local attr = ev:attr()
    assert.same({ 5, 4, 8, perf.symbol("getenv") },
      { attr.type, attr.bp_type, attr.bp_len, attr.bp_addr })
    for _, n in ipairs { 1, 17, 250 } do
      assert.equal(n, count(ev, function()
        for _ = 1, n do os.getenv("PERF_WATCH_SPEC") end
      end))
    end
  end)

  needs_bp("counts each read of a Lua string's first byte", function()
    local s = "watched " .. tostring({})     -- a string of its own, not shared
    local ev <close> = assert(perf.watch(perf.addressof(s), { mode = "rw", len = 1 }))
    assert.equal(("mem:0x%x/1:rw"):format(perf.addressof(s)), ev:name())
    for _, n in ipairs { 1, 33, 400 } do
      assert.equal(n, count(ev, function()
        for _ = 1, n do local _ = s:byte(1) end
      end))
    end
    -- reading another byte does not touch the watched one
    assert.equal(0, count(ev, function() for _ = 1, 10 do local _ = s:byte(3) end end))
  end)

  needs_bp("watches a userdata's block and a write to an address", function()
    local f = io.tmpfile()
    -- the block of a file handle starts with its FILE *, read once per method
    local ev <close> = assert(perf.watch(f, { mode = "rw", len = 8 }))
    assert.equal(9, count(ev, function() for _ = 1, 9 do f:seek("cur") end end))
    -- the next word is the close function, written once when the file closes
    local w <close> = assert(perf.watch(perf.addressof(f) + 8, { mode = "w", len = 8 }))
    assert.equal(0, count(w, function() for _ = 1, 5 do f:seek("cur") end end))
    assert.equal(1, count(w, function() f:close() end))
  end)

  needs_bp("passes target and attr fields through", function()
    local ev <close> = assert(perf.watch("getenv", { pid = 0, cpu = -1,
      sample_type = { "ip", "tid" }, exclude_kernel = false, name = "calls" }))
    local attr = ev:attr()
    assert.equal("calls", ev:name())
    assert.equal(1, attr.sample_period)
    assert.is_nil(attr.exclude_kernel)
    assert.is_true(attr.exclude_hv)
    assert.equal(perf.core.PERF_SAMPLE_IP | perf.core.PERF_SAMPLE_TID, attr.sample_type)
  end)

  needs_bp("samples the ip of every hit", function()
    local ev <close> = assert(perf.watch("getenv", { sample_type = { "ip", "tid" } }))
    local rb <close> = assert(ev:mmap(8))
    assert.equal(11, count(ev, function() for _ = 1, 11 do os.getenv("X") end end))
    local n = 0
    for rec in rb:records() do
      n = n + 1
      assert.same({ "sample", perf.symbol("getenv"), PID }, { rec.type, rec.ip, rec.pid })
    end
    assert.equal(11, n)
  end)

  needs_bp("samples who touches a watched byte", function()
    local s = "sampled " .. tostring({})
    local ev <close> = assert(perf.watch(perf.addressof(s), { mode = "rw", len = 1,
      sample_type = { "ip" } }))
    local rb <close> = assert(ev:mmap(8))
    assert.equal(6, count(ev, function() for _ = 1, 6 do local _ = s:byte(1) end end))
    local ips = {}
    for rec in rb:records() do ips[#ips + 1] = rec.ip end
    assert.equal(6, #ips)
    -- one instruction (in string.byte) reads it every time
    for i = 2, 6 do assert.equal(ips[1], ips[i]) end
  end)

  needs_bp("says so when the debug registers run out", function()
    local s = string.rep("z", 64) .. tostring({})
    local base = perf.addressof(s)
    local open = {}
    for i = 1, caps.max_breakpoints do
      open[i] = assert(perf.watch(base + i - 1, { mode = "rw" }))
    end
    local msg, errno = H.fails(perf.watch(base + caps.max_breakpoints, { mode = "rw" }))
    assert.equal(28, errno)
    assert.matches("ENOSPC", msg)
    assert.matches("no free hardware breakpoint slot", msg)
    for _, ev in ipairs(open) do ev:close() end
    local again_ <close> = assert(perf.watch(base, { mode = "rw" }))
  end)

  it("returns nil, message, errno for an unknown symbol", function()
    local msg, errno = H.fails(perf.watch("no_such_function_here"))
    assert.equal(2, errno)
    assert.matches('perf.symbol "no_such_function_here": not found', msg)
  end)

  describe("refuses what the hardware cannot do", function()
    if x86 then
      it("read-only watchpoints on x86, suggesting rw", function()
        assert.has_error(function() perf.watch(0x1000, { mode = "r" }) end,
          'perf.watch: x86 cannot stop on reads alone; use mode "rw" (reads and writes) or "w"')
      end)
    end

    it("an unknown option, suggesting the nearest of its own, target and attr fields", function()
      assert.has_error(function() perf.watch(0x1000, { mdoe = "rw" }) end,
        "perf.watch: unknown option 'mdoe' (did you mean 'mode'?)")
      assert.has_error(function() perf.watch(0x1000, { mode = "rw", lenn = 4 }) end,
        "perf.watch: unknown option 'lenn' (did you mean 'len'?)")
      assert.has_error(function() perf.watch(0x1000, { mode = "rw", sample_perod = 4 }) end,
        "perf.watch: unknown option 'sample_perod' (did you mean 'sample_period'?)")
    end)

    it("execute breakpoints of another length", function()
      assert.has_error(function() perf.watch("getenv", { mode = "x", len = 4 }) end,
        ("perf.watch: execute breakpoints need len = %d (sizeof(long)), not 4"):format(string.packsize("l")))
    end)

    it("lengths other than 1, 2, 4, 8 and misaligned addresses", function()
      assert.has_error(function() perf.watch(0x1000, { len = 3 }) end,
        "perf.watch: len must be 1, 2, 4 or 8, not 3")
      assert.has_error(function() perf.watch(0x1002, { len = 4 }) end,
        "perf.watch: address 0x1002 is not aligned to len 4; use len 1 or the aligned address 0x1000")
    end)

    it("unknown modes and wrong argument types", function()
      assert.has_error(function() perf.watch(0x1000, { mode = "rx" }) end,
        'perf.watch: mode must be "r", "w", "rw" or "x", not "rx"')
      assert.has_error(function() perf.watch(1.5) end,
        "perf.watch: expected an address, a symbol name or a userdata, got float")
      assert.has_error(function() perf.watch(0x1000, "rw") end,
        "perf.watch: options must be a table, not string")
    end)

    it("raising at the caller's line", function()
      local ok, err = pcall(function() perf.watch(0x1000, { len = 3 }) end)
      assert.is_false(ok)
      assert.matches("^[^\n]*watch_spec.lua:%d+: perf.watch: len must be", err)
    end)
  end)
end)
