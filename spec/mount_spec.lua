-- csrc/mount.c: perf.core.mount, the one system call behind mounting
-- tracefs where it is missing; mounts checked in /proc/self/mounts.
local core = require "perf.core"
local H = require "helpers"

-- A fresh empty directory.
local function tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir " .. dir))
  return dir
end

-- The file system type mounted on `dir` and its source, from /proc/self/mounts.
local function mounted(dir)
  for line in io.lines("/proc/self/mounts") do
    local src, at, kind = line:match("^(%S+) (%S+) (%S+)")
    if at == dir then return kind, src end
  end
end

describe("perf.core.mount", function()
  it("mounts a fresh tracefs as mount(8) shows it, holding the kernel's events", function()
    if H.sh("id -u") ~= "0\n" then return pending("mounting needs root") end
    local dir = tmpdir()
    assert.is_nil(mounted(dir))
    assert.same({ true }, { core.mount("tracefs", dir) })
    local kind, src = mounted(dir)
    local f = io.open(dir .. "/events/syscalls/sys_enter_openat/id")
    local id = f and math.tointeger(f:read("n"))
    if f then f:close() end
    assert(os.execute("umount " .. dir))
    os.execute("rmdir " .. dir)
    assert.same({ "tracefs", "nodev" }, { kind, src })
    assert.equal(H.tracepoint_id("syscalls", "sys_enter_openat"), id)
  end)

  it("says the mount point does not exist", function()
    local msg, errno = H.fails(core.mount("tracefs", "/nonexistent/perf-lua"))
    assert.equal(2, errno)
    assert.equal("mount -t tracefs nodev /nonexistent/perf-lua: No such file or directory (ENOENT); "
      .. "the mount point does not exist", msg)
  end)

  it("says the kernel has no such file system", function()
    if H.sh("id -u") ~= "0\n" then return pending("the kernel checks permission first") end
    local dir = tmpdir()
    local msg, errno = H.fails(core.mount("perflua-nofs", dir))
    os.execute("rmdir " .. dir)
    assert.equal(19, errno)
    assert.equal(("mount -t perflua-nofs nodev %s: No such device (ENODEV); "
      .. "this kernel has no such file system"):format(dir), msg)
    -- /proc/filesystems lists no such type either
    assert.equal("", H.sh("grep -w perflua-nofs /proc/filesystems"))
  end)

  it("says mounting needs root (child as nobody)", function()
    local out, why = H.run_as_nobody([[
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir " .. dir))
      print(require("perf.core").mount("tracefs", dir))
      os.execute("rmdir " .. dir)
    ]])
    if not out then return pending(why) end
    assert.matches("^nil\tmount %-t tracefs nodev %S+: Operation not permitted %(EPERM%); "
      .. "mounting needs root %(CAP_SYS_ADMIN%)\t1\n$", out)
  end)

  it("raises on arguments that are not strings", function()
    assert.has_error(function() core.mount(nil, "/tmp") end)
    assert.has_error(function() core.mount("tracefs") end)
  end)
end)
