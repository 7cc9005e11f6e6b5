-- perf.cgroup: the perf_event hierarchy found in mount tables as the perf
-- tool finds it (spec/fixtures/mounts: a hybrid layout, a v1 perf_event
-- mount, cgroup2 alone, an escaped path, none), and the advice perf.open
-- and perf.stat give for cgroups on this machine.
local perf = require "perf"
local cgroup = require "perf.cgroup"
local H = require "helpers"

local function mounts(name)
  local f = assert(io.open("spec/fixtures/mounts/" .. name))
  local text = f:read("a")
  f:close()
  return text
end

describe("perf.cgroup", function()
  it("finds the v1 hierarchy with perf_event, else cgroup2, as perf does", function()
    assert.are.equal("/sys/fs/cgroup/unified", cgroup.root(mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/perf_event", cgroup.root(mounts("v1_perf_event")))
    assert.are.equal("/sys/fs/cgroup", cgroup.root(mounts("unified")))
    -- a controller is a whole option, not a part of one; \040 is a space
    assert.are.equal("/mnt/my cgroups", cgroup.root(mounts("escaped")))
    local root, why = cgroup.root(mounts("none"))
    assert.is_nil(root)
    assert.matches("no cgroup hierarchy with perf_event is mounted", why, 1, true)
  end)

  it("takes a name under that hierarchy and a directory as it is, as perf stat -G", function()
    assert.are.equal("/sys/fs/cgroup/unified/web", cgroup.dir("web", mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/perf_event/a/b", cgroup.dir("a/b", mounts("v1_perf_event")))
    assert.are.equal("/sys/fs/cgroup/web", cgroup.dir("web", mounts("none")))
    -- a path in a cgroup hierarchy is a directory; any other, perf's name
    assert.are.equal("/sys/fs/cgroup/unified/x", cgroup.dir("/sys/fs/cgroup/unified/x", mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/memory/x", cgroup.dir("/sys/fs/cgroup/memory/x", mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/unified", cgroup.dir("/", mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/unified/web", cgroup.dir("/web/", mounts("hybrid")))
    assert.are.equal("/sys/fs/cgroup/unified/sys/fs/cgroupx",
      cgroup.dir("/sys/fs/cgroupx", mounts("hybrid")))
  end)

  it("finds this machine's hierarchy", function()
    local root = assert(cgroup.root())
    assert.is_true(require("perf.util.fs").isdir(root))
    assert.is_true(require("perf.util.fs").exists(root .. "/cgroup.procs"))
  end)
end)

describe("cgroup advice", function()
  local root = cgroup.root()

  it("says a cgroup event needs a CPU", function()
    local msg, errno = H.fails(perf.open("task-clock", { cgroup = root }))
    assert.are.equal(22, errno)
    assert.matches("EINVAL); a cgroup event counts on one CPU: give target.cpu", msg, 1, true)
    local ev = assert(perf.open("task-clock", { cgroup = root, cpu = 0 }))
    ev:close()
  end)

  it("names the perf_event hierarchy for a directory outside it", function()
    local msg, errno = H.fails(perf.open("task-clock", { cgroup = "/tmp", cpu = 0 }))
    assert.are.equal(9, errno)
    assert.matches("not in a hierarchy with the perf_event controller: .*; here that is "
      .. root:gsub("%p", "%%%0") .. "$", msg)
    -- perf.stat reads a path outside every cgroup hierarchy as perf stat
    -- -G does, as a name under the root; a v1 hierarchy without perf_event
    -- (where one is mounted) is outside the perf_event one
    msg = select(2, perf.stat({ cgroup = "/tmp" }, "task-clock", { duration = 0.01 }))
    assert.are.equal(("perf.stat: no cgroup /tmp (%s/tmp is no directory)"):format(root), msg)
    local other
    for line in require("perf.util.fs").read("/proc/self/mounts"):gmatch("[^\n]+") do
      local dir, opts = line:match("^%S+ (%S+) cgroup (%S+)")
      if dir and not other and not ("," .. opts .. ","):find(",perf_event,", 1, true) then other = dir end
    end
    if other then
      msg = select(2, perf.stat({ cgroup = other }, "task-clock", { duration = 0.01 }))
      assert.matches("; here that is " .. root, msg, 1, true)
    end
  end)

  it("names the directory a missing cgroup would have", function()
    local msg, errno = H.fails(perf.open("task-clock", { cgroup = "no_such_cgroup_here", cpu = 0 }))
    assert.are.equal(2, errno)
    assert.are.equal(('perf.open: cgroup "no_such_cgroup_here": No such file or directory (ENOENT); '
      .. "give the cgroup's directory; the perf_event cgroups here are under %s (e.g. %s/no_such_cgroup_here)")
      :format(root, root), msg)
    msg = select(2, perf.stat({ cgroup = "no_such_cgroup_here" }, "task-clock", { duration = 0.01 }))
    assert.are.equal(("perf.stat: no cgroup no_such_cgroup_here (%s/no_such_cgroup_here is no directory)")
      :format(root), msg)
  end)
end)
