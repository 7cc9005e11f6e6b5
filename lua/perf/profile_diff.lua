-- perf.profile_diff, a public name: the module is perf.profiling.profile_diff (lua/perf/profiling/profile_diff.lua).
return require "perf.profiling.profile_diff"
