-- perf.tracepoint, a public name: the module is perf.event.tracepoint (lua/perf/event/tracepoint.lua).
return require "perf.event.tracepoint"
