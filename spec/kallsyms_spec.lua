-- perf.kallsyms: kernel ips named as perf script names them, on the same
-- samples; lookups at and inside symbols; hidden addresses and bad paths.
local perf = require "perf"
local kallsyms = require "perf.kallsyms"
local H = require "helpers"

local function tmpfile(text)
  local name = os.tmpname()
  local f = assert(io.open(name, "w"))
  f:write(text)
  f:close()
  return name
end

describe("perf.kallsyms", function()
  local ks = assert(kallsyms.load())

  it("names kernel ips as perf script does, on the same samples", function()
    local data = os.tmpname()
    -- (without the sanitizer runtimes a sanitizer run preloads)
    assert(os.execute(("env -u LD_PRELOAD perf record -q -e cpu-clock -c 20000 -o %s -- "
      .. "dd if=/dev/zero of=/dev/null bs=1k count=50000 2>/dev/null"):format(data)))
    local p = io.popen(("perf script -i %s -F ip,sym,symoff 2>/dev/null"):format(data))
    local checked, names = 0, {}
    for line in p:lines() do
      local ip, sym, off = line:match("^%s*(ffff%x+) ([%w_.$]+)%+0x(%x+)$")
      if ip then
        local name, offset = ks:lookup(math.tointeger(tonumber(ip, 16)))
        assert.are.equal(sym .. "+" .. off, name .. "+" .. ("%x"):format(offset))
        checked, names[name] = checked + 1, true
      end
    end
    p:close()
    os.remove(data)
    local distinct = 0
    for _ in pairs(names) do distinct = distinct + 1 end
    assert.is_true(checked > 100, "kernel samples: " .. checked)
    assert.is_true(distinct >= 3, "distinct kernel functions: " .. distinct)
  end)

  it("finds a symbol at its address and inside it; address() inverts lookup", function()
    local a = ks:address("do_sys_openat2")
    assert.is_true(a < 0)                          -- a kernel address, as an integer
    assert.are.same({ "do_sys_openat2", 0 }, { ks:lookup(a) })
    assert.are.same({ "do_sys_openat2", 17 }, { ks:lookup(a + 17) })
    assert.is_nil(ks:address("no_such_kernel_function"))
    assert.is_nil(ks:lookup(0x1000))               -- below every symbol
    assert.matches("^perf%.kallsyms %(%d+ symbols%)$", tostring(ks))
    assert.are.equal(kallsyms, perf.kallsyms)
  end)

  it("reads a file of its own: modules, one name per address, unsorted input", function()
    local name = tmpfile(table.concat({
      "ffffffffc0001000 t helper_fn\t[mymod]",
      "ffffffff81000100 T real_name",
      "ffffffff81000100 W __weak_alias",        -- the last at an address names it
      "ffffffff81000000 T first",
      "ffffffff81000200 r some_rodata",        -- not a kind perf keeps
      "ffffffff81000280 D some_data",
      "ffffffff81000300 t local_fn",
      "ffffffff81000400 A absolute",
    }, "\n") .. "\n")
    local k = assert(kallsyms.load(name))
    os.remove(name)
    assert.are.equal(5, k.n)
    assert.are.same({ "first", 0x10 }, { k:lookup(math.tointeger(0xffffffff81000010)) })
    assert.are.same({ "__weak_alias", 0x150 }, { k:lookup(math.tointeger(0xffffffff81000250)) })
    assert.are.same({ "some_data", 0x8 }, { k:lookup(math.tointeger(0xffffffff81000288)) })
    assert.are.same({ "local_fn", 0x110 }, { k:lookup(math.tointeger(0xffffffff81000410)) })
    assert.are.same({ "helper_fn", 4, "mymod" }, { k:lookup(math.tointeger(0xffffffffc0001004)) })
    assert.are.equal(math.tointeger(0xffffffff81000100), k:address("real_name"))
  end)

  it("says why when addresses are hidden or the file is missing", function()
    local name = tmpfile("0000000000000000 T a\n0000000000000000 t b\n")
    local k, msg, errno = kallsyms.load(name)
    os.remove(name)
    assert.is_nil(k)
    assert.matches("shows every address as 0: kernel pointers are hidden", msg)
    assert.are.equal(13, errno)
    k, msg, errno = kallsyms.load("/no/such/kallsyms")
    assert.is_nil(k)
    assert.matches("^perf%.kallsyms: /no/such/kallsyms: No such file", msg)
    assert.are.equal(2, errno)
    assert.has_error(function() ks:lookup(1.5) end, "perf.kallsyms: lookup needs an integer address, got float")
    local hidden = H.run_as_nobody([[print(require("perf.kallsyms").load())]])
    if hidden then assert.matches("nil\tperf%.kallsyms: /proc/kallsyms shows every address as 0", hidden) end
  end)
end)
