-- perf.data, a public name: the module is perf.recording.data (lua/perf/recording/data.lua).
return require "perf.recording.data"
