-- perf.events: the generic event names, as perf spells them (the C core
-- holds the types and the hardware and software tables).
local events = require "perf.events"

describe("perf.events name tables", function()
  it("map every hardware spelling to the kernel's config", function()
    local want = {
      ["cpu-cycles"] = 0, cycles = 0, instructions = 1, ["cache-references"] = 2,
      ["cache-misses"] = 3, ["branch-instructions"] = 4, branches = 4,
      ["branch-misses"] = 5, ["bus-cycles"] = 6, ["stalled-cycles-frontend"] = 7,
      ["idle-cycles-frontend"] = 7, ["stalled-cycles-backend"] = 8,
      ["idle-cycles-backend"] = 8, ["ref-cycles"] = 9,
    }
    assert.same(want, events.hardware)
  end)

  it("map every software spelling to the kernel's config", function()
    local want = {
      ["cpu-clock"] = 0, ["task-clock"] = 1, ["page-faults"] = 2, faults = 2,
      ["context-switches"] = 3, cs = 3, ["cpu-migrations"] = 4, migrations = 4,
      ["minor-faults"] = 5, ["major-faults"] = 6, ["alignment-faults"] = 7,
      ["emulation-faults"] = 8, dummy = 9, ["bpf-output"] = 10,
      ["cgroup-switches"] = 11,
    }
    assert.same(want, events.software)
  end)

  it("list aliases with their canonical names", function()
    assert.same({
      cycles = "cpu-cycles", branches = "branch-instructions",
      ["idle-cycles-frontend"] = "stalled-cycles-frontend",
      ["idle-cycles-backend"] = "stalled-cycles-backend",
      faults = "page-faults", cs = "context-switches", migrations = "cpu-migrations",
    }, events.aliases)
  end)

  it("list the 32 valid cache events under perf list's names", function()
    local all = events.cache.all()
    assert.equal(32, #all)
    assert.same({ name = "L1-dcache-loads", config = 0 },
      { name = all[1].name, config = all[1].config })
    assert.same({ name = "L1-dcache-load-misses", config = 0x10000 },
      { name = all[2].name, config = all[2].config })
    assert.equal("node-prefetch-misses", all[32].name)
    assert.equal(0x10206, all[32].config)
    assert.equal("iTLB-load-misses", events.cache.name_of(0x10004))
    assert.is_nil(events.cache.name_of(0x104)) -- iTLB has no store
  end)

  it("index cache events by name as the other tables do", function()
    local cache = require("perf").events.cache
    assert.equal(0x10000, cache["L1-dcache-load-misses"])
    for _, e in ipairs(cache.all()) do assert.equal(e.config, cache[e.name]) end
    assert.equal(0x10000, cache["l1d-misses"])
    assert.equal(0x10103, cache["Data-TLB-store-misses"])
    assert.is_nil(cache["L1-dcache-store-misses-loads"])
    assert.is_nil(cache["page-faults"])
  end)
end)
