-- perf.events, a public name: the module is perf.event.events (lua/perf/event/events.lua).
return require "perf.event.events"
