-- perf.cgroup, a public name: the module is perf.event.cgroup (lua/perf/event/cgroup.lua).
return require "perf.event.cgroup"
