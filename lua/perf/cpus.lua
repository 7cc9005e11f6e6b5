-- perf.cpus, a public name: the module is perf.counting.cpus (lua/perf/counting/cpus.lua).
return require "perf.counting.cpus"
