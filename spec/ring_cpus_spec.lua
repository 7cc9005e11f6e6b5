-- perf.cpus: one event per CPU, merged rings; and argument checks of the
-- ring-side calls.
local perf = require "perf"
local cpus = require "perf.cpus"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

describe("perf.cpus", function()
  it("parses CPU lists and knows the online CPUs", function()
    assert.same({ 0, 1, 2, 3, 5, 7, 8 }, cpus.parse_list("0-3,5,7-8\n"))
    assert.has_error(function() cpus.parse_list("0-x") end)
    local f = assert(io.open("/sys/devices/system/cpu/online"))
    assert.same(cpus.parse_list(f:read("l")), cpus.online())
    f:close()
    assert.equal(cpus, perf.cpus)
    assert.equal(perf.capabilities().cpus, #cpus.online())
  end)

  it("opens one event per CPU and merges their samples by time", function()
    local set = assert(cpus.open { type = "tracepoint", config = OPENAT, sample_period = 1,
                                   sample_type = { "tid", "time", "cpu", "identifier" } })
    assert.equal(#cpus.online(), #set)
    assert.matches("^perf%.cpus %(%d+ CPUs, 0 rings%)", tostring(set))
    assert.has_error(function() set:records() end, "perf.cpus: no rings yet: call set:mmap() first")
    assert(set:mmap(4))
    set:enable()
    for _ = 1, 40 do io.open("/dev/null"):close() end
    set:disable()
    local value = set:read()
    assert.equal(40, value)
    assert.equal(40 * 40, set:pending())            -- 40-byte samples
    local n, last = 0, 0
    for time, cpu in set:samples("time", "cpu") do
      n = n + 1
      assert.is_true(time >= last)
      assert.is_true(cpu >= 0 and cpu < #set)
      last = time
    end
    assert.equal(40, n)
    assert.same({ 0, 0, 0 }, { set:lost() })
    assert.same({ false }, { set:poll(0) })
    assert.is_true(set:close())
    assert.is_true(set:close())
  end)

  it("refuses a single cpu in the target and reports failures per CPU", function()
    assert.has_error(function() cpus.open({ type = "software", config = 1 }, { cpu = 0 }) end)
    local set, msg, errno = cpus.open({ type = "software", config = 1 }, { cpus = { 4095 } })
    assert.is_nil(set)
    assert.matches("%(on CPU 4095%)$", msg)
    assert.equal("integer", math.type(errno))
  end)
end)

describe("argument checks", function()
  it("perf.core.poll and merge take lists of rings", function()
    assert.has_error(function() perf.core.poll({}) end)
    assert.has_error(function() perf.core.poll({ 1 }) end)
    assert.has_error(function() perf.core.merge({ {} }) end)
    local s = perf.core.stream("", { sample_type = { "ip" } })
    assert.has_error(function() perf.core.poll({ s }, -2) end)
    assert.has_error(function() perf.core.merge({ s }, "ip", 5) end)
  end)

  it("layout tables name their fields", function()
    local ok, err = pcall(perf.core.decode, "", { sample_typ = { "ip" } })
    assert.is_false(ok)
    assert.matches("unknown layout field 'sample_typ' %(did you mean 'sample_type'%?%)", err)
    assert.has_error(function() perf.core.decode("", { sample_type = { "nope" } }) end)
    assert.has_error(function() perf.core.decode("", 42) end)
  end)

  it("the iterator says what it is", function()
    local s = perf.core.stream("", { sample_type = { "ip" } })
    local _, it = s:records()
    assert.equal("perf.ring.iter records (open)", tostring(it))
    for _ in s:records() do end
  end)
end)

describe("bin/perf-lua record", function()
  it("profiles a command and names its threads and DSOs", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 3 -- sh -c 'head -c 20000000 /dev/urandom | gzip -1 > /dev/null' 2>&1")
    local out = p:read("a")
    p:close()
    local samples, lost = out:match("^(%d+) samples of cpu%-clock at 999 Hz on %d+ CPUs over [%d.]+ s, (%d+) lost\n")
    assert.truthy(samples, out)
    assert.is_true(tonumber(samples) > 0, out)
    assert.equal("0", lost)
    assert.matches("by command pid/tid:\n%s+[%d.]+%%%s+%d+%s+gzip %d+/%d+\n", out)
    assert.matches("by DSO:\n", out)
    assert.matches("by symbol:\n", out)
    assert.matches("%d+%s+gzip%s+%[%.%] 0x%x+\n", out)     -- gzip is stripped: offsets
  end)

  it("names symbols: the kernel's from kallsyms, a file's from its symbol table", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 5 -- env -u LD_PRELOAD dd if=/dev/zero of=/dev/null bs=1M count=2000 2>&1")
    local out = p:read("a")
    p:close()
    local ks = assert(require("perf.kallsyms").load())
    local named = 0
    for name in out:gmatch("%[kernel%]%s+%[k%] ([%w_.]+)\n") do
      assert.is_number(ks:address(name), name)
      named = named + 1
    end
    assert.is_true(named >= 1, out)
    -- with no command, its own Lua workload: table.sort in the interpreter
    p = io.popen(H.example .. " bin/perf-lua record -n 30")
    out = p:read("a")
    p:close()
    assert.matches("by symbol:\n", out)
    assert.matches("%d+%s+lua5%.4%s+%[%.%] lua_geti\n", out)
  end)

  it("samples the whole system with -a while the command runs", function()
    local p = io.popen(H.example .. " bin/perf-lua record -a -n 20 -- env -u LD_PRELOAD sh -c "
      .. "'sleep 0.2; head -c 5000000 /dev/urandom | gzip -1 >/dev/null' 2>&1")
    local out = p:read("a")
    p:close()
    local samples = out:match("^(%d+) samples of cpu%-clock at 999 Hz on %d+ CPUs")
    assert.truthy(samples, out)
    assert.matches("%d+%s+swapper 0/0\n", out)     -- the idle CPUs, as perf names them
    assert.matches("%d+%s+gzip %d+/%d+\n", out)
    p = io.popen(H.example .. " bin/perf-lua record -a 2>&1")
    out = p:read("a")
    local ok, how, code = p:close()
    assert.same({ false, "exit", 129 }, { ok or false, how, code })
    assert.matches("%-a samples the whole system while a command runs", out)
  end)

  it("leaves the command's output alone and says when it cannot run", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 1 -- echo hello 2>/dev/null")
    local out = p:read("a")
    p:close()
    assert.matches("^hello\n%d+ samples of cpu%-clock", out)
    p = io.popen(H.example .. " bin/perf-lua record -- /no/such/program 2>&1")
    out = p:read("a")
    local ok, how, code = p:close()
    assert.same({ false, "exit", 255 }, { ok or false, how, code })      -- perf record's
    assert.equal('cannot run "/no/such/program": No such file or directory (ENOENT); no such file\n', out)
  end)
end)
