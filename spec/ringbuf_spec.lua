-- Record framing in the data area (csrc/ringbuf.c), through a small C
-- helper: wrapping records, and the broken rings no kernel should produce.
local H = require "helpers"
local R, dir = H.load_fixture("ringbuf_check", "csrc/ringbuf.c")
os.execute("rm -rf " .. dir)

local RECORD, ESYNC, ESMALL, EOVER = 1, -1, -2, -3

local function header(size, fill)
  return string.pack("<I4I2I2", 9, 0, size) .. (fill or "x"):rep(size - 8)
end

-- a 64-byte area holding `bytes` from position `at` on, wrapping
local function area(bytes, at)
  local t = {}
  for i = 0, 63 do t[i + 1] = "\0" end
  for i = 1, #bytes do t[(at + i - 1) % 64 + 1] = bytes:sub(i, i) end
  return table.concat(t)
end

describe("the ring walk", function()
  it("returns a record in place, and reassembles one that wraps", function()
    local rec = header(24, "a")
    local rc, len, got = R.next(area(rec, 0), 24, 0)
    assert.same({ RECORD, 24, rec }, { rc, len, got })
    rc, len, got = R.next(area(rec, 48), 64 + 48 + 24, 64 + 48)   -- 16 bytes, then 8 at the start
    assert.same({ RECORD, 24, rec }, { rc, len, got })
    assert.equal(0, (R.next(area(rec, 0), 24, 24)))              -- empty at the head
  end)

  it("reads a header torn across the end", function()
    local rec = header(16, "b")
    local rc, len, got = R.next(area(rec, 60), 60 + 16, 60)
    assert.same({ RECORD, 16, rec }, { rc, len, got })
  end)

  it("detects a reader that lost sync", function()
    local rc, len, _, msg = R.next(area(header(8), 0), 100, 0)
    assert.same({ ESYNC, 100 }, { rc, len })
    assert.matches("lost sync", msg)
  end)

  it("stops on a header smaller than 8 or larger than what is published", function()
    local rc, len = R.next(area(string.pack("<I4I2I2", 9, 0, 4), 0), 16, 0)
    assert.same({ ESMALL, 4 }, { rc, len })
    rc, len = R.next(area(header(32), 0), 16, 0)
    assert.same({ EOVER, 32 }, { rc, len })
    rc, len = R.next(area(header(8), 0), 4, 0)                  -- less than a header
    assert.same({ EOVER, 4 }, { rc, len })
  end)

  it("finds the readable extent of a backward ring", function()
    -- newest first from head: 16 + 24 bytes, then an unwritten header
    assert.equal(40, R.backward_extent(area(header(16) .. header(24), 8), 8))
    -- a full ring: the newest two records whole, then the oldest one, whose
    -- tail the newest overwrote (it would reach past one size)
    local full = header(24, "a") .. header(24, "b") .. header(24, "c"):sub(1, 16)
    assert.equal(48, R.backward_extent(area(full, 0), 0))
    assert.equal(0, R.backward_extent(area("", 0), 0))
  end)
end)
