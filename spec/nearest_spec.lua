-- perf.nearest and csrc/nearest.c: the "did you mean" suggestions every
-- message shares. The C search is checked against a plain Lua edit
-- distance written here, over names this machine's tracefs gives.
local nearest = require "perf.util.nearest"
local core = require "perf.core"

-- Levenshtein distance ignoring ASCII case, the textbook two-row form.
local function distance(a, b)
  local x, y = { a:lower():byte(1, -1) }, { b:lower():byte(1, -1) }
  local prev = {}
  for j = 0, #y do prev[j] = j end
  for i = 1, #x do
    local cur = { [0] = i }
    for j = 1, #y do
      local cost = x[i] == y[j] and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#y]
end

-- The suggestions the contract describes: names within max(2, #s // 3)
-- edits, or (for 3 letters or more) containing s, which counts as that
-- limit; only the least distance kept, ties by name, at most `max`.
local function expected(s, names, max)
  local limit = math.max(2, #s // 3)
  local best, seen = {}, {}
  for _, c in ipairs(names) do
    -- the distance is at least the difference in length
    local d = math.abs(#s - #c) > limit and limit + 1 or distance(s, c)
    if d > limit and #s >= 3 and c:lower():find(s:lower(), 1, true) then d = limit end
    if d <= limit and not seen[c] then
      seen[c] = true
      best[#best + 1] = { name = c, d = d }
    end
  end
  table.sort(best, function(x, y)
    if x.d ~= y.d then return x.d < y.d end
    return x.name < y.name
  end)
  local out = {}
  for i = 1, math.min(max or 3, #best) do
    if best[i].d == best[1].d then out[#out + 1] = best[i].name end
  end
  return out
end

-- The event names of tracefs's syscalls system: hundreds of similar names.
local function syscall_events()
  local dir = require("spec.helpers").tracefs() .. "/events/syscalls"
  local out = {}
  local p = assert(io.popen("ls -1 " .. dir))
  for line in p:lines() do
    if line:match("^sys_") then out[#out + 1] = line end
  end
  p:close()
  assert.is_true(#out > 100, "tracefs lists few syscall events")
  return out
end

describe("perf.nearest", function()
  it("re-exports the C core's search", function()
    local names = { "cpu-clock", "task-clock", "page-faults" }
    assert.same(core.nearest("cpu-clok", names), nearest.find("cpu-clok", names))
    assert.equal(core.did_you_mean("cpu-clok", names), nearest.hint("cpu-clok", names))
  end)

  it("orders by distance, ties by name, and keeps only the nearest", function()
    -- "ipp": 'ip' and 'ipp2' are one edit away, 'bp' and 'sp' two
    assert.same({ "ip", "ipp2" }, nearest.find("ipp", { "sp", "ipp2", "bp", "ip", "tid" }))
    assert.same({ "ip" }, nearest.find("ipp", { "sp", "ipp2", "bp", "ip", "tid" }, 1))
    -- one edit beats containment
    assert.same({ "tas" }, nearest.find("task", { "task-clock", "multitask", "tas" }, 8))
  end)

  it("counts names containing the word as close, from 3 letters on", function()
    assert.same({ "multitask", "task-clock" }, nearest.find("task", { "task-clock", "cpu-clock", "multitask" }))
    -- two letters: containment does not count, and 'ab' is 3 edits from 'abcde'
    assert.same({}, nearest.find("ab", { "abcde" }))
    assert.same({ "abcde" }, nearest.find("abc", { "abcde" }))
  end)

  it("ignores case and lists a name given twice once", function()
    assert.same({ "Page-Faults" }, nearest.find("page-faultz", { "Page-Faults", "Page-Faults" }))
  end)

  it("finds nothing in an empty list, and skips entries that are not strings", function()
    assert.same({}, nearest.find("x", {}))
    assert.same({ "abc" }, nearest.find("abd", { 1, true, "abc", {} }))
  end)

  it("agrees with an independent edit distance over tracefs's syscall names", function()
    local names = syscall_events()
    local n = 0
    for i = 1, #names, 83 do
      local name = names[i]
      local k = #name // 2
      local queries = {
        name:sub(1, k) .. name:sub(k + 2),                           -- a letter dropped
        name:sub(1, k) .. "x" .. name:sub(k + 1),                    -- one added
        name:upper(),                                                -- case only
        name:sub(5, 5 + math.min(6, #name - 5)),                     -- a piece of it
      }
      for _, q in ipairs(queries) do
        local want = expected(q, names, 8)
        for _, max in ipairs { 1, 3, 8 } do
          assert.same(table.move(want, 1, math.min(max, #want), 1, {}), nearest.find(q, names, max), q)
          n = n + 1
        end
      end
    end
    assert.is_true(n >= 30)
  end)

  it("takes 1 to 8 suggestions and says so otherwise", function()
    for _, bad in ipairs { 0, 9, -1 } do
      local ok, err = pcall(nearest.find, "a", { "a" }, bad)
      assert.is_false(ok)
      assert.matches("bad argument #3 to 'nearest' %(out of range %(1%.%.8%)%)", err)
    end
    assert.has_error(function() nearest.find("a", "a") end)
    assert.has_error(function() nearest.find(nil, {}) end)
  end)

  describe("hint", function()
    it("spells one, two and three names as the messages do", function()
      assert.equal(" (did you mean 'ab'?)", nearest.hint("abx", { "ab", "zzzzzz" }))
      assert.equal(" (did you mean 'ab' or 'ac'?)", nearest.hint("ax", { "ac", "ab" }))
      assert.equal(" (did you mean 'ab', 'ac' or 'ad'?)", nearest.hint("ax", { "ad", "ac", "ab" }))
      assert.equal(" (did you mean 'ab', 'ac' or 'ad'?)", nearest.hint("ax", { "ae", "ad", "ac", "ab" }))
      assert.equal(" (did you mean 'ab'?)", nearest.hint("ax", { "ad", "ac", "ab" }, 1))
    end)

    it("takes a name that starts with a candidate of 4 letters or more as its abbreviation", function()
      assert.equal(" (did you mean 'freq'?)", nearest.hint("frequency", { "freq", "period", "event" }))
      assert.equal("", nearest.hint("identifier", { "id" }))   -- too short to stand for it
    end)

    it("is empty when nothing is close", function()
      assert.equal("", nearest.hint("zzzzzzzz", { "cpu-clock", "task-clock" }))
      assert.equal("", nearest.hint("a", {}))
    end)
  end)

  describe("check_keys", function()
    it("returns the table when every key is known, from a list or a set", function()
      local t = { a = 1, b = 2 }
      assert.equal(t, nearest.check_keys(t, { "a", "b", "c" }, "unknown field"))
      assert.equal(t, nearest.check_keys(t, { a = true, b = true }, "unknown field"))
      local empty = {}
      assert.equal(empty, nearest.check_keys(empty, {}, "unknown field"))
    end)

    it("names the unknown key, the nearest known ones and the tail", function()
      local ok, err = pcall(nearest.check_keys, { a = 1, bq = 2 }, { a = true, b = true },
        "unknown option", 0, "; see the manual")
      assert.is_false(ok)
      assert.equal("unknown option 'bq' (did you mean 'b'?); see the manual", err)
      ok, err = pcall(nearest.check_keys, { zzzzzz = 1 }, { "a" }, "unknown option", 0)
      assert.is_false(ok)
      assert.equal("unknown option 'zzzzzz'", err)
    end)

    it("says a key that is no string is no name", function()
      local ok, err = pcall(nearest.check_keys, { 10, a = 1 }, { "a" }, "unknown option", 0)
      assert.is_false(ok)
      assert.equal("unknown option 1 (names are strings)", err)
    end)

    it("blames the caller's line by default, and the level asked for", function()
      -- level 1: the function that called check_keys (its first line is
      -- the call; no tail call, which would take its frame away)
      local function helper(opts)
        local t = nearest.check_keys(opts, { "a" }, "unknown option")
        return t
      end
      local ok, err = pcall(helper, { b = 1 })
      assert.is_false(ok)
      assert.equal(("spec/nearest_spec.lua:%d: unknown option 'b' (did you mean 'a'?)")
        :format(debug.getinfo(helper, "S").linedefined + 1), err)
      -- level 2: its caller
      local function outer(opts)
        local t = nearest.check_keys(opts, { "a" }, "unknown option", 2)
        return t
      end
      local function user()
        outer({ b = 1 })
      end
      ok, err = pcall(user)
      assert.is_false(ok)
      assert.equal(("spec/nearest_spec.lua:%d: unknown option 'b' (did you mean 'a'?)")
        :format(debug.getinfo(user, "S").linedefined + 1), err)
    end)
  end)
end)
