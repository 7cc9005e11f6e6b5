-- perf.uprobe: probes on the functions of ELF files (the symbol reader,
-- perf.elf, has its own spec).

local perf = require "perf"
local elf = require "perf.elf"
local uprobe = require "perf.event.uprobe"
local H = require "helpers"

local PID = H.PID

local caps = perf.capabilities()
local needs_uprobes = caps.uprobes and it or pending

local sh = H.sh

local libc = assert(uprobe.find_binary("libc.so.6"), "libc is mapped into lua")

local count = H.count

describe("perf.uprobe", function()
  needs_uprobes("counts the calls of a libc function exactly", function()
    local ev <close> = assert(perf.uprobe("libc.so.6", "getenv"))
    assert.equal("uprobe:libc.so.6:getenv", ev:name())
    for _, n in ipairs { 1, 12, 300 } do
      assert.equal(n, count(ev, function()
        for _ = 1, n do os.getenv("PERF_UPROBE_SPEC") end
      end))
    end
  end)

  needs_uprobes("samples each call at the function's address", function()
    local ev <close> = assert(perf.uprobe("libc", "getenv", { sample_type = { "ip", "tid" } }))
    local rb <close> = assert(ev:mmap(8))
    assert.equal(9, count(ev, function() for _ = 1, 9 do os.getenv("X") end end))
    local n = 0
    for rec in rb:records() do
      n = n + 1
      assert.same({ perf.symbol("getenv"), PID }, { rec.ip, rec.pid })
    end
    assert.equal(9, n)
  end)

  needs_uprobes("counts returns with ret = true", function()
    local ev <close> = assert(perf.uprobe("libc", "getenv", { ret = true }))
    assert.equal("uretprobe:libc.so.6:getenv", ev:name())
    assert.equal(1, ev:attr().config)
    assert.equal(25, count(ev, function() for _ = 1, 25 do os.getenv("X") end end))
  end)

  needs_uprobes("takes a file offset, a full path, and sym+offset", function()
    local off = assert(elf.open(libc)):symbol("getenv").offset
    local ev <close> = assert(perf.uprobe(libc, off))
    assert.equal(("uprobe:libc.so.6:0x%x"):format(off), ev:name())
    assert.equal(7, count(ev, function() for _ = 1, 7 do os.getenv("X") end end))
    local ev0 <close> = assert(perf.uprobe(libc, "getenv+0"))
    assert.equal(3, count(ev0, function() for _ = 1, 3 do os.getenv("X") end end))
  end)

  needs_uprobes("probes the implementation an IFUNC chose in this process", function()
    local e = assert(elf.open(libc))
    local resolver = e:symbol("strlen")
    if resolver.type ~= "ifunc" then return pending("strlen is not an IFUNC here") end
    local attr = assert(uprobe.attr("libc.so.6", "strlen"))
    assert.are_not.equal(resolver.offset, attr.probe_offset)
    assert.equal(uprobe.ifunc_target(libc, "strlen"), attr.probe_offset)
  end)

  it("builds the uprobe PMU's attr", function()
    local p = require("perf.event.pmu").find("uprobe")
    if not p then return pending("no uprobe PMU") end
    local attr, target = assert(uprobe.attr(libc, "getenv", { pid = 0, sample_type = { "ip" } }))
    assert.same({ type = p.type, config = 0, uprobe_path = libc,
      probe_offset = assert(elf.open(libc)):symbol("getenv").offset, sample_period = 1,
      exclude_kernel = true, exclude_hv = true,
      sample_type = { "ip" }, name = "uprobe:libc.so.6:getenv" }, attr)
    assert.same({ pid = 0 }, target)
  end)

  it("returns nil, message, errno for unknown symbols and binaries", function()
    local msg, errno = H.fails(perf.uprobe("libc", "getenvv"))
    assert.equal(2, errno)
    assert.matches("has no symbol 'getenvv' %(did you mean 'getenv'", msg)
    msg = H.fails(perf.uprobe("no-such-binary-anywhere", "main"))
    assert.matches("no binary 'no%-such%-binary%-anywhere'", msg)
    msg = H.fails(perf.uprobe("/no/such/file", "main"))
    assert.matches("no file /no/such/file", msg)
  end)

  it("say an unprivileged user needs CAP_PERFMON (child as nobody)", function()
    local out, why = H.run_as_nobody([[
      local perf = require "perf"
      print(perf.uprobe("libc.so.6", "getenv"))
    ]])
    if not out then return pending(why) end
    assert.matches("^nil\tperf.open \"uprobe:libc.so.6:getenv\": Permission denied %(EACCES%).-CAP_PERFMON.-\t13\n$", out)
  end)

  it("raises on misuse", function()
    assert.has_error(function() perf.uprobe(42, "x") end,
      "perf.uprobe: expected the binary's path or name, got number")
    assert.has_error(function() perf.uprobe("libc", 1.5) end,
      "perf.uprobe: expected a symbol name or a file offset, got float")
    assert.has_error(function() perf.uprobe("libc", -1) end,
      "perf.uprobe: a file offset cannot be negative")
    assert.has_error(function() perf.uprobe("libc", "getenv", true) end,
      "perf.uprobe: options must be a table, not boolean")
  end)
end)

describe("inherited uprobes", function()
  local function probes_of_ours()
    local f = io.open(perf.core and "/sys/kernel/tracing/uprobe_events")
    local text = f and f:read("a") or ""
    if f then f:close() end
    local n = 0
    for _ in text:gmatch("perf_lua_" .. PID .. "/") do n = n + 1 end
    return n
  end

  local argv = { "sh", "-c", "ls / >/dev/null; echo ok" }

  -- perf stat of the same command with perf's own probe of getenv, and the
  -- count of that probe given to perf.stat in perf's syntax
  local function perf_tool_count()
    if sh("command -v perf") == "" then return nil end
    local path = assert(uprobe.find_binary("libc.so.6"))
    sh("perf probe -q -d probe_libc:getenv; perf probe -q -x " .. path .. " getenv")
    local ok, theirs, ours = pcall(function()
      local p = io.popen("perf stat -x, -e probe_libc:getenv sh -c 'ls / >/dev/null; echo ok' 2>&1 >/dev/null")
      local out = p:read("a")
      p:close()
      local r = assert(perf.stat(argv, "probe_libc:getenv", { stdout = "/dev/null" }))
      return math.tointeger(tonumber(out:match("^(%d+),"))), r["probe_libc:getenv"]
    end)
    sh("perf probe -q -d probe_libc:getenv")
    assert(ok, theirs)
    return theirs, ours
  end

  needs_uprobes("count a command's calls through tracefs as perf does, and leave no probe behind", function()
    local out = os.tmpname()
    local r = assert(perf.stat(argv, { perf.uprobe("libc.so.6", "getenv"), "task-clock" },
      { stdout = out }))
    local f = assert(io.open(out))
    local text = f:read("a")
    f:close()
    os.remove(out)
    assert.equal("ok\n", text)                      -- the command forked and ran
    assert.equal(0, r.status)
    assert.equal("uprobe:libc.so.6:getenv", r.events[1].name)
    assert.equal(0, probes_of_ours())
    local theirs, ours = perf_tool_count()
    if not theirs then return pending("perf is not installed") end
    assert.is_true(theirs > 0)
    assert.equal(theirs, r[1])                      -- perf stat with perf probe
    assert.equal(theirs, ours)                      -- perf's syntax, "probe_libc:getenv"
    -- an attr read back from an event is made the same way
    r = assert(perf.stat(argv, { perf.uprobe("libc.so.6", "getenv"):attr() }, { stdout = "/dev/null" }))
    assert.equal(theirs, r[1])
    assert.equal(0, probes_of_ours())
  end)

  needs_uprobes("work with perf.open and perf.group, and go once the event is closed", function()
    local ev = assert(perf.uprobe("libc.so.6", "getenv", { inherit = true }))
    assert.equal(1, probes_of_ours())
    assert.equal(2, ev:attr().type)                 -- a tracepoint
    assert(ev:enable())
    os.getenv("HOME") os.getenv("PATH")
    assert(ev:disable())
    assert.equal(2, (ev:read()))
    ev:close()
    ev = nil                                        -- luacheck: ignore
    collectgarbage() collectgarbage()
    assert.equal(0, probes_of_ours())
    local a = perf.uprobe("libc.so.6", "getenv"):attr()
    a.inherit = true
    local g = assert(perf.group { { "task-clock", inherit = true }, a })
    assert.equal(1, probes_of_ours())
    g:close()
    uprobe.sweep()
    assert.equal(0, probes_of_ours())
  end)
end)
