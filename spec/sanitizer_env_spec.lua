-- csrc/sanitizer_env.c, built only with AddressSanitizer (`make asan`):
-- once the C core is loaded, the sanitizer runtimes are out of LD_PRELOAD
-- (for the programs it starts) and the former value is kept in
-- PERF_LUA_SANITIZER_PRELOAD. In any other run these tests are pending,
-- saying why.
require "perf.core"
local H = require "helpers"

local so = assert(package.searchpath("perf.core", package.cpath))
-- the sanitizer build calls the runtime's checks: __asan_* symbols it does not define
local sanitized = H.sh("nm -D --undefined-only " .. so):find("__asan_", 1, true) ~= nil
local asan_only = sanitized and it or function(name)
  it(name, function()
    pending(("csrc/sanitizer_env.c is built only under `make asan`; this run loads %s, "
      .. "built without AddressSanitizer"):format(so))
  end)
end

local function is_runtime(entry)
  local base = entry:match("[^/]+$") or entry
  return base:match("^libasan") or base:match("^libubsan") or base:match("^libclang_rt%.")
end

describe("a sanitizer build of the C core", function()
  asan_only("takes the runtimes out of LD_PRELOAD, keeping the former value", function()
    local kept = os.getenv("PERF_LUA_SANITIZER_PRELOAD")
    assert.is_string(kept)
    assert.truthy(kept:find("libasan", 1, true))
    for entry in (os.getenv("LD_PRELOAD") or ""):gmatch("[^ :]+") do
      assert.is_falsy(is_runtime(entry), entry)
    end
    -- what a command started from here sees
    for entry in H.sh("sh -c 'echo $LD_PRELOAD'"):gmatch("[^ :\n]+") do
      assert.is_falsy(is_runtime(entry), entry)
    end
  end)

  asan_only("keeps the other entries, whether spaces or colons separate them", function()
    local runtimes = {}
    for entry in os.getenv("PERF_LUA_SANITIZER_PRELOAD"):gmatch("[^ :]+") do
      if is_runtime(entry) then runtimes[#runtimes + 1] = entry end
    end
    assert.is_true(#runtimes >= 1)
    local libm = H.sh("ldconfig -p"):match("libm%.so%.6 %(libc6,x86%-64%) => (%S+)") or "/lib/x86_64-linux-gnu/libm.so.6"
    local preload = runtimes[1] .. " " .. libm .. ":" .. table.concat(runtimes, ":", 2)
    local out = H.sh(("env -u PERF_LUA_SANITIZER_PRELOAD LD_PRELOAD='%s' %s -e \"assert(package.loadlib('%s', "
      .. "'luaopen_perf_core')) print(os.getenv('LD_PRELOAD')) print(os.getenv('PERF_LUA_SANITIZER_PRELOAD'))\"")
      :format(preload, H.lua, so))
    assert.equal(libm .. "\n" .. preload .. "\n", out)
  end)
end)
