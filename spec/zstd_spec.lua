-- csrc/zstd.c: libzstd, loaded at the first need for the compressed
-- records of `perf record -z` files, or a clear failure where it is
-- missing. The compressed file is a fuzz seed: a small `perf record -z`
-- file kept in the tree.
local H = require "helpers"
local core = require "perf.core"

local SEED = H.root .. "/fuzz/seeds-perfdata/compressed.data"
local PLAIN = H.root .. "/fuzz/seeds-perfdata/tracepoint.data"

describe("zstd", function()
  it("zstd_version is the version of the libzstd1 package installed", function()
    local v = assert(core.zstd_version())
    assert.matches("^%d+%.%d+%.%d+$", v)
    local pkg = H.sh("dpkg-query -W -f '${Version}' libzstd1")
    if pkg == "" then return pending("no dpkg here to ask for libzstd1's version") end
    assert.equal(pkg:match("^%d+%.%d+%.%d+"), v)
  end)

  it("reads a compressed file in a fresh process, loading the library then", function()
    local out = H.run_lua([[
      local data = require "perf.data"
      local f = assert(data.open(]] .. ("%q"):format(SEED) .. [[))
      local n = 0
      for _ in f:samples("tid") do n = n + 1 end
      print(f.compressed, n, f.header.compressed.type)
    ]])
    assert.matches("^9\t99\tzstd\n$", out)
  end)

  describe("where libzstd cannot be loaded", function()
    local function child(lib, code)
      return H.run_lua(code, ("PERF_LUA_LIBZSTD=%s"):format(H.shell_quote(lib)))
    end

    it("a compressed file gives nil, a message with what to install, ENOENT", function()
      local out = child("/nonexistent/libzstd.so.1", [[
        local data = require "perf.data"
        local f, msg, errno = data.open(]] .. ("%q"):format(SEED) .. [[)
        print(f, errno)
        print(msg)
        local g = assert(data.open(]] .. ("%q"):format(PLAIN) .. [[))
        print("plain", g.compressed, g.nrecords > 0)
        print(require("perf.core").zstd_version())
      ]])
      local first, msg, plain, version = out:match("^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n$")
      assert.equal("nil\t2", first, out)
      H.assert_has("the compressed record at offset ", msg)
      H.assert_has("cannot load /nonexistent/libzstd.so.1", msg)
      H.assert_has("(ENOENT)", msg)
      H.assert_has("libzstd1", msg)
      H.assert_has("PERF_LUA_LIBZSTD", msg)
      assert.equal("plain\t0\ttrue", plain)
      assert.matches("^nil\tzstd: cannot load /nonexistent/libzstd.so.1 .*%(ENOENT%).*\t2$", version)
    end)

    it("a library without zstd's functions is named", function()
      local out = child("libm.so.6", [[
        print(require("perf.core").zstd_version())
      ]])
      assert.matches("^nil\tzstd: libm.so.6 has no ZSTD_createDStream: .*\t2\n$", out)
    end)
  end)
end)
