-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

-- perf.gzip: a gzip file (RFC 1952) around stored deflate blocks (RFC 1951
-- section 3.2.4: BTYPE 00, no compression), with its CRC-32. Every gzip
-- reader accepts it; Lua 5.4 has no zlib, and the profiles written through
-- it are small.
--
--   local gz = require("perf.gzip").wrap(bytes)
--   local bytes = require("perf.gzip").unwrap(gz)   -- for stored blocks only

local M = {}

local BLOCK = 65535                     -- the most a stored block holds

-- CRC-32 (ISO 3309, reflected polynomial 0xEDB88320), one table entry per byte.
local CRC_TABLE = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if c & 1 == 1 then c = 0xEDB88320 ~ (c >> 1) else c = c >> 1 end
  end
  CRC_TABLE[i] = c
end

--- The CRC-32 of a string, as gzip and zlib compute it.
-- @tparam string s the bytes
-- @tparam[opt=0] integer crc a CRC so far, to continue it
-- @treturn integer the CRC (0 .. 2^32 - 1)
-- @usage assert(require("perf.gzip").crc32 "123456789" == 0xCBF43926)
function M.crc32(s, crc)
  local c = (crc or 0) ~ 0xFFFFFFFF
  local t, byte = CRC_TABLE, string.byte
  for i = 1, #s, 64 do
    local bytes = { byte(s, i, math.min(i + 63, #s)) }
    for j = 1, #bytes do
      c = t[(c ~ bytes[j]) & 0xFF] ~ (c >> 8)
    end
  end
  return c ~ 0xFFFFFFFF
end

--- A gzip file holding `s` in stored (uncompressed) deflate blocks.
-- @tparam string s the bytes
-- @treturn string the gzip file's bytes
-- @usage io.open("x.gz", "wb"):write(require("perf.gzip").wrap "hello\n")
function M.wrap(s)
  local out = {
    -- magic, CM = deflate, FLG = 0, MTIME = 0, XFL = 0, OS = 255 (unknown)
    "\31\139\8\0\0\0\0\0\0\255",
  }
  local n = #s
  local i = 1
  repeat
    local len = math.min(BLOCK, n - i + 1)
    local final = i + len > n and 1 or 0
    out[#out + 1] = string.pack("<I1I2I2", final, len, len ~ 0xFFFF)
    out[#out + 1] = s:sub(i, i + len - 1)
    i = i + len
  until i > n
  out[#out + 1] = string.pack("<I4I4", M.crc32(s), n & 0xFFFFFFFF)
  return table.concat(out)
end

--- The bytes of a gzip file made of stored blocks (what `gzip.wrap`
-- writes), checking its CRC; nil and a message for anything else.
-- @tparam string gz the gzip file's bytes
-- @treturn[1] string the bytes
-- @return[2] nil, message
function M.unwrap(gz)
  if #gz < 18 or gz:sub(1, 3) ~= "\31\139\8" then return nil, "not a gzip file" end
  if gz:byte(4) ~= 0 then return nil, "gzip header flags are not supported" end
  local pos, out = 11, {}
  while true do
    if pos + 4 > #gz then return nil, "truncated" end
    local head, len, nlen = string.unpack("<I1I2I2", gz, pos)
    if head & 6 ~= 0 then return nil, "a compressed block: use gzip -d" end
    if len ~ 0xFFFF ~= nlen then return nil, "bad stored block length" end
    out[#out + 1] = gz:sub(pos + 5, pos + 4 + len)
    pos = pos + 5 + len
    if head & 1 == 1 then break end
  end
  local s = table.concat(out)
  if pos + 7 > #gz then return nil, "truncated" end
  local crc, size = string.unpack("<I4I4", gz, pos)
  if crc ~= M.crc32(s) or size ~= #s & 0xFFFFFFFF then return nil, "bad CRC or size" end
  return s
end

return M
