-- perf.uprobe and the ELF symbol reader behind it.

local perf = require "perf"
local elf = require "perf.elf"
local uprobe = require "perf.uprobe"
local H = require "helpers"

local PID = H.PID

local caps = perf.capabilities()
local needs_uprobes = caps.uprobes and it or pending

local sh = H.sh

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

local count = H.count

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

-- A small ELF file: one loadable segment at vaddr 0x10000 (file offset 0),
-- .dynstr, .dynsym and .shstrtab, for either class and byte order.
local function synth_elf(bits, endian, syms)
  local A = bits == 64 and "I8" or "I4"
  local E = endian
  local function pack(fmt, ...) return string.pack(E .. fmt, ...) end
  local dynstr, names = "\0", {}
  for i, s in ipairs(syms) do names[i] = #dynstr; dynstr = dynstr .. s.name .. "\0" end
  local shstr = "\0.dynstr\0.dynsym\0.shstrtab\0"
  local symtab = bits == 64 and pack("I4BBI2I8I8", 0, 0, 0, 0, 0, 0) or pack("I4I4I4BBI2", 0, 0, 0, 0, 0, 0)
  for i, s in ipairs(syms) do
    local info = (s.bind or 1) << 4 | (s.type or 2)
    symtab = symtab .. (bits == 64 and pack("I4BBI2I8I8", names[i], info, 0, 1, s.value, s.size or 16)
      or pack("I4I4I4BBI2", names[i], s.value, s.size or 16, info, 0, 1))
  end
  local ehsize, phsize = bits == 64 and 64 or 52, bits == 64 and 56 or 32
  local shsize = bits == 64 and 64 or 40
  local off_dynstr = ehsize + phsize
  local off_dynsym = off_dynstr + #dynstr
  local off_shstr = off_dynsym + #symtab
  local off_sh = off_shstr + #shstr
  local ident = "\127ELF" .. string.char(bits == 64 and 2 or 1, E == "<" and 1 or 2, 1) .. ("\0"):rep(9)
  local ehdr = ident .. pack("I2I2I4" .. A .. A .. A .. "I4I2I2I2I2I2I2", 3, 62, 1, 0, ehsize,
    off_sh, 0, ehsize, phsize, 1, shsize, 4, 3)
  local phdr = bits == 64 and pack("I4I4I8I8I8I8I8I8", 1, 5, 0, 0x10000, 0x10000, 0x1000, 0x1000, 0x1000)
    or pack("I4I4I4I4I4I4I4I4", 1, 0, 0x10000, 0x10000, 0x1000, 0x1000, 5, 0x1000)
  local function shdr(name, type_, off, size, link, info, entsize)
    return bits == 64 and pack("I4I4I8I8I8I8I4I4I8I8", name, type_, 0, 0, off, size, link, info, 1, entsize)
      or pack("I4I4I4I4I4I4I4I4I4I4", name, type_, 0, 0, off, size, link, info, 1, entsize)
  end
  local shdrs = shdr(0, 0, 0, 0, 0, 0, 0) .. shdr(1, 3, off_dynstr, #dynstr, 0, 0, 0)
    .. shdr(9, 11, off_dynsym, #symtab, 1, 1, bits == 64 and 24 or 16)
    .. shdr(17, 3, off_shstr, #shstr, 0, 0, 0)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(ehdr, phdr, dynstr, symtab, shstr, shdrs)
  f:close()
  return path
end

describe("perf.elf on synthesized files", function()
  local syms = {
    { name = "alpha", value = 0x10100 },
    { name = "beta", value = 0x10280, type = 10 },            -- an IFUNC
    { name = "dup", value = 0x10400, type = 1, bind = 0 },    -- a local object
    { name = "dup", value = 0x10500 },                        -- a global function
  }
  for _, c in ipairs { { 64, "<" }, { 32, "<" }, { 64, ">" }, { 32, ">" } } do
    it(("reads ELF%d %s-endian symbols and file offsets"):format(c[1], c[2] == "<" and "little" or "big"), function()
      local path = synth_elf(c[1], c[2], syms)
      local e = assert(elf.open(path))
      os.remove(path)
      assert.same({ c[1], c[2], 3, 62 }, { e.bits, e.endian, e.type, e.machine })
      local a = assert(e:symbol("alpha"))
      assert.same({ 0x10100, 0x100, "func", "global", 16 }, { a.value, a.offset, a.type, a.bind, a.size })
      assert.same({ 0x280, "ifunc" }, { e:symbol("beta").offset, e:symbol("beta").type })
      assert.same({ 0x500, "func" }, { e:symbol("dup").offset, e:symbol("dup").type })
      assert.equal("alpha", e:symbol_at(0x10104).name)
      assert.is_nil(e:symbol_at(0x10110))                      -- past alpha's 16 bytes
      assert.same({ "alpha", "beta", "dup" }, e:names())
    end)
  end
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
