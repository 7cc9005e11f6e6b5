-- perf.uprobe and the ELF symbol reader behind it.

local perf = require "perf"
local elf = require "perf.elf"
local uprobe = require "perf.uprobe"
local H = require "helpers"

-- this process's pid, from /proc/self/stat
local PID = (function()
  local f = assert(io.open("/proc/self/stat"))
  local pid = math.tointeger(f:read("n"))
  f:close()
  return pid
end)()

local caps = perf.capabilities()
local needs_uprobes = caps.uprobes and it or pending

local function sh(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  local out = p:read("a")
  p:close()
  return out
end

local have_binutils = sh("command -v nm readelf") ~= ""
local with_binutils = have_binutils and it or pending

local libc = assert(uprobe.find_binary("libc.so.6"), "libc is mapped into lua")

-- The file offset of a dynamic symbol by nm and readelf's program headers.
local function binutils_offset(path, name)
  local value
  for line in sh("nm -D --defined-only " .. path):gmatch("[^\n]+") do
    local v, n = line:match("^(%x+) %a (%S+)$")
    if n and (n == name or n:match("^" .. name .. "@")) then value = tonumber(v, 16) end
  end
  assert(value, name .. " not found by nm")
  for line in sh("readelf -lW " .. path):gmatch("[^\n]+") do
    local off, vaddr, filesz = line:match("^%s*LOAD%s+0x(%x+)%s+0x(%x+)%s+0x%x+%s+0x(%x+)")
    if off then
      off, vaddr, filesz = tonumber(off, 16), tonumber(vaddr, 16), tonumber(filesz, 16)
      if value >= vaddr and value < vaddr + filesz then return value - vaddr + off end
    end
  end
end

local function count(ev, fn)
  assert(ev:reset())
  assert(ev:enable())
  fn()
  assert(ev:disable())
  return (ev:read())
end

describe("perf.elf", function()
  it("reads the header of a 64-bit little-endian shared object", function()
    local e = assert(elf.open(libc))
    assert.same({ 64, "<", 3 }, { e.bits, e.endian, e.type })   -- ET_DYN
    assert.is_true(#e.segments > 0)
  end)

  with_binutils("agrees with nm and readelf on symbol file offsets", function()
    local e = assert(elf.open(libc))
    for _, name in ipairs { "getenv", "malloc", "fopen", "qsort" } do
      local s = assert(e:symbol(name))
      assert.equal(binutils_offset(libc, name), s.offset, name)
      assert.equal("func", s.type)
      assert.equal("global", s.bind)
    end
    local lua = assert(uprobe.find_binary("lua5.4"))
    local l = assert(elf.open(lua))
    assert.equal(binutils_offset(lua, "lua_pushinteger"), l:symbol("lua_pushinteger").offset)
  end)

  it("looks up versioned names and reports missing ones", function()
    local e = assert(elf.open(libc))
    assert.equal(e:symbol("getenv").offset, e:symbol("getenv@@GLIBC_2.2.5").offset)
    assert.same({ nil, libc .. " has no symbol 'no_such_symbol'" }, { e:symbol("no_such_symbol") })
  end)

  it("refuses files that are not ELF", function()
    local tmp = os.tmpname()
    local f = io.open(tmp, "w"); f:write("#!/bin/sh\n"); f:close()
    assert.same({ nil, tmp .. ": not an ELF file", 8 }, { elf.open(tmp) })
    os.remove(tmp)
    local _, msg, errno = elf.open("/no/such/file")
    assert.equal(2, errno)
    assert.matches("No such file", msg)
  end)
end)

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
    local attr = assert(uprobe.attr(perf, "libc.so.6", "strlen"))
    assert.are_not.equal(resolver.offset, attr.probe_offset)
    assert.equal(uprobe.ifunc_target(perf, libc, "strlen"), attr.probe_offset)
  end)

  it("builds the uprobe PMU's attr", function()
    local p = require("perf.pmu").find("uprobe")
    if not p then return pending("no uprobe PMU") end
    local attr, target = assert(uprobe.attr(perf, libc, "getenv", { pid = 0, sample_type = { "ip" } }))
    assert.same({ type = p.type, config = 0, uprobe_path = libc,
      probe_offset = assert(elf.open(libc)):symbol("getenv").offset, sample_period = 1,
      exclude_kernel = true, exclude_hv = true,
      sample_type = { "ip" }, name = "uprobe:libc.so.6:getenv" }, attr)
    assert.same({ pid = 0 }, target)
  end)

  it("returns nil, message, errno for unknown symbols and binaries", function()
    local msg, errno = H.fails(perf.uprobe("libc", "getenvv"))
    assert.equal(2, errno)
    assert.matches("has no symbol 'getenvv' %(did you mean getenv", msg)
    msg = H.fails(perf.uprobe("no-such-binary-anywhere", "main"))
    assert.matches("no binary 'no%-such%-binary%-anywhere'", msg)
    msg = H.fails(perf.uprobe("/no/such/file", "main"))
    assert.matches("no file /no/such/file", msg)
  end)

  it("say an unprivileged user needs CAP_PERFMON (child as nobody)", function()
    local function sh(cmd) local p = io.popen(cmd) local o = p:read("a") p:close() return o end
    if sh("id -u") ~= "0\n" or sh("command -v setpriv") == "" then
      return pending("needs root and setpriv to run a child as nobody")
    end
    local dir = os.tmpname()
    os.remove(dir)
    local cpath = (os.getenv("PERF_LUA_CPATH") or "./?.so"):gsub("%?%.so$", "")
    assert(os.execute(("mkdir -p %s && cp -r lua %s/ && cp -r %sperf %s/ && chmod -R a+rX %s")
      :format(dir, dir, cpath == "./" and "" or cpath, dir, dir)))
    local out = H.run_lua([[
      local perf = require "perf"
      print(perf.uprobe("libc.so.6", "getenv"))
    ]], "setpriv --reuid=65534 --regid=65534 --clear-groups", dir)
    os.execute("rm -rf " .. dir)
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
