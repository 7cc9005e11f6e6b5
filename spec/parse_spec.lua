-- perf.parse: every event form, every alias, exact attrs (the name tables,
-- modifiers, terms and syntax errors have their own specs).

local parse = require "perf.event.parse"
local H = require "helpers"

local function tp_id(sys, ev)
  local f = io.open(("%s/events/%s/%s/id"):format(H.tracefs(), sys, ev))
  if not f then return nil end
  local id = math.tointeger(tonumber(f:read("a")))
  f:close()
  return id
end

local parse_error = H.parse_error

local assert_has = H.assert_has

local assert_caret = H.assert_caret

describe("perf.parse", function()
  describe("hardware and software names", function()
    local cases = {
      { "cpu-cycles", 0, 0 }, { "cycles", 0, 0 }, { "instructions", 0, 1 },
      { "cache-references", 0, 2 }, { "cache-misses", 0, 3 },
      { "branch-instructions", 0, 4 }, { "branches", 0, 4 },
      { "branch-misses", 0, 5 }, { "bus-cycles", 0, 6 },
      { "stalled-cycles-frontend", 0, 7 }, { "idle-cycles-frontend", 0, 7 },
      { "stalled-cycles-backend", 0, 8 }, { "idle-cycles-backend", 0, 8 },
      { "ref-cycles", 0, 9 },
      { "cpu-clock", 1, 0 }, { "task-clock", 1, 1 }, { "page-faults", 1, 2 },
      { "faults", 1, 2 }, { "context-switches", 1, 3 }, { "cs", 1, 3 },
      { "cpu-migrations", 1, 4 }, { "migrations", 1, 4 },
      { "CPU-migrations", 1, 4 }, { "minor-faults", 1, 5 },
      { "major-faults", 1, 6 }, { "alignment-faults", 1, 7 },
      { "emulation-faults", 1, 8 }, { "dummy", 1, 9 }, { "bpf-output", 1, 10 },
      { "cgroup-switches", 1, 11 },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        assert.same({ type = c[2], config = c[3], name = c[1] }, parse.parse(c[1]))
      end)
    end
  end)

  describe("hardware cache composition", function()
    local cases = {
      { "L1-dcache", 0x0 }, { "l1-d", 0x0 }, { "l1d-loads", 0x0 },
      { "L1-data-load-misses", 0x10000 }, { "L1-dcache-load-misses", 0x10000 },
      { "L1-dcache-read", 0x0 }, { "L1-dcache-load-refs", 0x0 },
      { "L1-dcache-load-Reference", 0x0 }, { "L1-dcache-load-ops", 0x0 },
      { "L1-dcache-load-access", 0x0 }, { "L1-dcache-load-references", 0x0 },
      { "LLC-store-references", 0x102 }, { "L1-dcache-stores", 0x100 },
      { "L1-dcache-write", 0x100 }, { "L1-dcache-store-misses", 0x10100 },
      { "L1-dcache-prefetches", 0x200 }, { "L1-dcache-prefetch-misses", 0x10200 },
      { "L1-dcache-speculative-read-miss", 0x10200 },
      { "L1-dcache-speculative-load", 0x200 },
      { "L1-dcache-misses-load", 0x10000 }, { "L1-dcache-misses", 0x10000 },
      { "L1-icache-loads", 0x1 }, { "l1-i", 0x1 }, { "l1i-load-misses", 0x10001 },
      { "L1-instruction-prefetches", 0x201 },
      { "LLC-loads", 0x2 }, { "L2", 0x2 }, { "LLC-misses", 0x10002 },
      { "LLC-stores", 0x102 }, { "LLC-store-misses", 0x10102 },
      { "LLC-prefetches", 0x202 }, { "LLC-speculative-load-misses", 0x10202 },
      { "dTLB-loads", 0x3 }, { "d-tlb-load-misses", 0x10003 },
      { "Data-TLB-stores", 0x103 }, { "dTLB-store-misses", 0x10103 },
      { "dTLB-prefetches", 0x203 },
      { "iTLB-loads", 0x4 }, { "i-tlb-load-misses", 0x10004 },
      { "Instruction-TLB-read", 0x4 },
      { "branch-loads", 0x5 }, { "branch-load-misses", 0x10005 },
      { "bpu-loads", 0x5 }, { "btb-read-miss", 0x10005 }, { "bpc-loads", 0x5 },
      { "branches-load-misses", 0x10005 },
      { "node-loads", 0x6 }, { "node-load-misses", 0x10006 },
      { "node-stores", 0x106 }, { "node-store-misses", 0x10106 },
      { "node-prefetches", 0x206 }, { "node-prefetch-misses", 0x10206 },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        assert.same({ type = 3, config = c[2], name = c[1] }, parse.parse(c[1]))
      end)
    end

    it("refuses operations a cache does not have", function()
      local err = parse_error("L1-icache-stores")
      assert_has("L1-icache has no 'store' operation (it has: load, prefetch)", err)
      assert_caret(err, "L1-icache-stores", 11)
      assert_has("iTLB has no 'prefetch' operation", parse_error("iTLB-prefetches"))
      assert_has("branch has no 'store' operation", parse_error("branch-stores"))
    end)

    it("points at a misspelt section", function()
      local err = parse_error("L1-dcache-lod-misses")
      assert_has("expected an operation (load, store, prefetch) or a result", err)
      assert_caret(err, "L1-dcache-lod-misses", 11)
      err = parse_error("LLC-load-misses-misses")
      assert_has("nothing may follow the result", err)
    end)
  end)

  describe("raw and numeric events", function()
    it("rNNN and r0xNNN", function()
      assert.same({ type = 4, config = 0x1a8, name = "r1a8" }, parse.parse("r1a8"))
      assert.same({ type = 4, config = 0x1a8, name = "r0x1a8" }, parse.parse("r0x1a8"))
      assert.same({ type = 4, config = -1, name = "rffffffffffffffff" },
        parse.parse("rffffffffffffffff"))
      assert.same({ type = 4, config = 0xc2, name = "r00c2:u", exclude_kernel = true,
        exclude_hv = true }, parse.parse("r00c2:u"))
    end)

    it("type:config", function()
      assert.same({ type = 1, config = 1, name = "1:1" }, parse.parse("1:1"))
      assert.same({ type = 4, config = 0x1a8, name = "4:0x1a8" }, parse.parse("4:0x1a8"))
    end)

    it("raw with terms", function()
      assert.same({ type = 4, config = 0x1a8, sample_period = 1000,
        name = "r1a8/period=1000/" }, parse.parse("r1a8/period=1000/"))
    end)

    it("refuses numbers past 64 bits", function()
      assert_has("does not fit in 64 bits", parse_error("mem:0x10000000000000000"))
      assert_has("bad number '18446744073709551616'",
        parse_error("cycles/period=18446744073709551616/"))
      assert.same(-1, parse.parse("cycles/period=18446744073709551615/").sample_period)
    end)
  end)

  describe("tracepoints", function()
    local id = tp_id("sched", "sched_switch")
    local with_tracefs = id and it or pending

    with_tracefs("sys:event gets its id from tracefs and samples raw data", function()
      assert.same({ type = 2, config = id, sample_period = 1,
        sample_type = { "time", "cpu", "period", "raw" }, name = "sched:sched_switch" },
        parse.parse("sched:sched_switch"))
    end)

    with_tracefs("takes modifiers and terms", function()
      local a = parse.parse("sched:sched_switch:u")
      assert.same({ true, true, 2 }, { a.exclude_kernel, a.exclude_hv, a.type })
      a = parse.parse("syscalls:sys_enter_openat/call-graph=fp/")
      assert.equal(tp_id("syscalls", "sys_enter_openat"), a.config)
      assert.same({ "time", "callchain", "cpu", "period", "raw" }, a.sample_type)
    end)

    with_tracefs("suggests near names", function()
      local err = parse_error("sched:sched_swtch")
      assert_has("no tracepoint 'sched_swtch' in 'sched' (did you mean 'sched_switch'?)", err)
      assert_caret(err, "sched:sched_swtch", 7)
      assert_has("no tracepoint subsystem 'schedd' (did you mean 'sched", parse_error("schedd:sched_switch"))
    end)

    with_tracefs("refuses patterns", function()
      assert_has("is a pattern; perf.parse makes one event", parse_error("sched:sched_*"))
    end)
  end)

  describe("breakpoints", function()
    local cases = {
      { "mem:0x1000", 0x1000, 4, 3 },
      { "mem:4096", 0x1000, 4, 3 },
      { "mem:0x1000/8", 0x1000, 8, 3 },
      { "mem:0x1000:r", 0x1000, 4, 1 },
      { "mem:0x1000:w", 0x1000, 4, 2 },
      { "mem:0x1000:rw", 0x1000, 4, 3 },
      { "mem:0x1000:wr", 0x1000, 4, 3 },
      { "mem:0x1000:x", 0x1000, 8, 4 },
      { "mem:0x1000/1:x", 0x1000, 1, 4 },
      { "mem:0x1000:rwx", 0x1000, 4, 7 },
      { "mem:0x7ffd1000/8:w", 0x7ffd1000, 8, 2 },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        assert.same({ type = 5, config = 0, bp_addr = c[2], bp_len = c[3], bp_type = c[4],
          sample_period = 1, name = c[1] }, parse.parse(c[1]))
      end)
    end

    it("with modifiers and terms", function()
      assert.same({ type = 5, config = 0, bp_addr = 0x1000, bp_len = 1, bp_type = 1,
        sample_period = 1, exclude_kernel = true, exclude_hv = true, name = "mem:0x1000/1:r:u" },
        parse.parse("mem:0x1000/1:r:u"))
      assert.same({ type = 5, config = 0, bp_addr = 0x1000, bp_len = 8, bp_type = 2,
        sample_period = 10, name = "w8" }, parse.parse("mem:0x1000/8:w/period=10,name=w8/"))
      assert.same({ type = 5, config = 0, bp_addr = 0x1000, bp_len = 4, bp_type = 3,
        sample_period = 1, exclude_kernel = true, exclude_hv = true, name = "mem:0x1000:u" },
        parse.parse("mem:0x1000:u"))
    end)

    it("rejects malformed ones", function()
      local err = parse_error("mem:0x1000/2:ww")
      assert_has("'w' given twice in the access type", err)
      assert_caret(err, "mem:0x1000/2:ww", 15)
      assert_has("expected an address after 'mem:'", parse_error("mem:foo"))
      assert_has("bad length '0'", parse_error("mem:0x1000/0"))
    end)
  end)

  describe("groups", function()
    it("{a,b}:mods applies the modifiers to every member", function()
      assert.same({
        { type = 0, config = 0, exclude_kernel = true, exclude_hv = true, name = "cycles" },
        { type = 0, config = 1, exclude_kernel = true, exclude_hv = true, name = "instructions" },
        group = true, name = "{cycles,instructions}:u",
      }, parse.parse("{cycles,instructions}:u"))
    end)

    it("combines member and group modifiers as perf does", function()
      local g = parse.parse("{cycles:u,instructions}:k")
      assert.same({ type = 0, config = 0, exclude_hv = true, name = "cycles:u" }, g[1])
      assert.same({ type = 0, config = 1, exclude_user = true, exclude_hv = true,
        name = "instructions" }, g[2])
    end)

    it("pins only the leader, and keeps a group name", function()
      local g = parse.parse("grp{cs,faults:k}:De")
      assert.equal("grp", g.name)
      assert.same({ type = 1, config = 3, pinned = true, exclusive = true, name = "cs" }, g[1])
      assert.same({ type = 1, config = 2, exclude_user = true, exclude_hv = true,
        name = "faults:k" }, g[2])
    end)

    it("allows terms with commas and spaces between members", function()
      local g = parse.parse("{cpu-clock/period=10,name=a/, task-clock}")
      assert.equal(2, #g)
      assert.same({ type = 1, config = 0, sample_period = 10, name = "a" }, g[1])
      assert.same({ type = 1, config = 1, name = "task-clock" }, g[2])
    end)

    it("rejects empty, nested and unterminated groups and lists", function()
      assert_has("empty group", parse_error("{}"))
      assert_has("groups cannot be nested", parse_error("{cycles,{cs}}"))
      assert_has("unterminated group", parse_error("{cycles,cs"))
      local err = parse_error("cycles,instructions")
      assert_has("several events: perf.parse makes one event or one {group}", err)
      assert_caret(err, "cycles,instructions", 7)
      assert_has("several groups or events", parse_error("{cycles},cs"))
    end)
  end)

end)

describe("parse.spec", function()
  it("takes strings", function()
    assert.same({ type = 1, config = 1, name = "task-clock" }, parse.spec("task-clock"))
  end)

  it("returns a new table each time", function()
    local a, b = parse.spec("task-clock"), parse.spec("task-clock")
    assert.are_not.equal(a, b)
    a.config = 7
    assert.equal(1, parse.spec("task-clock").config)
  end)

  it("refines a string with the table's fields", function()
    assert.same({ type = 1, config = 0, name = "cpu-clock", sample_period = 100000,
      sample_type = { "ip", "tid", "time" } },
      parse.spec { "cpu-clock", sample_period = 100000, sample_type = { "ip", "tid", "time" } })
    -- a frequency replaces the period and the other way round
    local a = parse.spec { "cycles/period=1000/", sample_freq = 99 }
    assert.same({ 99, true }, { a.sample_freq, a.freq })
    assert.is_nil(a.sample_period)
    a = parse.spec { "cycles/freq=1000/", sample_period = 5 }
    assert.same({ 5 }, { a.sample_period, a.sample_freq, a.freq })
  end)

  it("resolves type and config names", function()
    assert.same({ type = 1, config = 3, name = "context-switches" },
      parse.spec { type = "software", config = "cs" })
    assert.same({ type = 0, config = 0, name = "cpu-cycles" },
      parse.spec { type = "hardware", config = "cycles" })
    assert.same({ type = 3, config = 0x10000, name = "L1-dcache-load-misses" },
      parse.spec { type = "hw_cache", config = "L1-dcache-load-misses" })
    assert.same({ type = 4, config = 0x1a8, name = "r1a8" }, parse.spec { type = "raw", config = "r1a8" })
    assert.same({ type = 1, config = 1, name = "task-clock", exclude_kernel = true },
      parse.spec { type = 1, config = 1, exclude_kernel = true })
    assert.same({ type = 5, config = 0, bp_addr = 0x1000, bp_len = 8, bp_type = "w",
      name = "mem:0x1000/8:w" }, parse.spec { type = "breakpoint", bp_addr = 0x1000, bp_len = 8, bp_type = "w" })
  end)

  it("names tracepoints given by id", function()
    local id = tp_id("sched", "sched_switch")
    if not id then return pending("no tracefs") end
    assert.same({ type = 2, config = id, name = "sched:sched_switch" },
      parse.spec { type = "tracepoint", config = "sched:sched_switch" })
    assert.equal("sched:sched_switch", parse.spec { type = 2, config = id }.name)
  end)

  it("keeps an explicit name", function()
    assert.equal("mine", parse.spec { "cycles", name = "mine" }.name)
  end)

  it("raises on groups, bad types and bad names", function()
    assert.has_error(function() parse.spec("{cycles,cs}") end,
      '"{cycles,cs}" is a group: open it with perf.group')
    assert.has_error(function() parse.spec { type = "softwear", config = 1 } end)
    local ok, err = pcall(parse.spec, { type = "softwear", config = 1 })
    assert.is_false(ok)
    assert_has("unknown event type 'softwear' (did you mean 'software'?)", err)
    ok, err = pcall(parse.spec, { type = "software", config = "task-clok" })
    assert.is_false(ok)
    assert_has("no software event 'task-clok' (did you mean 'task-clock'?)", err)
    ok, err = pcall(parse.spec, { config = 1 })
    assert.is_false(ok)
    assert_has("needs a type", err)
    ok, err = pcall(parse.spec, 5)
    assert.is_false(ok)
    assert_has("must be a string or a table", err)
    ok, err = pcall(parse.spec, { 5 })
    assert.is_false(ok)
    assert_has("[1] must be a perf event string", err)
  end)
end)

-- perf stat -vv prints the attr perf builds for each event, even for events
-- this machine cannot open; the fields the parser decides must agree.
describe("agreement with perf stat -vv", function()
  local have_perf = os.execute("perf --version >/dev/null 2>&1")
  local check = have_perf and it or pending

  local fields = {
    "type", "config", "config1", "config2", "bp_type", "exclude_user",
    "exclude_kernel", "exclude_hv", "exclude_idle", "exclude_host",
    "precise_ip", "pinned", "exclusive",
  }

  -- The attrs perf prints for `ev`, as tables of integers.
  local function perf_attrs(ev)
    local p = io.popen("perf stat -vv -e '" .. ev .. "' true 2>&1")
    local out = p:read("a")
    p:close()
    local attrs, cur = {}, nil
    for line in out:gmatch("[^\n]+") do
      if line:match("^perf_event_attr:") then
        cur = {}
        attrs[#attrs + 1] = cur
      elseif line:match("^%-%-%-") then
        cur = nil
      elseif cur then
        local k, v = line:match("^%s+(.-)%s%s+(%S+)$")
        if k then
          k = k:gsub("{ bp_addr, config1 }", "config1"):gsub("{ bp_len, config2 }", "config2")
          cur[k] = math.tointeger(tonumber(v))
        end
      end
    end
    return attrs
  end

  local function ours(a)
    local t = {}
    for _, f in ipairs(fields) do
      local v = a[f]
      if f == "config1" then v = a.config1 or a.bp_addr end
      if f == "config2" then v = a.config2 or a.bp_len end
      if v == true then v = 1 end
      t[f] = v or 0
    end
    return t
  end

  local function theirs(p)
    local t = {}
    for _, f in ipairs(fields) do t[f] = p[f] or 0 end
    return t
  end

  -- perf 6.1 also sets exclude_guest by default; later perf does not, and
  -- neither does this parser, so exclude_guest is compared only where a
  -- G or H modifier decides it.
  local cases = {
    "cycles", "instructions", "cache-misses", "branches", "ref-cycles",
    "idle-cycles-backend", "task-clock", "cpu-clock", "page-faults:u", "faults:k",
    "cs:h", "migrations", "dummy", "cgroup-switches", "bpf-output",
    "L1-dcache-load-misses", "L1-data-load-misses", "l1d-loads", "LLC-misses",
    "L1-dcache-misses-load", "L1-dcache-speculative-read-miss", "dTLB-store-misses",
    "Instruction-TLB-read", "btb-read-miss", "node-prefetch-misses", "L2",
    "r1a8", "4:0x1a8", "1:3", "instructions:ppp", "cycles:pp", "cycles:uk",
    "cycles:kh", "cycles:I", "cycles:D", "cycles:e", "msr/tsc/", "msr/tsc/u", "tsc:u",
    "mem:0x1000", "mem:0x1000/2", "mem:0x1000:rwx", "mem:0x1000/1:r:u", "mem:0x2000/8:x",
    "sched:sched_switch", "sched:sched_switch:u", "syscalls:sys_enter_openat",
    "{cs,faults}:u", "{cs:u,faults}:k", "{cs,faults}:D", "{task-clock,cs:k}:u",
  }
  local gh_cases = { "cycles:G", "cycles:H", "cycles:GH", "cycles:HG" }

  for _, ev in ipairs(cases) do
    check(ev, function()
      local p = perf_attrs(ev)
      local a = parse.parse(ev)
      local list = a.group and a or { a }
      assert.is_true(#p >= #list, "perf printed no attr for " .. ev)
      for i, m in ipairs(list) do
        assert.same(theirs(p[i]), ours(m))
      end
    end)
  end
  for _, ev in ipairs(gh_cases) do
    check(ev .. " (with exclude_guest)", function()
      local p = perf_attrs(ev)[1]
      local a = parse.parse(ev)
      local t, o = theirs(p), ours(a)
      t.exclude_guest, o.exclude_guest = p.exclude_guest or 0, a.exclude_guest and 1 or 0
      assert.same(t, o)
    end)
  end
end)

describe("perf.parse on the event strings fuzz/fuzz_parse.c starts from", function()
  -- the fuzzing target's rule: an attr (a list for a group), or the
  -- message about this string, raised at the caller; never an error from
  -- inside the parser
  local function call(s) local r = parse.parse(s) return r end
  local at = ("spec/parse_spec.lua:%d: "):format(debug.getinfo(call, "S").linedefined)

  it("answers every seed with an attr or a message about the string", function()
    local seeds, attrs, messages = 0, 0, 0
    for line in io.lines("fuzz/parse_seeds.txt") do
      if line ~= "" and not line:find("^# ") then
        seeds = seeds + 1
        local ok, r = pcall(call, line)
        local q = ("%q"):format(line)
        if ok then
          assert.equal("table", type(r), line)
          for _, a in ipairs(r.group and r or { r }) do
            assert.equal("integer", math.type(a.type), line)
            assert.equal("integer", math.type(a.config), line)
          end
          attrs = attrs + 1
        else
          assert.is_true(r:sub(1, #at + 12 + #q) == at .. "bad event " .. q .. ": "
            or r:sub(1, #at + 2 + #q) == at .. q .. ": ", r)
          messages = messages + 1
        end
      end
    end
    assert.is_true(seeds >= 200)
    assert.is_true(attrs >= 100 and messages >= 50, ("%d attrs, %d messages"):format(attrs, messages))
  end)
end)
