-- perf.topology: CPUs placed by sysfs's topology files and gathered per
-- core, die, socket and CPU in perf's order, on a made-up machine
-- (spec/fixtures/topology: two sockets; CPUs 0 and 2, 1 and 3 share a core;
-- cpu5 has no die_id, cpu6 no core_id) and on this one.
local topology = require "perf.topology"

describe("perf.topology", function()
  describe("on a made-up machine", function()
    setup(function() topology.set_root("spec/fixtures/topology") end)
    teardown(function() topology.set_root(nil) end)

    it("reads where a CPU sits", function()
      assert.same({ cpu = 3, socket = 0, die = 0, core = 1 }, topology.of(3))
      assert.same({ cpu = 4, socket = 1, die = 0, core = 0 }, topology.of(4))
      assert.same({ cpu = 5, socket = 1, die = 0, core = 0 }, topology.of(5))   -- no die_id: die 0
      assert.same({ cpu = 6, socket = 0, die = 0, core = -1 }, topology.of(6))  -- no core_id: -1
    end)

    it("gathers CPUs per core with perf's keys, in perf's order", function()
      local cores = topology.aggregate("core", { 5, 4, 3, 2, 1, 0 })
      local keys, nrs, cpus = {}, {}, {}
      for i, p in ipairs(cores) do keys[i], nrs[i], cpus[i] = p.key, p.nr, p.cpus end
      assert.same({ "S0-D0-C0", "S0-D0-C1", "S1-D0-C0" }, keys)
      assert.same({ 2, 2, 2 }, nrs)
      assert.same({ { 0, 2 }, { 1, 3 }, { 4, 5 } }, cpus)
      assert.same({ socket = 0, die = 0, core = 1 }, { socket = cores[2].socket, die = cores[2].die,
        core = cores[2].core })
    end)

    it("gathers per die, per socket and per CPU", function()
      local all = { 0, 1, 2, 3, 4, 5 }
      local sockets = topology.aggregate("socket", all)
      assert.same({ "S0", "S1" }, { sockets[1].key, sockets[2].key })
      assert.same({ { 0, 1, 2, 3 }, { 4, 5 } }, { sockets[1].cpus, sockets[2].cpus })
      local dies = topology.aggregate("die", all)
      assert.same({ "S0-D0", "S1-D0" }, { dies[1].key, dies[2].key })
      local cpus = topology.aggregate("cpu", { 3, 1 })
      assert.same({ "CPU1", "CPU3" }, { cpus[1].key, cpus[2].key })
      assert.same({ 1, 1 }, { cpus[1].nr, cpus[1].cpu })
    end)

    it("raises on an unknown aggregation", function()
      assert.has_error(function() topology.aggregate("node", { 0 }) end,
        "perf.topology: no aggregation 'node' (cpu, core, die, socket)")
    end)
  end)

  it("reads this machine's sysfs", function()
    local online = require("perf.cpus").online()
    local cores = topology.aggregate("core", online)
    local n = 0
    for _, p in ipairs(cores) do
      n = n + p.nr
      local f = assert(io.open(("/sys/devices/system/cpu/cpu%d/topology/core_id"):format(p.cpus[1])))
      assert.equal(p.core, math.tointeger(tonumber(f:read("a"))))
      f:close()
    end
    assert.equal(#online, n)
  end)
end)
