-- What the library gives at the Lua prompt: exactly the results of a call
-- (no trailing nils to print), and the modules the README reaches through
-- `perf`.
local perf = require "perf"

local function count(...) return select("#", ...) end

describe("a successful call", function()
  it("returns exactly its results", function()
    assert.equal(1, count(perf.open "task-clock"))
    assert.equal(1, count(perf.open({ "task-clock" }, { pid = 0 })))
    assert.equal(1, count(perf.group { "task-clock", "page-faults" }))
    assert.equal(1, count(perf.stat({ "true" }, { "task-clock" })))
    assert.equal(1, count(perf.measure({ "task-clock" }, function() end)))
    assert.equal(2, count(perf.measure({ "task-clock" }, function() return "r" end)))
    assert.equal(1, count(perf.uprobe("libc.so.6", "getenv")))
    local s = "watched"
    assert.equal(1, count(perf.watch(perf.addressof(s), { mode = "rw", len = 1 })))
    assert.equal(1, count(perf.tracepoint "sched:sched_switch"))
    local ev <close> = assert(perf.open "task-clock")
    assert.equal(1, count(ev:enable()))
  end)

  it("and a failure its three values", function()
    assert.equal(3, count(perf.open { type = "software", config = 999 }))
    assert.equal(3, count(perf.group { "task-clock", { type = "software", config = 999 } }))
  end)
end)

describe("perf", function()
  it("reaches perf.elf", function()
    assert.equal(require "perf.elf", perf.elf)
    local e = assert(perf.elf.open("/proc/self/exe"))
    assert.is_table(e)
  end)
end)

describe("plain result tables", function()
  local function shown(t, name)
    assert.equal(name, getmetatable(t).__name)
    local s = tostring(t)
    assert.equal(name .. " {", s:sub(1, #name + 2))
    return s
  end

  it("print readably and stay ordinary tables", function()
    local a = perf.parse "page-faults:u"
    assert.equal('perf.attr { config = 2, exclude_hv = true, exclude_kernel = true, '
      .. 'name = "page-faults:u", type = 1 (software) }', shown(a, "perf.attr"))
    local n = 0
    for _ in pairs(a) do n = n + 1 end
    assert.equal(5, n)                              -- no hidden fields
    assert.equal(1, a.type)
    local ev <close> = assert(perf.open(a))          -- still a spec perf.open takes
    assert.matches("read_format = %d+ %(total_time_enabled|total_time_running|id",
      shown(ev:attr(), "perf.attr"))
    local g <close> = assert(perf.group { "task-clock", "page-faults" })
    assert.matches('%["page%-faults"%] = %d+', shown(g:read(), "perf.read"))
    local mine = {}
    assert.equal(mine, g:read(mine))
    assert.is_nil(getmetatable(mine))               -- a table given is left alone
    shown(perf.measure({ "task-clock" }, function() end), "perf.measure")
    shown(assert(perf.stat({ "true" }, { "task-clock" })), "perf.stat")
    assert.matches("paranoid = %d", shown(perf.capabilities(), "perf.capabilities"))
    shown(perf.pmus()[1], "perf.pmu")
    local tp <close> = assert(perf.open { "syscalls:sys_enter_openat", sample_type = { "tid", "raw" } })
    local rb <close> = assert(tp:mmap(1))
    assert(tp:enable())
    assert(io.open("/dev/null")):close()
    assert(tp:disable())
    local recs = {}
    for rec in rb:records() do recs[#recs + 1] = rec end
    assert.equal(1, #recs)
    assert.matches('^perf.record { cpumode = "user", misc = %d+, pid = %d+, raw = <%d+ bytes>, '
      .. 'tid = %d+, type = "sample" }$', shown(recs[1], "perf.record"))
    assert.matches("records = 1", shown(rb:stats(), "perf.ring.stats"))
    shown(tp:userpage(), "perf.userpage")
  end)

  it("count the entries of a nested table", function()
    assert.equal("t { {1 entry}, {2 entries} }",
      tostring(perf.core.show({ { a = 1 }, { a = 1, b = 2 } }, "t")))
  end)
end)
