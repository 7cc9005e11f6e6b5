-- Merged rings: argument checks of the ring-side calls, and perf-lua
-- record (perf.cpus has its own spec).
local perf = require "perf"
local H = require "helpers"

describe("argument checks", function()
  it("perf.core.poll and merge take lists of rings", function()
    assert.has_error(function() perf.core.poll({}) end)
    assert.has_error(function() perf.core.poll({ 1 }) end)
    assert.has_error(function() perf.core.merge({ {} }) end)
    local s = perf.core.stream("", { sample_type = { "ip" } })
    assert.has_error(function() perf.core.poll({ s }, -2) end)
    assert.has_error(function() perf.core.merge({ s }, "ip", 5) end)
  end)
end)

describe("bin/perf-lua record", function()
  it("profiles a command and names its threads and DSOs", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 3 -- sh -c 'head -c 20000000 /dev/urandom | gzip -1 > /dev/null' 2>&1")
    local out = p:read("a")
    p:close()
    local samples, lost = out:match("^(%d+) samples of cpu%-clock at 999 Hz on %d+ CPUs over [%d.]+ s, (%d+) lost\n")
    assert.truthy(samples, out)
    assert.is_true(tonumber(samples) > 0, out)
    assert.equal("0", lost)
    assert.matches("by command pid/tid:\n%s+[%d.]+%%%s+%d+%s+gzip %d+/%d+\n", out)
    assert.matches("by DSO:\n", out)
    assert.matches("by symbol:\n", out)
    assert.matches("%d+%s+gzip%s+%[%.%] 0x%x+\n", out)     -- gzip is stripped: offsets
  end)

  it("names symbols: the kernel's from kallsyms, a file's from its symbol table", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 5 -- env -u LD_PRELOAD dd if=/dev/zero of=/dev/null bs=1M count=2000 2>&1")
    local out = p:read("a")
    p:close()
    local ks = assert(require("perf.kallsyms").load())
    local named = 0
    for name in out:gmatch("%[kernel%]%s+%[k%] ([%w_.]+)\n") do
      assert.is_number(ks:address(name), name)
      named = named + 1
    end
    assert.is_true(named >= 1, out)
    -- with no command, its own Lua workload: table.sort in the interpreter
    p = io.popen(H.example .. " bin/perf-lua record -n 30")
    out = p:read("a")
    p:close()
    assert.matches("by symbol:\n", out)
    assert.matches("%d+%s+lua5%.4%s+%[%.%] lua_geti\n", out)
  end)

  it("samples the whole system with -a while the command runs", function()
    -- a busy process that is no child of the command: only -a samples it
    local bg = io.popen("sh -c 'dd if=/dev/zero of=/dev/null bs=1 2>/dev/null & echo $!'")
    local dd = math.tointeger(bg:read("n"))
    bg:close()
    finally(function() os.execute("kill " .. dd .. " 2>/dev/null") end)
    local p = io.popen(H.example .. " bin/perf-lua record -a -n 50 -- env -u LD_PRELOAD sh -c "
      .. "'sleep 0.2; head -c 5000000 /dev/urandom | gzip -1 >/dev/null' 2>&1")
    local out = p:read("a")
    p:close()
    local samples = out:match("^(%d+) samples of cpu%-clock at 999 Hz on %d+ CPUs")
    assert.truthy(samples, out)
    assert.matches(("%%d+%%s+dd %d/%d\n"):format(dd, dd), out)
    assert.matches("%d+%s+gzip %d+/%d+\n", out)
    -- an idle CPU's samples (pid 0), where there are any, as perf names them
    for row in out:gmatch("[^\n]* 0/0\n") do assert.matches("%d+%s+swapper 0/0\n$", row) end
    p = io.popen(H.example .. " bin/perf-lua record -a 2>&1")
    out = p:read("a")
    local ok, how, code = p:close()
    assert.same({ false, "exit", 129 }, { ok or false, how, code })
    assert.matches("%-a samples the whole system while a command runs", out)
  end)

  it("leaves the command's output alone and says when it cannot run", function()
    local p = io.popen(H.example .. " bin/perf-lua record -n 1 -- echo hello 2>/dev/null")
    local out = p:read("a")
    p:close()
    assert.matches("^hello\n%d+ samples of cpu%-clock", out)
    p = io.popen(H.example .. " bin/perf-lua record -- /no/such/program 2>&1")
    out = p:read("a")
    local ok, how, code = p:close()
    assert.same({ false, "exit", 255 }, { ok or false, how, code })      -- perf record's
    assert.equal('cannot run "/no/such/program": No such file or directory (ENOENT); no such file\n', out)
  end)
end)
