-- perf.list and perf.pmus on this machine and on a fake sysfs tree.

local perf = require "perf"
local H = require "helpers"
local list = require "perf.event.list"
local pmu = require "perf.event.pmu"

local sh = H.sh

local function names(l)
  local out = {}
  for i, e in ipairs(l) do out[i] = e.name end
  return out
end

local caps = perf.capabilities()

describe("perf.list", function()
  setup(function() list.forget() end)

  it("offers every kind, in perf list's order", function()
    local l = perf.list()
    local order, seen = {}, {}
    for _, e in ipairs(l) do
      assert.is_string(e.name)
      assert.is_string(e.description)
      assert.is_boolean(e.available)
      if not seen[e.kind] then seen[e.kind] = true; order[#order + 1] = e.kind end
    end
    assert.same({ "hardware", "software", "tool", "cache", "pmu", "raw", "breakpoint", "tracepoint" }, order)
  end)

  it("lists the 10 hardware, 12 software, 3 tool and 32 cache events", function()
    assert.equal(10, #perf.list("hardware"))
    assert.equal(15, #perf.list("sw"))               -- as perf list sw: the tool's too
    assert.equal(3, #perf.list("tool"))
    assert.equal(32, #perf.list("cache"))
  end)

  it("lists exactly the tracepoints tracefs has", function()
    if not caps.tracefs then return pending("no tracefs") end
    local n = tonumber(sh(("find %s/events -mindepth 3 -maxdepth 3 -name id | wc -l"):format(caps.tracefs)))
    assert.equal(n, #perf.list("tracepoint"))
  end)

  it("says what opens here", function()
    local by = {}
    for _, e in ipairs(perf.list()) do by[e.name] = e end
    assert.is_true(by["task-clock"].available)
    assert.is_true(by["context-switches"].available)
    assert.equal(caps.pmu, by["cpu-cycles"].available)
    if not caps.pmu then
      assert.equal("ENOENT", by["cpu-cycles"].why)
      assert.equal("ENOENT", by["L1-dcache-load-misses"].why)
    end
    assert.equal(caps.breakpoints, by["mem:<addr>[/len][:access]"].available)
    if by["sched:sched_switch"] then
      -- as root tracepoints open; paranoid users are refused
      local ev = perf.open "sched:sched_switch"
      assert.equal(ev ~= nil, by["sched:sched_switch"].available)
      if ev then ev:close() end
    end
  end)

  it("probes each event once and caches the answer", function()
    local calls = 0
    list.forget(function() calls = calls + 1 return true end)
    perf.list("sw")
    assert.equal(12, calls)
    perf.list("sw")
    perf.list("software")
    assert.equal(12, calls)
    list.forget()
  end)

  it("filters by kind, glob and text", function()
    assert.same({ "page-faults" }, names(perf.list("page-faults")))
    assert.same({ "alignment-faults", "emulation-faults", "major-faults", "minor-faults",
      "page-faults" }, names(perf.list("faults")))
    local cs = perf.list("cs")
    assert.equal("context-switches", cs[1].name)   -- found by its alias
    for i = 2, #cs do assert.matches("cs", cs[i].name) end
    assert.same({ "L1-icache-load-misses", "L1-icache-loads", "L1-icache-prefetch-misses",
      "L1-icache-prefetches" }, names(perf.list("L1-icache*")))
    if caps.tracefs then
      assert.same({ "sched:sched_switch" }, names(perf.list("sched:sched_switch")))
      local l = perf.list("sched:sched_wak*")
      assert.is_true(#l >= 2)
      for _, e in ipairs(l) do assert.matches("^sched:sched_wak", e.name) end
    end
    assert.same({}, names(perf.list("no-such-event-at-all")))
    assert.has_error(function() perf.list(5) end, "perf.list: pattern must be a string, not number")
  end)

  it("prints like perf list", function()
    local ours = tostring(perf.list("sw"))
    local have = sh("command -v perf") ~= ""
    if not have then return pending("perf is not installed") end
    local theirs = {}
    for line in sh("perf list sw"):gmatch("[^\n]+") do
      if line:match("%[Software event%]") or line:match("%[Tool event%]") then
        theirs[#theirs + 1] = line:gsub("%s+$", "")
      end
    end
    assert.equal(table.concat(theirs, "\n"), ours)
  end)

  it("names its entries and itself for the prompt", function()
    local l = perf.list "sw"
    assert.equal("perf.list", getmetatable(l).__name)
    assert.equal("perf.list.entry", getmetatable(l[1]).__name)
  end)

  it("says so when nothing matches", function()
    local l = perf.list "nosuchthing"
    assert.equal(0, #l)
    assert.equal('perf.list: no event matches "nosuchthing"', tostring(l))
  end)

  it("marks what does not open, with the reason #hardware", function()
    if H.needs_no_pmu(pending) then return end
    assert.equal("  cpu-cycles OR cycles                               [Hardware event] (not available here: ENOENT)",
      tostring(perf.list("cpu-cycles")[1]))
  end)
end)

describe("perf.list on a fake sysfs tree", function()
  setup(function()
    pmu.set_root("spec/fixtures/sysfs")
    list.forget(function(attr) return attr.type == 20, attr.type ~= 20 and "ENOENT" or nil end)
  end)
  teardown(function()
    pmu.set_root(nil)
    list.forget()
  end)

  it("lists PMU events with their unit and availability", function()
    local l = perf.list("pmu")
    local by = {}
    for _, e in ipairs(l) do by[e.name] = e end
    assert.equal(9, #l)
    assert.same({ name = "power/energy-pkg/", kind = "pmu", pmu = "power",
      description = "event=0x02 (Joules, scale 2.32831e-10)", available = true,
      scale = 2.3283064365386962890625e-10, unit = "Joules" },
      (function() local e = by["power/energy-pkg/"]; local t = {}
        for k, v in pairs(e) do t[k] = v end; return t end)())
    assert.is_false(by["cpu/cpu-cycles/"].available)
    assert.equal("cannot be parsed", by["cpu/ocr.demand/"].why)
  end)
end)

describe("perf.pmus", function()
  it("lists every PMU of /sys/bus/event_source/devices", function()
    local want = {}
    for name in sh("ls /sys/bus/event_source/devices"):gmatch("%S+") do want[#want + 1] = name end
    table.sort(want)
    local got = {}
    for i, p in ipairs(perf.pmus()) do
      got[i] = p.name
      local f = io.open("/sys/bus/event_source/devices/" .. p.name .. "/type")
      assert.equal(math.tointeger(f:read("n")), p.type)
      f:close()
    end
    assert.same(want, got)
  end)

  it("prints one line a PMU at the prompt", function()
    local p = perf.pmus()
    assert.equal("perf.pmus", getmetatable(p).__name)
    local lines = {}
    for line in tostring(p):gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.equal(("perf.pmus (%d)"):format(#p), lines[1])
    assert.equal(#p + 1, #lines)
    for i, e in ipairs(p) do
      assert.matches("^  " .. e.name:gsub("%p", "%%%0") .. " +type " .. e.type .. " ", lines[i + 1])
    end
    assert.matches("^  software +type 1 +0 format fields, 0 events$", tostring(p):match("\n  software[^\n]*"):sub(2))
  end)

  it("gives formats and events, in fresh tables", function()
    local by = {}
    for _, p in ipairs(perf.pmus()) do by[p.name] = p end
    assert.same({}, by.software.formats)
    if by.uprobe then assert.equal("config:0", by.uprobe.formats.retprobe) end
    if by.msr then
      assert.equal("event=0x00", by.msr.events.tsc)
      by.msr.events.tsc = "changed"
      local again
      for _, p in ipairs(perf.pmus()) do if p.name == "msr" then again = p end end
      assert.equal("event=0x00", again.events.tsc)
    end
  end)
end)
