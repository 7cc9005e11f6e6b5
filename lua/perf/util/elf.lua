-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

--- perf.elf: the symbol tables of an ELF file, enough to place a uprobe.
--
--     local elf = require "perf.elf"
--     local f = assert(elf.open "/lib/x86_64-linux-gnu/libc.so.6")
--     local sym = f:symbol "getenv"   --> { name, value, size, type, bind, offset }
--
-- Reads the ELF header, the section headers, .symtab and .dynsym, and the
-- program headers that map virtual addresses to file offsets. ELF32 and
-- ELF64, either byte order.
-- @module perf.elf

local E = require("perf.core").errno

local M = {}

local STT = { [0] = "notype", "object", "func", "section", "file", "common", "tls",
  [10] = "ifunc" }
local STB = { [0] = "local", "global", "weak", [10] = "unique" }
local SHT_SYMTAB, SHT_DYNSYM, SHT_NOTE, PT_LOAD = 2, 11, 7, 1
local NT_GNU_BUILD_ID = 3
-- where distributions install the symbols stripped from a file, by its
-- build id (.build-id/ab/cdef....debug), as perf and gdb look them up
M.debug_dir = "/usr/lib/debug"

local Elf = {}
Elf.__index = Elf

local function read_at(fh, off, n)
  fh:seek("set", off)
  local s = fh:read(n)
  if not s or #s < n then return nil end
  return s
end

-- The GNU build id (NT_GNU_BUILD_ID note) of the file, as hex, in
-- e.build_id (nil when it has none).
local opening_debug = false          -- M.open of a debug file: no further look-up

local function read_build_id(self)
  for _, s in pairs(self.sections) do
    if s.type == SHT_NOTE and s.size > 0 then
      local body = read_at(self.fh, s.offset, s.size) or ""
      local pos = 1
      while pos + 12 <= #body do
        local namesz, descsz, ntype = string.unpack(self.endian .. "I4I4I4", body, pos)
        local name_at = pos + 12
        local desc_at = name_at + ((namesz + 3) & ~3)
        if ntype == NT_GNU_BUILD_ID and body:sub(name_at, name_at + 3) == "GNU\0" then
          self.build_id = (body:sub(desc_at, desc_at + descsz - 1):gsub(".", function(c)
            return ("%02x"):format(c:byte())
          end))
          return
        end
        pos = desc_at + ((descsz + 3) & ~3)
      end
    end
  end
end

-- Adds the .symtab of the file's installed debug file (found by build id
-- under M.debug_dir), for a file stripped of it: libc's local functions
-- (_int_malloc) are named as perf report names them. Its symbols count
-- virtual addresses as the file's own.
local function load_debug_symbols(self)
  local id = self.build_id
  if #id < 3 then return end
  local path = ("%s/.build-id/%s/%s.debug"):format(M.debug_dir, id:sub(1, 2), id:sub(3))
  opening_debug = true
  local ok, d = pcall(M.open, path)
  opening_debug = false
  if not ok or not d or d.build_id ~= id then return end
  local syms = {}
  for name, list in pairs(d.symbols) do
    for _, sym in ipairs(list) do
      if sym.from == "symtab" and not self.symbols[name] then
        sym.from = "debug"
        syms[name] = syms[name] or {}
        table.insert(syms[name], sym)
      end
    end
  end
  self.debug_symbols, self.debug_file = syms, path
end

--- Opens and indexes an ELF file. Returns the object, or nil, message and
-- an errno-like number.
-- @string path the file
-- @treturn[1] Elf the indexed file
-- @return[2] nil, message, errno when it cannot be read or is no ELF file
-- @usage local e = assert(perf.elf.open "/bin/sh")
function M.open(path)
  local fh, err, code = io.open(path, "rb")
  if not fh then return nil, err, code end
  local ident = fh:read(16)
  if not ident or ident:sub(1, 4) ~= "\127ELF" then
    fh:close()
    return nil, path .. ": not an ELF file", E.ENOEXEC
  end
  local class, data = ident:byte(5), ident:byte(6)
  if (class ~= 1 and class ~= 2) or (data ~= 1 and data ~= 2) then
    fh:close()
    return nil, path .. ": unknown ELF class or byte order", E.ENOEXEC
  end
  local e = setmetatable({ path = path, bits = class == 2 and 64 or 32,
    endian = data == 1 and "<" or ">" }, Elf)
  local A = e.bits == 64 and "I8" or "I4"   -- addresses and offsets
  e.fmt = {
    ehdr = e.endian .. "I2I2I4" .. A .. A .. A .. "I4I2I2I2I2I2I2",
    shdr = e.endian .. (e.bits == 64 and "I4I4I8I8I8I8I4I4I8I8" or "I4I4I4I4I4I4I4I4I4I4"),
    phdr = e.endian .. (e.bits == 64 and "I4I4I8I8I8I8I8I8" or "I4I4I4I4I4I4I4I4"),
  }
  local hdr = read_at(fh, 16, e.bits == 64 and 48 or 36)
  if not hdr then fh:close() return nil, path .. ": truncated ELF header", 8 end
  local etype, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
    shstrndx = string.unpack(e.fmt.ehdr, hdr)
  e.type, e.machine = etype, machine

  e.segments = {}
  for i = 0, phnum - 1 do
    local ph = read_at(fh, phoff + i * phentsize, phentsize)
    if ph then
      local p = {}
      if e.bits == 64 then
        p.type, p.flags, p.offset, p.vaddr, _, p.filesz, p.memsz = string.unpack(e.fmt.phdr, ph)
      else
        p.type, p.offset, p.vaddr, _, p.filesz, p.memsz, p.flags = string.unpack(e.fmt.phdr, ph)
      end
      e.segments[#e.segments + 1] = p
    end
  end

  e.sections = {}
  for i = 0, shnum - 1 do
    local sh = read_at(fh, shoff + i * shentsize, shentsize)
    if sh then
      local s = {}
      s.name_off, s.type, s.flags, s.addr, s.offset, s.size, s.link, s.info, _, s.entsize =
        string.unpack(e.fmt.shdr, sh)
      e.sections[i] = s
    end
  end
  local names = e.sections[shstrndx]
  local strtab = names and read_at(fh, names.offset, names.size) or ""
  for i = 0, shnum - 1 do
    local s = e.sections[i]
    if s then
      s.name = strtab:match("^[^%z]*", s.name_off + 1)
    end
  end
  e.fh = fh
  local ok, msg = pcall(e.load_symbols, e)
  if ok then ok, msg = pcall(read_build_id, e) end
  fh:close()
  e.fh = nil
  if not ok then return nil, path .. ": " .. tostring(msg), 8 end
  if not e.has_symtab and e.build_id and not opening_debug then load_debug_symbols(e) end
  return e
end

--- An indexed ELF file (`perf.elf.open`).
-- @type Elf

--- Reads .symtab and .dynsym into e.symbols (name -> list of symbols);
-- a file without .symtab whose debug file is installed gets that file's
-- in e.debug_symbols (`symbol` and `symbol_at` look there too).
-- @return nothing
function Elf:load_symbols()
  self.symbols = {}
  local symsize = self.bits == 64 and 24 or 16
  for _, s in pairs(self.sections) do
    if (s.type == SHT_SYMTAB or s.type == SHT_DYNSYM) and s.size > 0 then
      local link = self.sections[s.link]
      local strs = link and read_at(self.fh, link.offset, link.size) or ""
      local body = read_at(self.fh, s.offset, s.size) or ""
      local from = s.type == SHT_DYNSYM and "dynsym" or "symtab"
      if s.type == SHT_SYMTAB then self.has_symtab = true end
      for pos = 1, #body - symsize + 1, symsize do
        local name_off, info, shndx, value, size
        if self.bits == 64 then
          name_off, info, _, shndx, value, size = string.unpack(self.endian .. "I4BBI2I8I8", body, pos)
        else
          name_off, value, size, info, _, shndx = string.unpack(self.endian .. "I4I4I4BBI2", body, pos)
        end
        if name_off ~= 0 and shndx ~= 0 then
          local name = strs:match("^[^%z]*", name_off + 1)
          if name and name ~= "" then
            local list = self.symbols[name]
            if not list then list = {}; self.symbols[name] = list end
            list[#list + 1] = { name = name, value = value, size = size,
              type = STT[info & 0xf] or (info & 0xf), bind = STB[info >> 4] or (info >> 4),
              from = from, section = shndx }
          end
        end
      end
    end
  end
end

--- The file offset of virtual address `vaddr`, from the loadable segments.
-- @int vaddr a virtual address
-- @treturn integer|nil the file offset
function Elf:offset_of(vaddr)
  for _, p in ipairs(self.segments) do
    if p.type == PT_LOAD and vaddr >= p.vaddr and vaddr < p.vaddr + p.filesz then
      return vaddr - p.vaddr + p.offset
    end
  end
end

local rank = { global = 1, weak = 2, unique = 3, ["local"] = 4 }

--- The symbol called `name` (functions before other kinds, global before
-- weak before local), with its file offset; or nil and a message.
-- @string name a symbol name (a version suffix is ignored)
-- @treturn[1] table `{ name, value, size, type, bind, offset }`
-- @return[2] nil, message
function Elf:symbol(name)
  local debug = self.debug_symbols or {}
  local list = self.symbols[name] or debug[name]
  if not list then
    -- versioned names ("getenv@@GLIBC_2.2.5") are looked up without the version
    local base = name:match("^([^@]+)@")
    list = base and (self.symbols[base] or debug[base])
  end
  if not list then return nil, ("%s has no symbol '%s'"):format(self.path, name) end
  local best
  for _, s in ipairs(list) do
    local function score(x)
      return (x.type == "func" and 0 or x.type == "ifunc" and 1 or 2) * 10 + (rank[x.bind] or 5)
    end
    if not best or score(s) < score(best) then best = s end
  end
  local sym = {}
  for k, v in pairs(best) do sym[k] = v end
  sym.offset = self:offset_of(sym.value)
  if not sym.offset then
    return nil, ("%s: symbol '%s' (0x%x) is in no loadable segment"):format(self.path, name, sym.value)
  end
  return sym
end

--- The virtual address (as the file's symbols count) of file offset `off`.
-- @int off a file offset
-- @treturn integer|nil the virtual address
function Elf:vaddr_of(off)
  for _, p in ipairs(self.segments) do
    if p.type == PT_LOAD and off >= p.offset and off < p.offset + p.filesz then
      return off - p.offset + p.vaddr
    end
  end
end

--- The function or object whose extent holds virtual address `vaddr`.
-- @int vaddr a virtual address
-- @treturn table|nil the symbol
function Elf:symbol_at(vaddr)
  if not self.sorted then
    local list = {}
    for _, t in ipairs { self.symbols, self.debug_symbols or {} } do
      for _, syms in pairs(t) do
        for _, sym in ipairs(syms) do
          if sym.size > 0 and (sym.type == "func" or sym.type == "object") then
            list[#list + 1] = sym
          end
        end
      end
    end
    -- of symbols at one address (aliases), the one perf names last:
    -- not weak, global, fewer leading underscores, then the longest name
    local function pref(s)
      return (s.bind ~= "weak" and 8 or 0) + (s.bind == "global" and 4 or 0),
        -#s.name:match("^_*"), #s.name
    end
    table.sort(list, function(a, b)
      if a.value ~= b.value then return a.value < b.value end
      local a1, a2, a3 = pref(a)
      local b1, b2, b3 = pref(b)
      if a1 ~= b1 then return a1 < b1 end
      if a2 ~= b2 then return a2 < b2 end
      if a3 ~= b3 then return a3 < b3 end
      return a.name > b.name
    end)
    self.sorted = list
  end
  local list, lo, hi = self.sorted, 1, #self.sorted
  while lo <= hi do                       -- the last symbol starting at or before
    local mid = (lo + hi) // 2
    if list[mid].value <= vaddr then lo = mid + 1 else hi = mid - 1 end
  end
  local sym = list[hi]
  if sym and vaddr < sym.value + sym.size then return sym end
end

local opened = {}

--- Addresses of a process.
-- @section addresses

--- A function locating addresses of this process (or of process `pid`) as
-- M.locate does, from one read of /proc/<pid>/maps (the mappings as they
-- are now): for many addresses at once. Mappings without a file ([vdso],
-- [heap], ...) give { file = "[vdso]", offset = } with no symbol; nothing
-- is found in a process that is gone.
-- @int[opt] pid a process (default this one)
-- @treturn function `locate(addr)` -> `{ file, offset, symbol, symbol_offset }` or nil
-- @usage local locate = perf.elf.locator() print(locate(perf.symbol "getenv").symbol)
function M.locator(pid)
  local maps, ranges = io.open(pid and ("/proc/%d/maps"):format(pid) or "/proc/self/maps"), {}
  if maps then
    for line in maps:lines() do
      local lo, hi, off, file = line:match("^(%x+)%-(%x+)%s+%S+%s+(%x+)%s+%S+%s+%d+%s+(%S+)")
      if lo then
        ranges[#ranges + 1] = { lo = tonumber(lo, 16), hi = tonumber(hi, 16),
          off = tonumber(off, 16), file = file }
      end
    end
    maps:close()
  end
  return function(addr)
    for _, r in ipairs(ranges) do
      if addr >= r.lo and addr < r.hi then
        local where = { file = r.file, offset = addr - r.lo + r.off }
        if r.file:sub(1, 1) == "/" then
          local e = opened[r.file]
          if e == nil then e = M.open(r.file) or false; opened[r.file] = e end
          local vaddr = e and e:vaddr_of(where.offset)
          local sym = vaddr and e:symbol_at(vaddr)
          if sym then where.symbol, where.symbol_offset = sym.name, vaddr - sym.value end
        end
        return where
      end
    end
  end
end

--- Where address `addr` of this process lies: { file =, offset = (in the
-- file), symbol = (name or nil), symbol_offset = }, from /proc/self/maps
-- and the file's symbol tables; nil when no file is mapped there.
-- @int addr an address of this process
-- @treturn table|nil `{ file, offset, symbol, symbol_offset }`
function M.locate(addr)
  local where = M.locator()(addr)
  if where and where.file:sub(1, 1) == "/" then return where end
end

--- "getenv+0x0" or "lua5.4+0x1f2a0": a short name for address `addr`.
-- @int addr an address of this process
-- @treturn string "symbol+0xoff" or "file+0xoff"
-- @usage print(perf.elf.describe(perf.symbol "getenv"))   --> getenv+0x0
function M.describe(addr)
  local w = M.locate(addr)
  if not w then return ("0x%x"):format(addr) end
  if w.symbol then return ("%s+0x%x"):format(w.symbol, w.symbol_offset) end
  return ("%s+0x%x"):format(w.file:match("[^/]+$"), w.offset)
end

--- Every symbol name, sorted (for suggestions).
-- @treturn {string,...} the names
function Elf:names()
  local out = {}
  for name in pairs(self.symbols) do out[#out + 1] = name end
  table.sort(out)
  return out
end

return M
