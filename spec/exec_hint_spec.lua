-- csrc/exec_hint.c: the advice after "cannot run" when a command's exec
-- fails: a missing #! interpreter or ELF loader named, DOS line endings,
-- files that are not executable. Errors come from the kernel's execve.
local perf = require "perf"
local H = require "helpers"

describe("the hint of a command that cannot run", function()
  it("names the interpreter a file needs when that is what does not exist", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local function script(name, text)
      local f = assert(io.open(dir .. "/" .. name, "w"))
      f:write(text)
      f:close()
      assert(os.execute(("chmod 755 %s/%s"):format(dir, name)))
      return dir .. "/" .. name
    end
    local bad = script("bad", "#!  /nonexistent/interp -x\necho hi\n")
    local dos = script("dos", "#!/bin/sh\r\necho hi\r\n")
    -- an ELF whose loader (PT_INTERP) is renamed to one that does not exist
    local elf = io.open("/bin/true", "rb"):read("a")
    local n
    elf, n = elf:gsub("(/lib[%w_/%-]*/ld%-[%w_%.%-]+)%z", function(p) return p:sub(1, -2) .. "Q\0" end, 1)
    assert.are.equal(1, n)
    local noloader = script("noloader", elf)
    local r, msg, errno = perf.stat({ bad }, "task-clock")
    assert.is_nil(r)
    assert.are.equal(2, errno)
    assert.are.equal(('perf.stat: cannot run "%s": No such file or directory (ENOENT); bad interpreter: '
      .. '%s names /nonexistent/interp on its #! line, which does not exist'):format(bad, bad), msg)
    msg = select(2, perf.stat({ dos }, "task-clock"))
    assert.matches("#! line ends with a carriage return (DOS line endings)", msg, 1, true)
    msg = select(2, perf.stat({ noloader }, "task-clock"))
    assert.matches(noloader .. " exists, but its ELF interpreter (the dynamic loader it names) does not", msg, 1, true)
    -- found in PATH: the file found is named
    local out = H.run_lua([[print(select(2, require("perf").stat({ "bad" }, "task-clock")))]],
      "PATH=" .. dir .. ":$PATH")
    assert.matches(('cannot run "bad": No such file or directory (ENOENT); bad interpreter: %s names'):format(bad),
      out, 1, true)
    -- as before where nothing exists
    msg = select(2, perf.stat({ dir .. "/none" }, "task-clock"))
    assert.matches("ENOENT); no such file", msg, 1, true)
    os.execute("rm -rf " .. dir)
  end)

  it("says a file without execute permission, or a directory, is not executable", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local f = assert(io.open(dir .. "/plain", "w"))
    f:write("#!/bin/sh\necho hi\n")
    f:close()
    for _, path in ipairs { dir .. "/plain", dir } do
      local r, msg, errno = perf.stat({ path }, "task-clock")
      assert.is_nil(r)
      assert.equal(13, errno)
      assert.equal(('perf.stat: cannot run "%s": Permission denied (EACCES); not an executable file '
        .. "(or a directory, or on a noexec mount)"):format(path), msg)
    end
    -- the shell is refused the same way
    assert.equal(126, select(3, os.execute(dir .. "/plain 2>/dev/null")))
    os.execute("rm -rf " .. dir)
  end)

  it("gives no hint where the kernel's error says it all", function()
    local r, msg, errno = perf.stat({ "/etc/passwd/x" }, "task-clock")
    assert.is_nil(r)
    assert.equal(20, errno)
    assert.equal('perf.stat: cannot run "/etc/passwd/x": Not a directory (ENOTDIR)', msg)
  end)

  it("names a missing interpreter for perf.record too", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local f = assert(io.open(dir .. "/tool", "w"))
    f:write("#!/nonexistent/bin/python9\n")
    f:close()
    assert(os.execute("chmod 755 " .. dir .. "/tool"))
    local r, msg, errno = perf.record({ dir .. "/tool" }, "task-clock")
    assert.is_nil(r)
    assert.equal(2, errno)
    assert.matches(("bad interpreter: %s/tool names /nonexistent/bin/python9 on its #! line, which does not exist")
      :format(dir), msg, 1, true)
    os.execute("rm -rf " .. dir)
  end)
end)
