-- prof:write(path, "pprof"): pprof's profile.proto, gzip-compressed. The
-- file is read back with gzip -dc and a protobuf reader written here from
-- the schema (perftools.profiles.Profile), so every field is checked.

local perf = require "perf"
local H = require "helpers"
local pprof = require "perf.profiling.pprof"

local FX = "spec/fixtures/profiled.lua"
local fx = dofile(FX)
local OPENAT = "syscalls:sys_enter_openat"
local with_tracefs = perf.capabilities().tracefs and it or pending

-- ---- a protobuf reader: message bytes -> { [field] = { values... } } ----

local function read_varint(s, pos)
  local n, shift = 0, 0
  while true do
    local b = assert(s:byte(pos), "truncated varint")
    n = n | (b & 0x7F) << shift
    pos = pos + 1
    if b < 0x80 then return n, pos end
    shift = shift + 7
    assert(shift < 70, "varint too long")
  end
end

local function message(s)
  local fields, pos = {}, 1
  while pos <= #s do
    local key
    key, pos = read_varint(s, pos)
    local field, wire = key >> 3, key & 7
    local v
    if wire == 0 then
      v, pos = read_varint(s, pos)
    elseif wire == 2 then
      local len
      len, pos = read_varint(s, pos)
      v = s:sub(pos, pos + len - 1)
      assert(#v == len, "truncated field")
      pos = pos + len
    else
      error("unexpected wire type " .. wire)
    end
    fields[field] = fields[field] or {}
    table.insert(fields[field], v)
  end
  return fields
end

local function packed(s)
  local list, pos = {}, 1
  while pos <= #s do list[#list + 1], pos = read_varint(s, pos) end
  return list
end

local function one(fields, n) return fields[n] and fields[n][1] or 0 end

-- The Profile message decoded into plain tables, ids resolved.
local function decode(bytes)
  local p = message(bytes)
  local strings = {}
  for i, s in ipairs(p[6] or {}) do strings[i - 1] = s end
  assert(strings[0] == "", "string_table[0] must be empty")
  local function str(i) return assert(strings[i], "bad string index " .. i) end
  local out = { types = {}, samples = {}, functions = {}, locations = {} }
  for _, m in ipairs(p[1] or {}) do
    local vt = message(m)
    out.types[#out.types + 1] = str(one(vt, 1)) .. "/" .. str(one(vt, 2))
  end
  for _, m in ipairs(p[5] or {}) do
    local f = message(m)
    local id = one(f, 1)
    assert(id ~= 0 and not out.functions[id], "function ids are unique and nonzero")
    out.functions[id] = { name = str(one(f, 2)), system_name = str(one(f, 3)),
      filename = str(one(f, 4)), start_line = one(f, 5) }
  end
  for _, m in ipairs(p[4] or {}) do
    local l = message(m)
    local id = one(l, 1)
    assert(id ~= 0 and not out.locations[id], "location ids are unique and nonzero")
    local lines = {}
    for _, lm in ipairs(l[4] or {}) do
      local line = message(lm)
      lines[#lines + 1] = { fn = assert(out.functions[one(line, 1)]), line = one(line, 2) }
    end
    out.locations[id] = lines
  end
  for _, m in ipairs(p[2] or {}) do
    local s = message(m)
    local frames = {}
    for _, id in ipairs(packed(one(s, 1))) do frames[#frames + 1] = assert(out.locations[id]) end
    out.samples[#out.samples + 1] = { frames = frames, values = packed(one(s, 2)) }
  end
  local pt = message(one(p, 11))
  out.period_type = str(one(pt, 1)) .. "/" .. str(one(pt, 2))
  out.period = one(p, 12)
  out.default_type = str(one(p, 14))
  out.comments = {}
  for _, c in ipairs(packed(one(p, 13))) do out.comments[#out.comments + 1] = str(c) end
  return out
end

local function gunzip(path)
  local p = io.popen("gzip -dc " .. path)
  local bytes = p:read("a")
  assert(p:close(), "gzip -dc failed")
  return bytes
end

-- value of the samples whose leaf is at source:line
local function at_line(d, source, line)
  local n = 0
  for _, s in ipairs(d.samples) do
    local leaf = s.frames[1][1]
    if leaf.fn.filename == source and leaf.line == line then n = n + s.values[1] end
  end
  return n
end

describe("pprof output", function()
  it("writes varints as protobuf does", function()
    assert.equal("\0", pprof.varint(0))
    assert.equal("\1", pprof.varint(1))
    assert.equal("\172\2", pprof.varint(300))
    assert.equal("\255\255\255\255\255\255\255\255\255\1", pprof.varint(-1))
    for _, n in ipairs { 0, 1, 127, 128, 300, 1 << 40, math.maxinteger, -5 } do
      assert.equal(n, (read_varint(pprof.varint(n), 1)))
    end
  end)

  with_tracefs("holds every openat at its function and line, gzip-compressed", function()
    local prof = assert(perf.profile(function() fx.both() end, { event = OPENAT }))
    assert.equal(40, prof.samples)
    local path = os.tmpname() .. ".pb.gz"
    assert.is_true(prof:write(path))                     -- the format from .pb.gz
    local f = assert(io.open(path, "rb"))
    assert.equal("\31\139", f:read(2))                   -- a gzip file
    f:close()
    local d = decode(gunzip(path))
    os.remove(path)

    assert.same({ OPENAT .. "/count" }, d.types)
    assert.equal(OPENAT .. "/count", d.period_type)
    assert.equal(OPENAT, d.default_type)
    assert.equal(1, d.period)
    assert.matches(OPENAT, d.comments[1], 1, true)
    local total = 0
    for _, s in ipairs(d.samples) do total = total + s.values[1] end
    assert.equal(40, total)
    assert.equal(30, at_line(d, FX, 7))
    assert.equal(10, at_line(d, FX, 13))

    -- functions carry their file and start line; stacks go leaf to root
    local seen = {}
    for _, s in ipairs(d.samples) do
      local leaf, caller = s.frames[1][1], s.frames[2][1]
      seen[leaf.fn.name] = { leaf.fn.filename, leaf.fn.start_line, caller.fn.name, caller.line }
    end
    assert.same({ FX, 5, "both", 19 }, seen.thirty)
    assert.same({ FX, 11, "both", 20 }, seen.ten)
  end)

  with_tracefs("names the format, and refuses unknown ones with a suggestion", function()
    local prof = assert(perf.profile(fx.ten, { event = OPENAT }))
    local path = os.tmpname()
    assert.is_true(prof:write(path, "pprof"))
    local d = decode(gunzip(path))
    assert.equal(10, at_line(d, FX, 13))
    assert.is_true(prof:write(path .. ".pprof"))
    assert.same(d, decode(gunzip(path .. ".pprof")))
    os.remove(path)
    os.remove(path .. ".pprof")
    H.assert_has("did you mean 'pprof'?", select(2, pcall(prof.write, prof, path, "pprf")))
  end)

  -- pprof's own reader: `go tool pprof` from Debian's golang-go (a test
  -- dependency, installed by `make deps`), run offline in a directory of
  -- its own: no network, no toolchain download, nothing left in $HOME.
  local with_go = H.sh("command -v go") ~= "" and it or pending
  local with_tracefs_go = perf.capabilities().tracefs and with_go or pending
  local function go_pprof(args, path)
    local home = os.tmpname()
    os.remove(home)
    assert(os.execute("mkdir -p " .. home))
    local env = ("env -i PATH=/usr/bin:/bin HOME=%s GOCACHE=%s/cache GOPATH=%s/go "
      .. "GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod"):format(home, home, home)
    local out = H.sh(("%s go tool pprof %s %s 2>&1"):format(env, args, path))
    os.execute("rm -rf " .. home)
    return out
  end
  local FXP = FX:gsub("%p", "%%%0")

  with_tracefs_go("is read by go tool pprof -top, which finds the same lines and total", function()
    local prof = assert(perf.profile(function() fx.both() end, { event = OPENAT }))
    local path = os.tmpname() .. ".pb.gz"
    assert.is_true(prof:write(path))
    local out = go_pprof("-top -lines", path)
    os.remove(path)
    assert.matches("\nType: " .. OPENAT:gsub("%p", "%%%0") .. "\n", out)
    assert.matches("Showing nodes accounting for 40, 100%% of 40 total", out)
    assert.matches("\n%s*30%s+75%.00%%.-thirty " .. FXP .. ":7\n", out)
    assert.matches("\n%s*10%s+25%.00%%.-ten " .. FXP .. ":13\n", out)
    assert.matches("\n%s*0%s+0%%%s+100%%%s+30%s+75%.00%%%s+both " .. FXP .. ":19\n", out)
  end)

  with_tracefs_go("is read by go tool pprof -raw: sample types, stacks, counts", function()
    local prof = assert(perf.profile(function() fx.both() end, { event = OPENAT }))
    local path = os.tmpname() .. ".pb.gz"
    assert.is_true(prof:write(path))
    local out = go_pprof("-raw", path)
    os.remove(path)
    assert.matches("\nPeriodType: " .. OPENAT:gsub("%p", "%%%0") .. " count\n", out)
    assert.matches("\n" .. OPENAT:gsub("%p", "%%%0") .. "/count%[dflt%]\n", out)
    -- location ids by what they hold, then each sample's stack by those ids
    local loc = {}
    for id, what in out:gmatch("\n%s*(%d+): 0x0 M=1 (.-) s=%d+") do loc[what] = id end
    local thirty, ten = loc["thirty " .. FX .. ":7"], loc["ten " .. FX .. ":13"]
    local both19, both20 = loc["both " .. FX .. ":19"], loc["both " .. FX .. ":20"]
    assert.truthy(thirty and ten and both19 and both20, out)
    assert.matches("\n%s*30: " .. thirty .. " " .. both19 .. " ", out)
    assert.matches("\n%s*10: " .. ten .. " " .. both20 .. " ", out)
  end)

  with_tracefs_go("holds a sample type per counter, which go tool pprof totals per line", function()
    local CLOSE = "syscalls:sys_enter_close"
    local prof = assert(perf.profile(function() fx.both() end, { event = OPENAT, counters = { CLOSE } }))
    local path = os.tmpname() .. ".pb.gz"
    assert.is_true(prof:write(path))
    local raw = go_pprof("-raw", path)
    assert.matches("\n" .. OPENAT:gsub("%p", "%%%0") .. "/count%[dflt%] " .. CLOSE:gsub("%p", "%%%0") .. "/count\n", raw)
    local out = go_pprof("-top -lines -sample_index=" .. CLOSE, path)
    os.remove(path)
    assert.matches("\nType: " .. CLOSE:gsub("%p", "%%%0") .. "\n", out)
    assert.matches("Showing nodes accounting for 39, 100%% of 39 total", out)
    assert.matches("\n%s*29%s+74%.36%%.-thirty " .. FXP .. ":7\n", out)
    assert.matches("\n%s*10%s+25%.64%%.-ten " .. FXP .. ":13\n", out)
  end)

  it("counts cpu-clock samples in nanoseconds", function()
    local prof = assert(perf.profile(fx.one, { event = "cpu-clock", freq = 1000 }))
    local d = decode(pprof.encode(prof))
    assert.same({ "cpu-clock/nanoseconds" }, d.types)
    assert.equal(1000000, d.period)
    local total = 0
    for _, s in ipairs(d.samples) do total = total + s.values[1] end
    assert.equal(prof.samples * 1000000, total)
  end)
end)
