rockspec_format = "3.0"
package = "perf-event"
version = "scm-1"
source = {
  url = "git+file://.",
}
description = {
  summary = "Linux perf_event_open(2) for Lua 5.4: count, sample and trace from a script",
  detailed = [[
A Lua 5.4 binding to perf_event_open(2): software, hardware, cache,
tracepoint, breakpoint and PMU events with every attr field and ioctl,
groups, the mmap ring buffer with a decoder for every record type, perf's
event syntax, tracepoint formats, watchpoints and uprobes.
]],
  license = "MIT",
  labels = { "linux", "perf", "profiling", "tracing" },
}
supported_platforms = { "linux" }
dependencies = {
  "lua >= 5.4",
}
build = {
  type = "builtin",
  modules = {
    ["perf.core"] = {
      sources = {
        "csrc/attr.c",
        "csrc/consts.c",
        "csrc/core.c",
        "csrc/decode.c",
        "csrc/decode_lua.c",
        "csrc/errors.c",
        "csrc/event.c",
        "csrc/event_names.c",
        "csrc/exec_hint.c",
        "csrc/group.c",
        "csrc/group_read.c",
        "csrc/keybuf.c",
        "csrc/mount.c",
        "csrc/nearest.c",
        "csrc/perfdata.c",
        "csrc/process.c",
        "csrc/profile.c",
        "csrc/profile_alloc.c",
        "csrc/profile_counters.c",
        "csrc/profile_time.c",
        "csrc/profile_timer.c",
        "csrc/record_push.c",
        "csrc/ring.c",
        "csrc/ring_iter.c",
        "csrc/ring_write.c",
        "csrc/ringbuf.c",
        "csrc/sanitizer_env.c",
        "csrc/show.c",
        "csrc/signal.c",
        "csrc/spawn.c",
        "csrc/tracefs.c",
        "csrc/userpage.c",
        "csrc/util.c",
        "csrc/waiter.c",
        "csrc/zstd.c",
      },
      defines = { "_GNU_SOURCE" },
      incdirs = { "csrc" },
      -- dl: libzstd (perf record -z files) is loaded at first need, so the
      -- build needs no zstd headers (csrc/zstd.c says why)
      libraries = { "dl" },
    },
    ["perf"] = "lua/perf/init.lua",
    ["perf.cli"] = "lua/perf/cli/init.lua",
    ["perf.cli.list"] = "lua/perf/cli/list.lua",
    ["perf.cli.profile"] = "lua/perf/cli/profile.lua",
    ["perf.cli.record"] = "lua/perf/cli/record.lua",
    ["perf.cli.stat"] = "lua/perf/cli/stat.lua",
    ["perf.cli.stat_cgroups"] = "lua/perf/cli/stat_cgroups.lua",
    ["perf.cli.top"] = "lua/perf/cli/top.lua",
    ["perf.base"] = "lua/perf/base.lua",
    ["perf.capabilities"] = "lua/perf/capabilities.lua",
    ["perf.cgroup"] = "lua/perf/cgroup.lua",
    ["perf.cpus"] = "lua/perf/cpus.lua",
    ["perf.data"] = "lua/perf/data.lua",
    ["perf.data_writer"] = "lua/perf/data_writer.lua",
    ["perf.kallsyms"] = "lua/perf/kallsyms.lua",
    ["perf.elf"] = "lua/perf/elf.lua",
    ["perf.events"] = "lua/perf/events.lua",
    ["perf.flamegraph"] = "lua/perf/flamegraph.lua",
    ["perf.fs"] = "lua/perf/fs.lua",
    ["perf.glob"] = "lua/perf/glob.lua",
    ["perf.group"] = "lua/perf/group.lua",
    ["perf.gzip"] = "lua/perf/gzip.lua",
    ["perf.list"] = "lua/perf/list.lua",
    ["perf.measure"] = "lua/perf/measure.lua",
    ["perf.modifiers"] = "lua/perf/modifiers.lua",
    ["perf.naming"] = "lua/perf/naming.lua",
    ["perf.nearest"] = "lua/perf/nearest.lua",
    ["perf.options"] = "lua/perf/options.lua",
    ["perf.parse"] = "lua/perf/parse.lua",
    ["perf.processes"] = "lua/perf/processes.lua",
    ["perf.pmu"] = "lua/perf/pmu.lua",
    ["perf.pprof"] = "lua/perf/pprof.lua",
    ["perf.record"] = "lua/perf/record.lua",
    ["perf.profile"] = "lua/perf/profile.lua",
    ["perf.profile_diff"] = "lua/perf/profile_diff.lua",
    ["perf.profile_modes"] = "lua/perf/profile_modes.lua",
    ["perf.stat"] = "lua/perf/stat.lua",
    ["perf.stat_format"] = "lua/perf/stat_format.lua",
    ["perf.stat_tool"] = "lua/perf/stat_tool.lua",
    ["perf.syntax"] = "lua/perf/syntax.lua",
    ["perf.terms"] = "lua/perf/terms.lua",
    ["perf.tracefs"] = "lua/perf/tracefs.lua",
    ["perf.threads"] = "lua/perf/threads.lua",
    ["perf.topology"] = "lua/perf/topology.lua",
    ["perf.tracepoint"] = "lua/perf/tracepoint.lua",
    ["perf.uprobe"] = "lua/perf/uprobe.lua",
    ["perf.watch"] = "lua/perf/watch.lua",
  },
  -- the commands: `perf-lua stat`, `perf-lua list`, ... (lua/perf/cli)
  install = {
    bin = { ["perf-lua"] = "bin/perf-lua" },
  },
}
test = {
  type = "busted",
}
