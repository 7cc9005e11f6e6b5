-- Kernel failures come back as (nil, message, errno): the message names the
-- event, the errno name and strerror, and gives advice. Every case here is
-- produced for real on this machine.
local perf = require "perf"
local H = require "helpers"

local shape = H.fails

describe("open errors", function()
  it("ENOENT for a hardware event says there is no PMU here #hardware", function()
    if H.needs_no_pmu(pending) then return end
    local msg, errno = shape(perf.open({ type = "hardware", config = 0 }))
    assert.are.equal(2, errno)
    assert.are.equal('perf.open "cpu-cycles": No such file or directory (ENOENT); '
      .. "this machine exposes no hardware PMU (see perf.capabilities())", msg)
    msg = shape(perf.open({ type = "hw_cache", config = 0x10000 }, nil))
    assert.matches("no hardware PMU", msg)
  end)

  it("ENOENT for an unknown software config names it", function()
    local msg = shape(perf.open { type = "software", config = 99 })
    assert.matches("ENOENT%); the kernel has no software event with config 99", msg)
  end)

  it("ESRCH names the missing process", function()
    local p = io.popen("sh -c 'echo $$'")
    local pid = math.tointeger(tonumber(p:read("l")))
    p:close()                                    -- reaped: the pid is free
    local msg, errno = shape(perf.open({ type = "software", config = 1 }, { pid = pid }))
    assert.are.equal(3, errno)
    assert.matches("No such process %(ESRCH%); no process with pid " .. pid, msg)
  end)

  it("EINVAL points at the likely field", function()
    local s = "anchor"
    local msg, errno = shape(perf.open { type = "breakpoint", bp_type = "r",
      bp_addr = perf.addressof(s), bp_len = 1 })
    assert.are.equal(22, errno)
    assert.matches('use bp_type "rw"', msg)
    msg = shape(perf.open { type = "breakpoint", bp_type = "x",
      bp_addr = perf.symbol("getenv"), bp_len = 1 })
    assert.matches("execute breakpoints need bp_len = 8", msg)
    msg = shape(perf.open({ type = "software", config = 1 }, { pid = -1, cpu = -1 }))
    assert.matches("pid %-1 %(any process%) needs a cpu", msg)
    local max = perf.capabilities().max_sample_rate
    msg = shape(perf.open { type = "software", config = 0, sample_freq = max + 1 })
    assert.matches("above kernel.perf_event_max_sample_rate %(" .. max .. "%)", msg)
    msg = shape(perf.open { type = "software", config = 1, sigtrap = true })
    assert.matches("sigtrap needs remove_on_exec", msg)
    msg = shape(perf.open({ type = "software", config = 1 }, { cpu = 4096 }))
    assert.matches("cpu 4096 does not exist", msg)
  end)

  it("EINVAL and EOPNOTSUPP name what the PMU cannot do", function()
    local msg, errno = shape(perf.open { "syscalls:sys_enter_openat", sample_period = 1,
      sample_type = { "branch_stack" }, branch_sample_type = { "any", "user" } })
    assert.are.equal(95, errno)
    assert.matches("EOPNOTSUPP%); the PMU cannot do what this attr asks; branch stacks", msg)
    msg = shape(perf.open { "task-clock", sample_period = 1, sample_type = { "branch_stack" } })
    assert.matches("branch_stack needs branch_sample_type", msg)
    msg = shape(perf.open { "msr/tsc/", sample_period = 1000 })
    assert.matches("EINVAL%); PMUs such as msr, power and uncore only count", msg)
    msg = shape(perf.open { "msr/tsc/", exclude_kernel = true })
    assert.matches("count every mode: drop exclude_user/kernel/hv/idle", msg)
  end)

  it("E2BIG reports the attr size the kernel accepts", function()
    local msg, errno = shape(perf.open { type = "software", config = 1, size = 32 })
    assert.are.equal(7, errno)
    assert.matches("E2BIG%); attr.size must be between 64 and the page size; "
      .. "this kernel's perf_event_attr is " .. perf.capabilities().attr_size .. " bytes", msg)
  end)

  it("ENOSPC when the breakpoint slots are all taken", function()
    local slots = perf.capabilities().max_breakpoints
    assert.is_true(slots >= 1)
    local bytes = string.rep("s", 64)
    local held = {}
    for i = 1, slots do
      held[i] = assert(perf.open { type = "breakpoint", bp_type = "rw",
        bp_addr = perf.addressof(bytes) + i, bp_len = 1 })
    end
    local msg, errno = shape(perf.open { type = "breakpoint", bp_type = "rw",
      bp_addr = perf.addressof(bytes), bp_len = 1 })
    assert.are.equal(28, errno)
    assert.matches("ENOSPC%); no free hardware breakpoint slot", msg)
    for _, ev in ipairs(held) do ev:close() end
    assert(perf.open { type = "breakpoint", bp_type = "rw",
      bp_addr = perf.addressof(bytes), bp_len = 1 }):close()
  end)

  it("EMFILE names the open-file limit (in a child with ulimit -n 24)", function()
    local out = H.run_lua([[
      local perf = require "perf"
      local held = {}
      for i = 1, 100 do
        local ev, msg, errno = perf.open { type = "software", config = 1 }
        if not ev then print(errno, msg) break end
        held[i] = ev
      end
    ]], "ulimit -n 24;")
    local errno, msg = out:match("^(%d+)\t(.-)\n")
    assert.are.equal("24", errno, out)
    assert.matches("Too many open files %(EMFILE%); the open%-file limit %(RLIMIT_NOFILE = 24%) is reached", msg)
  end)

  it("EACCES for an unprivileged user says what paranoid allows", function()
    -- a copy of the build that the unprivileged user can read
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      local ev, msg, errno = perf.open { type = "software", config = 1 }
      print(errno, msg)
      ev = assert(perf.open { type = "software", config = 1, exclude_kernel = true, exclude_hv = true })
      print("user-only ok")
    ]])
    if not out then return pending(why) end
    local paranoid = perf.capabilities().paranoid
    if paranoid < 2 then
      pending("perf_event_paranoid is " .. paranoid .. ": unprivileged users may count the kernel")
      return
    end
    local errno, msg = out:match("^(%d+)\t(.-)\n")
    assert.are.equal("13", errno, out)
    assert.matches("Permission denied %(EACCES%); perf_event_paranoid is " .. paranoid
      .. ": set exclude_kernel = true %(and exclude_hv%)", msg)
    assert.matches("user%-only ok", out)
  end)
end)

describe("misuse raises", function()
  it("for a closed group leader and bad targets", function()
    local leader = assert(perf.open { type = "software", config = 1 })
    leader:close()
    assert.has_error(function()
      perf.open({ type = "software", config = 1 }, { group = leader })
    end, "attempt to use a closed perf event")
    assert.has_error(function() perf.open({ type = "software", config = 1 }, { group = 5 }) end,
      "target field 'group': perf.event expected, got number")
    assert.has_error(function() perf.open({ type = "software", config = 1 }, { pid = -2 }) end,
      "target field 'pid': out of range")
    assert.has_error(function() perf.open(42) end,
      "perf.open: event expected (a string or a table), got number")
    assert.has_error(function() perf.open("task-clock", { pid = "me" }) end,
      "target field 'pid': an integer expected (a thread id, 0 for this thread, -1 for any), got string \"me\"")
    assert.has_error(function() perf.open("task-clock", { cpu = 0.5 }) end,
      "target field 'cpu': an integer expected (a CPU number, -1 for any), got number")
  end)

  it("a directory that is no perf_event cgroup gets a hint", function()
    local msg, errno = shape(perf.open("task-clock", { cgroup = "/tmp", cpu = 0 }))
    assert.are.equal(9, errno)
    assert.matches("not in a hierarchy with the perf_event controller", msg, 1, true)
  end)

  it("a cgroup of a v1 hierarchy without perf_event gets the same hint (the kernel says ENOENT)", function()
    local dir
    for l in io.lines("/proc/self/mounts") do
      local d, kind, opts = l:match("^%S+ (%S+) (%S+) (%S+)")
      if kind == "cgroup" and not opts:find("perf_event", 1, true) then dir = d break end
    end
    if not dir then return pending("no cgroup v1 hierarchy without perf_event is mounted here") end
    local msg, errno = shape(perf.open("syscalls:sys_enter_openat", { cgroup = dir, cpu = 0 }))
    assert.are.equal(2, errno)
    assert.matches("ENOENT); the cgroup directory is not in a hierarchy with the perf_event controller", msg, 1, true)
    -- an unknown event keeps its own hint
    msg = shape(perf.open({ type = "software", config = 99 }, { cgroup = dir, cpu = 0 }))
    assert.matches("the kernel has no software event with config 99", msg, 1, true)
  end)

  it("a bad cgroup path is an environment failure", function()
    local msg, errno = shape(perf.open({ type = "software", config = 1 },
      { cgroup = "/nonexistent/cgroup" }))
    assert.are.equal(2, errno)
    assert.matches('perf.open: cgroup "/nonexistent/cgroup"', msg)
  end)
end)

describe("errno names", function()
  local core = require "perf.core"

  it("perf.core.errno holds the names the messages use, with their numbers", function()
    local n = 0
    for name, v in pairs(core.errno) do
      n = n + 1
      assert.is_true(math.type(v) == "integer" and v > 0, name)
      -- ENOTSUP is EOPNOTSUPP on Linux: the messages use the second name
      assert.are.equal(name == "ENOTSUP" and "EOPNOTSUPP" or name, core.errno_name(v))
    end
    assert.is_true(n >= 30)
    assert.are.same({ 1, 2, 13, 22 }, { core.errno.EPERM, core.errno.ENOENT,
      core.errno.EACCES, core.errno.EINVAL })
    local msg, errno = shape(perf.open { type = "software", config = 99 })
    assert.are.equal(core.errno.ENOENT, errno)
    assert.matches("(ENOENT)", msg, 1, true)
  end)

  it("no Lua module writes an errno as a number", function()
    local found = {}
    for _, dir in ipairs { "lua/perf", "lua/perf/util", "lua/perf/event", "lua/perf/counting",
        "lua/perf/profiling", "lua/perf/recording", "lua/perf/serving", "lua/perf/cli" } do
      for _, name in ipairs(core.listdir(dir) or {}) do
        if name:match("%.lua$") then
          local path = dir .. "/" .. name
          local n = 0
          for line in io.lines(path) do
            n = n + 1
            local code = line:gsub("%-%-.*", "")
            if code:find("errno%s*[=~]=%s*%d") or code:find("code%s*[=~]=%s*%d")
                or code:find("local%s+E%u+[%w_,%s]*=%s*%d")
                or line:find(",%s*%d+%s*%-%-%s*E%u%u") then
              found[#found + 1] = ("%s:%d: %s"):format(path, n, line)
            end
          end
        end
      end
    end
    assert.are.same({}, found)
  end)
end)
