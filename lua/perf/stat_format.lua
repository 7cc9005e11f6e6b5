-- perf.stat_format, a public name: the module is perf.counting.stat_format (lua/perf/counting/stat_format.lua).
return require "perf.counting.stat_format"
