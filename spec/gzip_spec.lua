-- perf.gzip: gzip files of stored deflate blocks, read back by gzip itself.

local gzip = require "perf.util.gzip"
local H = require "helpers"

local function through_gzip(bytes)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(gzip.wrap(bytes))
  f:close()
  local p = io.popen("gzip -dc " .. path)
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  return ok, out
end

describe("perf.gzip", function()
  it("computes CRC-32 as zlib does", function()
    assert.equal(0, gzip.crc32(""))
    assert.equal(0xCBF43926, gzip.crc32("123456789"))
    assert.equal(0x414FA339, gzip.crc32("The quick brown fox jumps over the lazy dog"))
    assert.equal(gzip.crc32("123456789"), gzip.crc32("6789", gzip.crc32("12345")))
  end)

  it("writes files gzip reads, across block boundaries", function()
    for _, n in ipairs { 0, 1, 65535, 65536, 200000 } do
      local s = {}
      for i = 1, n do s[i] = string.char((i * 7 + i // 300) % 256) end
      s = table.concat(s)
      local ok, out = through_gzip(s)
      assert.is_true(ok, "gzip -dc failed for " .. n)
      assert.equal(n, #out)
      assert.is_true(out == s, "bytes differ for " .. n)
      assert.equal(s, gzip.unwrap(gzip.wrap(s)))
    end
  end)

  it("refuses what it did not write", function()
    assert.same({ nil, "not a gzip file" }, { gzip.unwrap("hello") })
    local gz = gzip.wrap("hello")
    local bad = gz:sub(1, -9) .. "\0\0\0\0" .. gz:sub(-4)
    assert.same({ nil, "bad CRC or size" }, { gzip.unwrap(bad) })
    assert.equal("truncated", select(2, gzip.unwrap(gz:sub(1, 20))))
    H.assert_has("gzip", H.sh("command -v gzip"))
  end)
end)
