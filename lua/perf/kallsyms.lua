-- perf.kallsyms, a public name: the module is perf.util.kallsyms (lua/perf/util/kallsyms.lua).
return require "perf.util.kallsyms"
