-- perf.elf, a public name: the module is perf.util.elf (lua/perf/util/elf.lua).
return require "perf.util.elf"
