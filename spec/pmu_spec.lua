-- sysfs PMUs: format bit ranges, event aliases with .scale/.unit, term
-- packing, against a fake sysfs tree and against this machine's PMUs.

local pmu = require "perf.event.pmu"
local parse = require "perf.event.parse"
local H = require "helpers"

local FAKE = "spec/fixtures/sysfs"

local parse_error = H.parse_error

local assert_has = H.assert_has

describe("pmu.parse_format", function()
  it("reads ranges, single bits and lists", function()
    assert.same({ field = "config", bits = { 0, 1, 2, 3, 4, 5, 6, 7 }, text = "config:0-7" },
      pmu.parse_format("config:0-7\n"))
    assert.same({ field = "config1", bits = { 12 }, text = "config1:12" },
      pmu.parse_format("config1:12"))
    assert.same({ 0, 1, 2, 3, 8, 9, 10, 11 }, pmu.parse_format("config:0-3,8-11").bits)
    assert.equal("config3", pmu.parse_format("config3:0-23").field)
  end)

  it("refuses what it cannot read", function()
    assert.same({ nil, 'bad format "config:7-3"' }, { pmu.parse_format("config:7-3") })
    assert.same({ nil, 'bad format "config:64"' }, { pmu.parse_format("config:64") })
    assert.same({ nil, 'bad format "period:0-7"' }, { pmu.parse_format("period:0-7") })
  end)
end)

describe("pmu.pack", function()
  it("spreads a value over split ranges, lowest bits first", function()
    local f = pmu.parse_format("config:0-3,8-11")
    assert.equal(0xa05, pmu.pack(f, 0, 0xa5))
    assert.equal(0xa5, pmu.unpack(f, 0xa05))
    -- the field's bits are replaced, the others kept
    assert.equal(0xf0faf5, pmu.pack(f, 0xf0ffff, 0xa5))
  end)

  it("refuses values wider than the field", function()
    local f = pmu.parse_format("config:0-3,8-11")
    assert.same({ nil, "value 0x100 too big for config:0-3,8-11 (8 bits, at most 0xff)" },
      { pmu.pack(f, 0, 0x100) })
  end)

  it("takes all 64 bits of a full-width field", function()
    local f = pmu.parse_format("config1:0-63")
    assert.equal(-1, pmu.pack(f, 0, -1))
  end)
end)

describe("a fake sysfs tree", function()
  setup(function() pmu.set_root(FAKE) end)
  teardown(function() pmu.set_root(nil) end)

  it("lists every PMU with type, formats and events", function()
    assert.same({ "breakpoint", "cpu", "power", "software", "split", "tracepoint",
      "uncore_imc_0", "uncore_imc_1" }, pmu.names())
    local cpu = pmu.find("cpu")
    assert.equal(4, cpu.type)
    assert.same({
      event = "config:0-7", umask = "config:8-15", edge = "config:18", inv = "config:23",
      cmask = "config:24-31", ldlat = "config1:0-15", offcore_rsp = "config1:0-63",
      frontend = "config3:0-23",
    }, cpu.formats)
    assert.same({
      ["cpu-cycles"] = "event=0x3c", instructions = "event=0xc0",
      ["mem-loads"] = "event=0xcd,umask=0x1,ldlat=3",
      ["ocr.demand"] = "event=0xb7,umask=0x1,offcore_rsp=?",
      ["ref-cycles"] = "event=0x00,umask=0x03",
    }, cpu.events)
    assert.equal("0", pmu.find("power").cpumask)
    assert.equal(pmu.find("power"), pmu.by_type(20))
  end)

  it("reads .scale and .unit", function()
    local p = pmu.find("power")
    assert.same({ scale = 2.3283064365386962890625e-10, unit = "Joules" },
      p.event_info["energy-pkg"])
    assert.same({ "energy-cores", "energy-pkg" }, (function()
      local t = {}
      for k in pairs(p.events) do t[#t + 1] = k end
      table.sort(t)
      return t
    end)())
  end)

  describe("packs terms", function()
    local cases = {
      { "cpu/event=0x3c/", { type = 4, config = 0x3c } },
      { "cpu/event=0x3c,umask=0x1,edge,inv,cmask=3/", { type = 4, config = 0x384013c } },
      { "cpu/event=0xd1,umask=0x20/", { type = 4, config = 0x20d1 } },
      { "cpu/event/", { type = 4, config = 1 } },
      { "cpu/cpu-cycles/", { type = 4, config = 0x3c } },
      { "cpu/instructions/", { type = 4, config = 0xc0 } },
      { "cpu/mem-loads/", { type = 4, config = 0x1cd, config1 = 3 } },
      { "cpu/mem-loads,ldlat=10/", { type = 4, config = 0x1cd, config1 = 10 } },
      { "cpu/ocr.demand,offcore_rsp=0x10001/", { type = 4, config = 0x1b7, config1 = 0x10001 } },
      { "cpu/frontend=0x123/", { type = 4, config = 0, config3 = 0x123 } },
      { "cpu/config=0x1234,event=1/", { type = 4, config = 0x1201 } },
      { "cpu/config1=5,config2=6,config3=7/", { type = 4, config = 0, config1 = 5, config2 = 6, config3 = 7 } },
      { "cpu/event=0x3c,period=1000/", { type = 4, config = 0x3c, sample_period = 1000 } },
      { "split/lo=0xff,hi=0xf/", { type = 40, config = 0xf0f, config2 = 0xf << 60 } },
      { "uncore_imc_0/event=4/", { type = 30, config = 4 } },
      { "uncore_imc_1/cas_count_read/", { type = 31, config = 0x304 } },
      -- generic names inside a PMU: perf prefers the PMU's own event
      { "cpu/cycles/", { type = 0, config = 0 } },
      { "cpu/L1-dcache-load-misses/", { type = 3, config = 0x10000 } },
      { "cpu//", { type = 4, config = 0 } },
      { "cpu/r1a8/", { type = 4, config = 0x1a8 } },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        c[2].name = c[1]
        assert.same(c[2], parse.parse(c[1]))
      end)
    end
  end)

  it("carries scale and unit of an event alias", function()
    assert.same({ type = 20, config = 2, name = "power/energy-pkg/",
      scale = 2.3283064365386962890625e-10, unit = "Joules" }, parse.parse("power/energy-pkg/"))
    assert.same({ type = 20, config = 1, name = "energy-cores:u",
      scale = 2.3283064365386962890625e-10, unit = "Joules",
      exclude_kernel = true, exclude_hv = true }, parse.parse("energy-cores:u"))
  end)

  it("applies group modifiers across PMUs", function()
    local g = parse.parse("{cpu/cpu-cycles/,power/energy-pkg/}:u")
    assert.same({ type = 4, config = 0x3c, exclude_kernel = true, exclude_hv = true,
      name = "cpu/cpu-cycles/" }, g[1])
    assert.equal(20, g[2].type)
    assert.equal("Joules", g[2].unit)
  end)

  it("resolves a PMU type name and a config event name in a table", function()
    assert.same({ type = 20, config = 2, name = "power/energy-pkg/",
      scale = 2.3283064365386962890625e-10, unit = "Joules" },
      parse.spec { type = "power", config = "energy-pkg" })
    assert.same({ type = 4, config = 0x1cd, config1 = 7, name = "cpu/mem-loads/" },
      parse.spec { type = "cpu", config = "mem-loads", config1 = 7 })
  end)

  it("explains what is wrong", function()
    local err = parse_error("cpu/umask=1,bogus=2/")
    assert_has("cpu has no term or event 'bogus'", err)
    assert_has("cpu format terms: cmask, edge, event, frontend, inv, ldlat, offcore_rsp, umask", err)
    assert_has("\n    cpu/umask=1,bogus=2/\n                ^", err)
    assert_has("value 0x100 too big for config:0-7 (8 bits, at most 0xff)", parse_error("cpu/event=0x100/"))
    assert_has("event 'ocr.demand' needs a value for 'offcore_rsp'", parse_error("cpu/ocr.demand/"))
    assert_has("'cas_count_read' is an event of 2 PMUs", parse_error("cas_count_read"))
    assert_has("pick one: uncore_imc_0/cas_count_read/, uncore_imc_1/cas_count_read/",
      parse_error("cas_count_read"))
    assert_has("'uncore_imc' names 2 PMUs (uncore_imc_0, uncore_imc_1)", parse_error("uncore_imc/event=4/"))
    assert_has("no PMU or event 'cpux'", parse_error("cpux/event=1/"))
    assert_has("term 'event' needs a number, not 'abc'", parse_error("cpu/event=abc/"))
  end)
end)

describe("this machine's PMUs", function()
  it("have the types the kernel gives", function()
    local want = { software = 1, tracepoint = 2, breakpoint = 5 }
    for name, t in pairs(want) do
      local p = pmu.find(name)
      assert.truthy(p, name)
      assert.equal(t, p.type)
    end
  end)

  it("include uprobe with its retprobe format bit", function()
    local p = pmu.find("uprobe")
    if not p then return pending("no uprobe PMU") end
    assert.equal("config:0", p.formats.retprobe)
  end)

  it("include msr with its tsc event", function()
    local p = pmu.find("msr")
    if not p then return pending("no msr PMU") end
    assert.equal("event=0x00", p.events.tsc)
    assert.equal("config:0-63", p.formats.event)
  end)
end)

describe("PMU terms against the real sysfs", function()
  it("msr/tsc/ and its bare event name", function()
    local msr = pmu.find("msr")
    if not msr then return pending("no msr PMU") end
    assert.same({ type = msr.type, config = 0, name = "msr/tsc/" }, parse.parse("msr/tsc/"))
    assert.same({ type = msr.type, config = 0, name = "tsc" }, parse.parse("tsc"))
    assert.same({ type = msr.type, config = 5, name = "msr/event=5/" }, parse.parse("msr/event=5/"))
  end)

  it("software/config=N/ uses the built-in config term", function()
    assert.same({ type = 1, config = 3, name = "software/config=3/" },
      parse.parse("software/config=3/"))
  end)
end)
