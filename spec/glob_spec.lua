-- perf.glob: tracepoint patterns expanded to the tracepoints tracefs has,
-- as perf stat -e expands them; the lists are checked against tracefs read
-- by the shell.
local glob = require "perf.event.glob"
local tracepoint = require "perf.tracepoint"

-- "sys:event" for every tracepoint directory the shell finds under
-- sys_glob/ev_glob, in the directories' own order (ls -U), as perf takes it.
local function ls(sys_glob, ev_glob)
  local dir = assert(tracepoint.path())
  local p = assert(io.popen(([[cd %s/events && for s in $(ls -U); do case $s in %s)
    for e in $(ls -U "$s" 2>/dev/null); do case $e in %s) [ -f "$s/$e/id" ] && echo "$s:$e";; esac; done;;
  esac; done]]):format(dir, sys_glob, ev_glob)))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe("perf.glob", function()
  it("turns globs into anchored Lua patterns", function()
    local p = glob.to_pattern("sys_enter_open*")
    assert.truthy(("sys_enter_openat"):match(p))
    assert.truthy(("sys_enter_open"):match(p))
    assert.falsy(("x_sys_enter_open"):match(p))
    assert.truthy(("a.b-c"):match(glob.to_pattern("a.b-?")))
    assert.falsy(("axb-c"):match(glob.to_pattern("a.b-?")))
  end)

  it("knows a pattern from an event", function()
    assert.is_true(glob.is_pattern("syscalls:sys_enter_open*"))
    assert.is_true(glob.is_pattern("*:sys_enter_openat"))
    assert.is_true(glob.is_pattern("sched:sched_process_*:u"))
    for _, s in ipairs { "syscalls:sys_enter_openat", "cpu-clock:u", "r01c2:k",
        "msr/tsc/", "mem:0x1000/8:w", "task-clock" } do
      assert.is_false(glob.is_pattern(s), s)
    end
  end)

  it("expands the event part to every match, in tracefs's order", function()
    local want = ls("syscalls", "sys_enter_open*")
    assert.is_true(#want >= 3)
    assert.same(want, glob.expand("syscalls:sys_enter_open*"))
  end)

  it("gives the events in the order perf stat counts and prints them", function()
    local p = io.popen("perf stat -x, -e 'syscalls:sys_enter_open*,sched:sched_process_*' true 2>&1")
    local theirs = {}
    for line in p:lines() do theirs[#theirs + 1] = line:match("^[^,]*,[^,]*,([^,]+)") end
    p:close()
    assert.is_true(#theirs >= 6)
    assert.same(theirs, glob.specs { "syscalls:sys_enter_open*", "sched:sched_process_*" })
  end)

  it("expands the subsystem part, skipping subsystems without a match", function()
    assert.same(ls("*", "sys_enter_openat"), glob.expand("*:sys_enter_openat"))
    assert.same({ "syscalls:sys_enter_openat" }, glob.expand("sys*:sys_enter_openat"))
    assert.same(ls("sched", "sched_process_*"), glob.expand("sched:sched_process_*"))
  end)

  it("gives every match the modifiers that follow the pattern", function()
    local list = glob.expand("syscalls:sys_enter_open*:u")
    assert.same(#ls("syscalls", "sys_enter_open*"), #list)
    for _, name in ipairs(list) do assert.truthy(name:match("^syscalls:sys_enter_open.*:u$")) end
  end)

  it("expands patterns inside a group, keeping its name and modifiers", function()
    local members = ls("sched", "sched_process_*")
    assert.same({ "g{page-faults," .. table.concat(members, ",") .. ",cpu/event=1,umask=2/}:u" },
      glob.expand("g{page-faults,sched:sched_process_*,cpu/event=1,umask=2/}:u"))
  end)

  it("leaves other events alone", function()
    assert.same({ "task-clock" }, glob.expand("task-clock"))
    assert.same({ "{a,b}" }, glob.expand("{a,b}"))
  end)

  it("copies a table spec once per match", function()
    local list = assert(glob.specs { "page-faults", { "syscalls:sys_enter_open*", sample_period = 3 } })
    local want = ls("syscalls", "sys_enter_open*")
    assert.same("page-faults", list[1])
    assert.same(#want + 1, #list)
    for i, name in ipairs(want) do assert.same({ name, sample_period = 3 }, list[i + 1]) end
  end)

  it("refuses a pattern that matches nothing, saying where to look", function()
    assert.has_error(function() glob.expand("syscalls:no_such_call*") end,
      'no tracepoint matches "syscalls:no_such_call*" (perf-lua list "syscalls" lists those that exist)')
  end)
end)
