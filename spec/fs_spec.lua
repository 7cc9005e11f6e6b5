-- perf.fs: the small reads of sysfs, tracefs and procfs, checked against
-- what the shell and the C library see.
local fs = require "perf.util.fs"
local H = require "spec.helpers"

-- A fresh temporary directory holding `names` (files), removed by the caller.
local function tmpdir(names)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir " .. dir))
  for _, name in ipairs(names) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(name)
    f:close()
  end
  return dir
end

-- perf.fs loaded again with the C core hidden: the `ls` fallback.
local function fs_without_core()
  local saved_core, saved_fs = package.loaded["perf.core"], package.loaded["perf.util.fs"]
  package.loaded["perf.core"], package.loaded["perf.util.fs"] = {}, nil
  local ok, m = pcall(require, "perf.util.fs")
  package.loaded["perf.core"], package.loaded["perf.util.fs"] = saved_core, saved_fs
  assert(ok, m)
  return m
end

describe("perf.fs", function()
  it("reads a whole file, and a file trimmed", function()
    local dir = tmpdir {}
    local path = dir .. "/f"
    local f = assert(io.open(path, "w"))
    f:write("  \t42 43\n\n")
    f:close()
    assert.equal("  \t42 43\n\n", fs.read(path))
    assert.equal("42 43", fs.read_trimmed(path))
    -- procfs: the same as the shell reads
    assert.equal(H.sh("cat /proc/sys/kernel/perf_event_paranoid"), fs.read("/proc/sys/kernel/perf_event_paranoid"))
    os.execute("rm -rf " .. dir)
  end)

  it("gives nil for a file that cannot be read", function()
    assert.is_nil(fs.read("/nonexistent/perf-lua"))
    assert.is_nil(fs.read_trimmed("/nonexistent/perf-lua"))
  end)

  it("lists a directory sorted, without . and .., as ls -A does", function()
    local names = { "b", "a c", ".hidden", "it's", "Z" }
    local dir = tmpdir(names)
    table.sort(names)
    assert.same(names, fs.listdir(dir))
    -- a system directory, against ls
    local want = {}
    for line in H.sh("ls -1A /sys/bus/event_source/devices"):gmatch("[^\n]+") do want[#want + 1] = line end
    table.sort(want)
    assert.is_true(#want > 0)
    assert.same(want, fs.listdir("/sys/bus/event_source/devices"))
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("lists nothing for a missing directory or a file", function()
    assert.same({}, fs.listdir("/nonexistent/perf-lua"))
    assert.same({}, fs.listdir("/proc/self/stat"))
  end)

  it("lists the same through ls when the C core is missing, quotes included", function()
    local plain = fs_without_core()
    assert.are_not.equal(fs, plain)
    local names = { "b", "a c", ".hidden", "it's", "Z" }
    local dir = tmpdir(names)
    table.sort(names)
    assert.same(names, plain.listdir(dir))
    assert.same(fs.listdir("/sys/bus/event_source/devices"), plain.listdir("/sys/bus/event_source/devices"))
    assert.same({}, plain.listdir("/nonexistent/perf-lua"))
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("tells files and directories apart", function()
    assert.is_true(fs.exists("/proc/self/stat"))
    assert.is_true(fs.exists("/proc/self"))
    assert.is_false(fs.exists("/nonexistent/perf-lua"))
    assert.is_true(fs.isdir("/proc/self"))
    assert.is_false(fs.isdir("/proc/self/stat"))
    assert.is_false(fs.isdir("/nonexistent/perf-lua"))
  end)

  it("names the machine as uname -m does", function()
    assert.equal(H.sh("uname -m"):gsub("\n$", ""), fs.machine())
  end)

  it("writes a file whole or not at all: a file size limit leaves what was there", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. " && chmod 777 " .. dir))
    local path = dir .. "/out.txt"
    local f = assert(io.open(path, "w"))
    f:write("before\n")
    f:close()
    -- 2 blocks of 512 bytes at most; SIGXFSZ ignored, so write(2) fails with EFBIG
    local out = H.run_lua(([[
      local fs = require "perf.util.fs"
      print(fs.write_atomic(%q, string.rep("x", 100000)))
      print(fs.write_atomic(%q, "small\n"))
    ]]):format(path, dir .. "/small.txt"), "trap '' XFSZ; ulimit -f 2;")
    local listing = H.sh("ls " .. dir)
    local kept = H.read_file(path)
    local small = H.read_file(dir .. "/small.txt")
    os.execute("rm -rf " .. dir)
    assert.matches("^nil\t" .. path:gsub("%p", "%%%0") .. ": File too large\t27\ntrue\n$", out)
    assert.equal("before\n", kept)
    assert.equal("small\n", small)
    assert.equal("out.txt\nsmall.txt\n", listing)      -- no temporary file left
  end)
end)
