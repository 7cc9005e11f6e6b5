-- perf.base: the modules under the front share it and never require the
-- front itself, so loading any of them loads nothing above it.
local H = require "helpers"
local parse = require "perf.event.parse"
local pmu = require "perf.event.pmu"

-- The modules below the front: every lua/perf/*.lua but init.lua, and
-- those of the layer folders (the commands under lua/perf/cli/ stand
-- above it).
local function lower_modules()
  local core = require "perf.core"
  local out = {}
  for _, file in ipairs(core.listdir("lua/perf")) do
    local name = file:match("^(.+)%.lua$")
    if name and name ~= "init" then out[#out + 1] = "perf." .. name end
    if not file:find(".", 1, true) and file ~= "cli" then
      for _, f in ipairs(core.listdir("lua/perf/" .. file) or {}) do
        local m = f:match("^(.+)%.lua$")
        if m then out[#out + 1] = "perf." .. file .. "." .. m end
      end
    end
  end
  table.sort(out)
  return out
end

describe("perf.base", function()
  local base = require "perf.event.base"

  it("opens what perf.open opens, with the same defaults", function()
    local ev <close> = assert(base.open "syscalls:sys_enter_openat")
    assert.are.equal("syscalls:sys_enter_openat", ev:name())
    assert.is_true(ev:attr().disabled)
    assert.are.equal(3, H.count(ev, function()
      for _ = 1, 3 do io.open("/dev/null"):close() end
    end))
    assert.is_true(base.is_event(ev))
    assert.is_false(base.is_event({}))
    assert.are.equal("x", base.strip_position("lua/perf/group.lua:12: x"))
    assert.are.equal("x", base.strip_position("lua/perf/counting/group.lua:12: x"))
  end)

  it("is what the front exports", function()
    local perf = require "perf"
    assert.are.equal(base.open, perf.open)
    assert.are.equal(base.attr, perf.attr)
    assert.are.equal(base.is_event, perf.is_event)
    assert.are.equal(base.strip_position, perf.strip_position)
  end)

  it("no module below the front requires it", function()
    local mods = lower_modules()
    assert.is_true(#mods > 20)
    for _, m in ipairs(mods) do
      local f = assert(io.open("lua/" .. m:gsub("%.", "/") .. ".lua"))
      local src = f:read("a")
      f:close()
      assert.is_nil(src:match("require%s*%(?%s*[\"']perf[\"']"), m .. " requires \"perf\"")
    end
    -- and at run time: with the front made unloadable, the lower modules
    -- still load and count
    local out = H.run_lua([[
      package.preload.perf = function() error("the front was loaded") end
      for _, m in ipairs { ]] .. ("%q, "):rep(#mods):sub(1, -3):format(table.unpack(mods)) .. [[ } do
        require(m)
      end
      local g = assert(require("perf.counting.group").new { "syscalls:sys_enter_openat", "syscalls:sys_enter_close" })
      g:enable() io.open("/dev/null"):close() g:disable()
      local t = g:read()
      local r = assert(require("perf.counting.stat").stat({ "true" }, "syscalls:sys_enter_openat"))
      local m = require("perf.counting.measure").measure({ "syscalls:sys_enter_close" }, function()
        io.open("/dev/null"):close()
      end)
      local set = assert(require("perf.cpus").open("syscalls:sys_enter_openat"))
      set:close()
      print(t[1], t[2], r.status, m[1])
    ]])
    assert.are.equal("1\t1\t0\t1\n", out)
  end)
end)

describe("perf.open with every form", function()
  local perf = require "perf"
  local caps = perf.capabilities()
  local opens = {
    "task-clock", "cpu-clock:u", "cs", "faults:k", "migrations", "minor-faults",
    "major-faults", "alignment-faults", "emulation-faults", "dummy", "cgroup-switches",
    "1:1", "software/config=3/", "task-clock/period=1000,name=tc/u",
  }
  if caps.tracefs then
    opens[#opens + 1] = "sched:sched_switch"
    opens[#opens + 1] = "syscalls:sys_enter_openat:u"
    opens[#opens + 1] = "tracepoint/config=" .. H.tracepoint_id("sched", "sched_switch") .. "/"
  end
  if pmu.find("msr") then opens[#opens + 1] = "msr/tsc/" end
  if caps.breakpoints then
    local s = "bp target"
    opens[#opens + 1] = ("mem:0x%x/1:rw"):format(perf.addressof(s))
    opens[#opens + 1] = ("mem:0x%x:x"):format(perf.symbol("getenv"))
  end

  for _, ev in ipairs(opens) do
    it("opens " .. ev, function()
      local e <close> = assert(perf.open(ev))
      assert.equal(parse.parse(ev).name, e:name())
    end)
  end

  local hardware = { "cycles", "instructions:u", "L1-dcache-load-misses", "LLC-prefetches",
    "r1a8", "4:0xc0", "cycles/period=100000/" }
  for _, ev in ipairs(hardware) do
    it("fails to open " .. ev .. " without a hardware PMU #hardware", function()
      if H.needs_no_pmu(pending) then return end
      local _, msg, errno = perf.open(ev)
      assert.equal(2, errno)
      assert.truthy(msg:find(('perf.open "%s": No such file or directory (ENOENT)'):format(ev), 1, true), msg)
    end)
  end
end)
