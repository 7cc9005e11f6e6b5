-- perf.topology, a public name: the module is perf.counting.topology (lua/perf/counting/topology.lua).
return require "perf.counting.topology"
