-- perf.symbol and perf.addressof (csrc/util.c); the constants and
-- perf.capabilities have their own specs.
local perf = require "perf"

local function maps_of(addr)
  for line in io.lines("/proc/self/maps") do
    local lo, hi, perms, path = line:match("^(%x+)%-(%x+) (%S+) %S+ %S+ %S+%s*(.*)$")
    if addr >= tonumber(lo, 16) and addr < tonumber(hi, 16) then return perms, path end
  end
end

describe("perf.symbol", function()
  it("finds a C function in the process and in a named library", function()
    local a = assert(perf.symbol("getenv"))
    local perms, path = maps_of(a)
    assert.matches("x", perms)
    assert.matches("libc", path)
    assert.are.equal(a, perf.symbol("getenv", "libc.so.6"))
    assert.is_truthy(maps_of(assert(perf.symbol("lua_gettop"))))
  end)

  it("returns nil, message, errno for a missing symbol or library", function()
    local ok, msg, errno = perf.symbol("no_such_symbol_here")
    assert.is_nil(ok)
    assert.matches('perf.symbol "no_such_symbol_here": not found', msg)
    assert.are.equal(2, errno)
    ok, msg = perf.symbol("getenv", "libnothere.so.9")
    assert.is_nil(ok)
    assert.matches('cannot load "libnothere.so.9"', msg)
  end)
end)

describe("perf.addressof", function()
  it("gives the address of a string's bytes and a userdata's block", function()
    local s = "address me"
    local a = perf.addressof(s)
    assert.are.equal("rw-p", (maps_of(a)))
    assert.are.equal(a, perf.addressof(s))
    local f = assert(io.open("/dev/null"))
    assert.is_true(perf.addressof(f) > 0)
    f:close()
    assert.has_error(function() perf.addressof(5) end)
    assert.has_error(function() perf.addressof {} end)
  end)
end)
