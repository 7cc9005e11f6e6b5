-- csrc/event_names.c: the generic events under perf's names (the one home
-- of those names), compared with what the perf tool lists and the attr it
-- builds for each name; the names ev:modify_attributes resolves; the name
-- an event opened without one gets (perf.core.event_name).
local perf = require "perf"
local core = perf.core
local H = require "helpers"

-- The attr perf builds for event `name`: { type =, config = } from the
-- first perf_event_attr block `perf stat -vv` prints (it leaves out the
-- fields that are zero).
local function perf_attr(name)
  local p = assert(io.popen(("perf stat -vv -e %s true 2>&1 >/dev/null"):format(name)))
  local out = p:read("a")
  p:close()
  local block = out:match("perf_event_attr:\n(.-)\n[^ ]")
  assert(block, "perf stat -vv printed no attr for " .. name .. ":\n" .. out)
  local attr = { type = 0, config = 0 }
  for key, v in block:gmatch("\n?%s+(%S+)%s+(%S+)") do
    if key == "type" or key == "config" then attr[key] = math.tointeger(tonumber(v)) end
  end
  return attr
end

-- Every name of a generic list: canonical first, then its aliases.
local function names_of(entry)
  local out = { entry[1] }
  for _, a in ipairs(entry.aliases) do out[#out + 1] = a end
  return out
end

describe("perf.core's generic event names", function()
  it("are the software events perf list names, with the same aliases", function()
    local listed = {}
    for line in H.sh("perf list sw"):gmatch("[^\n]+") do
      local names = line:match("^%s+(%S.-%S)%s+%[Software event%]")
      if names then listed[#listed + 1] = names end
    end
    assert.is_true(#listed >= 10)
    local ours = {}
    for _, e in ipairs(core.software_events) do ours[#ours + 1] = table.concat(names_of(e), " OR ") end
    table.sort(listed)
    table.sort(ours)
    assert.same(listed, ours)
  end)

  it("give each software and hardware name and alias the config perf gives it", function()
    for kind, list in pairs { [core.PERF_TYPE_SOFTWARE] = core.software_events,
                              [core.PERF_TYPE_HARDWARE] = core.hardware_events } do
      for _, e in ipairs(list) do
        for _, name in ipairs(names_of(e)) do
          assert.same(perf_attr(name), { type = kind, config = e[2] }, name)
        end
      end
    end
    assert.equal(10, #core.hardware_events)
  end)

  it("give the attr types under the kernel's constants", function()
    local want = {}
    for _, name in ipairs { "hardware", "software", "tracepoint", "hw_cache", "raw", "breakpoint" } do
      want[name] = core["PERF_TYPE_" .. name:upper()]
    end
    assert.same(want, core.types)
  end)
end)

describe("names ev:modify_attributes resolves", function()
  it("suggest the nearest software event for a misspelt one", function()
    local ev <close> = assert(perf.open("cpu-clock"))
    local ok, err = pcall(ev.modify_attributes, ev, { config = "task-clok" })
    assert.is_false(ok)
    assert.matches("ev:modify_attributes: no software event 'task%-clok' %(did you mean 'task%-clock'%?%)", err)
  end)

  it("say what a tracepoint and a raw config must look like", function()
    local ev <close> = assert(perf.open("cpu-clock"))
    local ok, err = pcall(ev.modify_attributes, ev, { type = "tracepoint", config = "nocolon" })
    assert.is_false(ok)
    assert.matches([[ev:modify_attributes: 'nocolon' is not a tracepoint %(write "subsystem:event"%)]], err)
    ok, err = pcall(ev.modify_attributes, ev, { type = "tracepoint", config = "nosys:noevent" })
    assert.is_false(ok)
    assert.matches("ev:modify_attributes: no tracepoint 'nosys:noevent' in the mounted tracefs", err)
    ok, err = pcall(ev.modify_attributes, ev, { type = "raw", config = "rzz" })
    assert.is_false(ok)
    assert.matches("ev:modify_attributes: raw config 'rzz' must be rNNN %(hexadecimal%)", err)
  end)

  it("take an event's name on a breakpoint, and the kernel answers the change", function()
    local bytes = string.rep("w", 8)
    local bp <close> = assert(perf.open { type = "breakpoint", bp_type = "w", bp_addr = perf.addressof(bytes), bp_len = 1 })
    local ok, err = pcall(bp.modify_attributes, bp, { config = "cpu-clok" })
    assert.is_false(ok)
    assert.matches("ev:modify_attributes: unknown event 'cpu%-clok' %(did you mean 'cpu%-clock'%?%)", err)
    -- a known name resolves (to software, config 1); the kernel refuses a breakpoint changing type
    local r, msg, errno = bp:modify_attributes { config = "task-clock" }
    assert.is_nil(r)
    assert.equal(22, errno)
    assert.matches("its type cannot change", msg, 1, true)
  end)
end)

describe("perf.core.generic_event and generic_config", function()
  it("resolve a generic name in any case, as the event syntax does", function()
    assert.same({ 1, 3 }, { core.generic_event "CS" })
    assert.same({ 0, 0 }, { core.generic_event "cycles" })
    assert.is_nil(core.generic_event "cyclez")
    assert.equal(2, core.generic_config(core.PERF_TYPE_SOFTWARE, "Faults"))
    local v, why = core.generic_config(core.PERF_TYPE_HARDWARE, "cyclez")
    assert.is_nil(v)
    assert.equal("no hardware event 'cyclez' (did you mean 'cycles'?)", why)
    local ok, err = pcall(perf.attr, { type = "hardware", config = "cyclez" })
    assert.is_false(ok)
    assert.matches(why, err, 1, true)
    assert.same({ 1, 3 }, { perf.parse("CS").type, perf.parse("CS").config })
  end)
end)

describe("perf.core.event_name", function()
  it("names generic, breakpoint and raw events as perf does", function()
    assert.equal("task-clock", core.event_name { type = 1, config = 1 })
    assert.equal("cpu-cycles", core.event_name { type = "hardware", config = 0 })
    assert.equal("cgroup-switches", core.event_name { type = 1, config = 11 })
    assert.equal("mem:0x1000/8:w", core.event_name { type = 5, bp_addr = 0x1000, bp_len = 8, bp_type = 2 })
    assert.equal("mem:0x2000/1:rw", core.event_name { type = 5, config1 = 0x2000, config2 = 1, bp_type = "wr" })
    assert.equal("mem:0x10/4:x", core.event_name { type = 5, bp_addr = 0x10, bp_len = 4, bp_type = 4 })
    assert.equal("r1a2", core.event_name { type = 4, config = 0x1a2 })
  end)

  it("spells a number it has no name for by type and config", function()
    assert.equal("software/config=0x63/", core.event_name { type = 1, config = 99 })
    assert.equal("tracepoint/config=0x12c/", core.event_name { type = 2, config = 300 })
    assert.equal("hw_cache/config=0x0/", core.event_name { type = 3, config = 0 })
    assert.equal("type 99/config=0x5/", core.event_name { type = 99, config = 5 })
  end)

  it("raises on a field open would refuse", function()
    assert.has_error(function() core.event_name { type = 1, confg = 1 } end)
    assert.has_error(function() core.event_name "task-clock" end)
  end)

  it("is how core.open names an event given without a name", function()
    local ev <close> = assert(core.open { type = 1, config = 2 })
    assert.equal("page-faults", ev:name())
    local s = string.rep("x", 8)
    local bp <close> = assert(core.open { type = 5, bp_type = 2, bp_addr = core.addressof(s), bp_len = 1 })
    assert.equal(("mem:0x%x/1:w"):format(core.addressof(s)), bp:name())
    -- a moved breakpoint is named anew, by the same namer
    assert(bp:modify_attributes { bp_addr = core.addressof(s) + 2, bp_type = 3 })
    assert.equal(("mem:0x%x/1:rw"):format(core.addressof(s) + 2), bp:name())
  end)
end)
