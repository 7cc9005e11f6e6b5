-- perf.elf: the symbol tables of ELF files, checked against binutils (nm,
-- readelf), against this process's memory, and on files made here for
-- each class and byte order.
local elf = require "perf.elf"
local core = require "perf.core"
local uprobe = require "perf.event.uprobe"
local H = require "helpers"

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

  it("finds the symbols stripped from libc in its debug file, by build id", function()
    local e = assert(elf.open(libc))
    local id = sh("readelf -n " .. libc):match("Build ID: (%x+)")
    if have_binutils then assert.equal(id, e.build_id) end
    if not e.debug_file then pending("libc's debug file is not installed (make deps installs libc6-dbg)") return end
    assert.equal(("/usr/lib/debug/.build-id/%s/%s.debug"):format(e.build_id:sub(1, 2), e.build_id:sub(3)), e.debug_file)
    local sym = assert(e:symbol("_int_malloc"))             -- a local function, only in .symtab
    assert.equal("local", sym.bind)
    assert.equal("_int_malloc", e:symbol_at(sym.value + 1).name)
    -- of aliases at one address, the name perf gives: malloc, not __libc_malloc
    assert.equal("malloc", e:symbol_at(assert(e:symbol("__libc_malloc")).value).name)
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

-- nm's symbols of `path` (`flags`: "-D" for the dynamic table), each
-- { value =, size =, letter =, name = (without a version) }.
local function nm(flags, path)
  local out = {}
  for line in sh(("nm -S --defined-only %s %s"):format(flags, path)):gmatch("[^\n]+") do
    local v, size, letter, name = line:match("^(%x+) (%x+) (%a) (%S+)$")
    if not v then
      v, letter, name = line:match("^(%x+) (%a) (%S+)$")
    end
    if v then
      out[#out + 1] = { value = tonumber(v, 16), size = size and tonumber(size, 16) or 0,
        letter = letter, name = name:match("^[^@]+") }
    end
  end
  return out
end

-- What nm's letter says of a symbol's binding: upper case is global, w/W
-- and v/V weak, u unique, other lower case letters local; i (an IFUNC) says
-- nothing of it.
local function nm_bind(letter)
  if letter == "i" then return nil end
  if letter == "u" then return "unique" end
  if letter:match("[wWvV]") then return "weak" end
  return letter:match("%u") and "global" or "local"
end

-- `n` bytes of this process's memory at `addr`, through /proc/self/mem.
local function peek(addr, n)
  local f = assert(io.open("/proc/self/mem", "rb"))
  assert(f:seek("set", addr))
  local s = f:read(n)
  f:close()
  return s
end

-- `n` bytes of file `path` at offset `off`.
local function file_bytes(path, off, n)
  local f = assert(io.open(path, "rb"))
  f:seek("set", off)
  local s = f:read(n)
  f:close()
  return s
end

describe("perf.elf against binutils and this process", function()
  with_binutils("reads libc's dynamic symbols as nm -D lists them: names, values, binding", function()
    local e = assert(elf.open(libc))
    local listed, once = {}, {}
    for _, s in ipairs(nm("-D", libc)) do
      listed[s.name] = true
      once[s.name] = once[s.name] == nil and s or false        -- several versions: skip
    end
    local names = {}
    for name in pairs(listed) do names[#names + 1] = name end
    table.sort(names)
    assert.is_true(#names > 1000)
    assert.same(names, e:names())
    local checked = 0
    for name, s in pairs(once) do
      if s and s.letter ~= "A" then
        local list = e.symbols[name]
        assert.equal(1, #list, name)
        assert.same({ s.value, s.size, nm_bind(s.letter) or list[1].bind },
          { list[1].value, list[1].size, list[1].bind }, name)
        assert.equal(s.letter == "i", list[1].type == "ifunc", name)
        checked = checked + 1
      end
    end
    assert.is_true(checked > 1000)
  end)

  with_binutils("reads .symtab, local symbols included, from a library built here", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local c = assert(io.open(dir .. "/t.c", "w"))
    c:write([[
static int hidden_counter = 5;
static int zeroed;
static int helper(int x) { return x * 3 + hidden_counter + zeroed++; }
int visible(int x) { return helper(x) + 1; }
__attribute__((weak)) int maybe(void) { return 2; }
int table[64] = { 1 };
]])
    c:close()
    local so = dir .. "/t.so"
    assert(os.execute(("cc -O0 -g -shared -fPIC -o %s %s/t.c"):format(so, dir)))
    local e = assert(elf.open(so))
    local want = {}
    for _, s in ipairs(nm("", so)) do want[s.name] = want[s.name] or s end
    for name, kind in pairs { helper = "func", hidden_counter = "object", visible = "func",
                              maybe = "func", table = "object" } do
      local s = assert(e:symbol(name), name)
      assert.same({ want[name].value, want[name].size, nm_bind(want[name].letter), kind },
        { s.value, s.size, s.bind, s.type }, name)
    end
    assert.equal("local", e:symbol("helper").bind)
    -- .bss takes no room in the file: no offset to give
    assert.same({ nil, ("%s: symbol 'zeroed' (0x%x) is in no loadable segment"):format(so, want.zeroed.value) },
      { e:symbol("zeroed") })
    assert.equal("weak", e:symbol("maybe").bind)
    assert.equal(256, e:symbol("table").size)
    -- the extent of each function, as nm -S gives it
    local v = want.visible
    assert.equal("visible", e:symbol_at(v.value).name)
    assert.equal("visible", e:symbol_at(v.value + v.size - 1).name)
    local after = e:symbol_at(v.value + v.size)
    assert.is_true(after == nil or after.value >= v.value + v.size)
    os.execute("rm -rf " .. dir)
  end)

  it("gives file offsets whose bytes are the code this process runs", function()
    local e = assert(elf.open(libc))
    for _, name in ipairs { "getenv", "qsort", "fopen" } do
      local s = assert(e:symbol(name))
      -- libc's own (a sanitizer build's runtime intercepts qsort and fopen)
      local addr = assert(core.symbol(name, "libc.so.6"))
      assert.equal(file_bytes(libc, s.offset, 32), peek(addr, 32), name)
      assert.equal(s.value, e:vaddr_of(s.offset))
    end
  end)

  it("locates an address of this process: file, offset and symbol", function()
    local e = assert(elf.open(libc))
    local s = assert(e:symbol("getenv"))
    local addr = assert(core.symbol("getenv", "libc.so.6"))
    local w = assert(elf.locate(addr + 5))
    assert.same({ s.offset + 5, "getenv", 5 }, { w.offset, w.symbol, w.symbol_offset })
    assert.equal(sh("readlink -f " .. libc), sh("readlink -f " .. w.file))
    assert.equal("getenv+0x5", elf.describe(addr + 5))
    -- a Lua string lives in no file
    local heap = core.addressof(string.rep("x", 64))
    assert.is_nil(elf.locate(heap))
    assert.equal(("0x%x"):format(heap), elf.describe(heap))
    -- a process that is gone has no mappings
    local gone = math.tointeger(tonumber(sh("sh -c 'echo $$'")))
    assert.is_nil(elf.locator(gone)(addr))
  end)

  it("says why a file cannot be read", function()
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "wb"))
    f:write("\127ELF\2\1\1" .. ("\0"):rep(12))               -- the ident, then 3 bytes
    f:close()
    assert.same({ nil, tmp .. ": truncated ELF header", core.errno.ENOEXEC }, { elf.open(tmp) })
    f = assert(io.open(tmp, "wb"))
    f:write("\127ELF\3\1\1" .. ("\0"):rep(60))               -- class 3 is neither 32 nor 64
    f:close()
    assert.same({ nil, tmp .. ": unknown ELF class or byte order", core.errno.ENOEXEC }, { elf.open(tmp) })
    os.remove(tmp)
    -- a directory opens, but reads nothing
    assert.same({ nil, "/proc/self: not an ELF file", core.errno.ENOEXEC }, { elf.open("/proc/self") })
  end)
end)
