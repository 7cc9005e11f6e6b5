-- perf.stat_format: perf.stat's results printed as perf stat prints them
-- (table, CSV, intervals, several runs, <not supported>), and its JSON
-- beside perf stat -j's own output for the same command and events.
local perf = require "perf"

local QUIET = { stdout = "/dev/null", stderr = "/dev/null" }

local H = require "helpers"
local perf_stat = H.perf_stat

describe("perf.stat_format", function()
  local F = require "perf.stat_format"
  -- the made-up tables below are written with en_US's separator
  local locale_separator = F.separator
  setup(function() F.separator = "," end)
  teardown(function() F.separator = locale_separator end)

  -- a result as perf.stat makes it, with made-up values
  local function result(elapsed, events)
    local r = { events = {}, elapsed = elapsed, user = 1000000, sys = 2000000, status = 0 }
    for i, e in ipairs(events) do
      local en, run = e.en or 2000000, e.run or 2000000
      local value = perf.scale(e.raw, en, run)
      r.events[i] = { name = e.name, raw = e.raw, value = value, time_enabled = en,
        time_running = run, fraction = select(2, perf.scale(e.raw, en, run)),
        type = e.type or 2, config = e.config or 7 }
      r[i], r[e.name] = value, value
    end
    return r
  end

  it("writes counts with thousands separators", function()
    assert.are.equal("0", F.thousands(0))
    assert.are.equal("999", F.thousands(999))
    assert.are.equal("1,000", F.thousands(1000))
    assert.are.equal("1,234,567", F.thousands(1234567))
    assert.are.equal("-12,345", F.thousands(-12345))
    assert.are.equal("1,234.50", F.thousands(1234.5, 2))
    assert.are.equal("0.58", F.thousands(0.5772, 2))
    assert.are.equal("1234567", F.thousands(1234567, nil, ""))
    assert.are.equal("1.234.567", F.thousands(1234567, nil, "."))
    assert.are.equal("-12%345", F.thousands(-12345, nil, "%"))
  end)

  it("groups the table's digits with the locale's separator, none in the C locale", function()
    local probe = [[print(("%q"):format(require("perf.stat_format").separator))]]
    assert.are.equal('""\n', H.run_lua(probe, "LC_ALL=C"))
    assert.are.equal('""\n', H.run_lua(probe, "LC_ALL=C.UTF-8"))
    -- 1234 opens of /dev/null, counted by perf stat and printed by F.text
    local argv = { "sh", "-c", "i=0; while [ $i -lt 1234 ]; do : </dev/null; i=$((i+1)); done" }
    local events = { "syscalls:sys_enter_openat" }
    local r = assert(perf.stat(argv, events, QUIET))
    local theirs = perf_stat(argv, events)["syscalls:sys_enter_openat"]
    assert.is_true(theirs >= 1234)
    local saved = F.separator
    F.separator = ""
    local plain = F.text(F.summary { r }, argv)
    F.separator = ","
    local grouped = F.text(F.summary { r }, argv)
    F.separator = saved
    assert.matches(("\n +%d +syscalls:sys_enter_openat"):format(theirs), plain)
    assert.matches(("\n +%s +syscalls:sys_enter_openat"):format(F.thousands(theirs)), grouped)
  end)

  it("gives rates in perf's units", function()
    assert.are.same({ 500, "/sec" }, { F.rate_unit(500) })
    assert.are.same({ 2.5, "K/sec" }, { F.rate_unit(2500) })
    assert.are.same({ 3, "M/sec" }, { F.rate_unit(3e6) })
    assert.are.same({ 1.5, "G/sec" }, { F.rate_unit(1.5e9) })
  end)

  it("computes the mean and the relative deviation of the mean", function()
    assert.are.same({ 10, 0 }, { F.mean_noise { 10, 10, 10 } })
    local mean, noise = F.mean_noise { 1, 2, 3 }
    assert.are.equal(2, mean)
    assert.is_true(math.abs(noise - 100 / math.sqrt(3) / 2) < 1e-9)
    assert.are.same({ 5, 0 }, { F.mean_noise { 5 } })
  end)

  it("prints perf stat's table: msec and CPUs for clocks, rates, % running when multiplexed", function()
    local r = result(4000000, {
      { name = "task-clock", raw = 2000000, type = 1, config = 1 },
      { name = "syscalls:sys_enter_openat", raw = 1000 },
      -- ran half the time it was enabled: scaled to twice its count
      { name = "instructions", raw = 617283, en = 2000000, run = 1000000, type = 0, config = 1 },
    })
    assert.are.equal(1234566, r[3])
    local text = F.text(F.summary { r }, { "ls", "-l" })
    assert.matches(" Performance counter stats for 'ls %-l':\n", text)
    assert.matches("\n              2%.00 msec task%-clock                       #    0%.500 CPUs utilized\n", text)
    assert.matches("\n             1,000      syscalls:sys_enter_openat        #  500%.000 K/sec\n", text)
    assert.matches("\n         1,234,566      instructions                     #  617%.283 M/sec%s+%(50%.00%%%)\n", text)
    assert.matches("\n       0%.004000000 seconds time elapsed\n", text)
    assert.matches("\n       0%.001000000 seconds user\n       0%.002000000 seconds sys\n", text)
  end)

  -- perf stat -a -G on 2026-11-24: each row names its event's cgroup ("" for
  -- none), a rate is per second of the clock of the same cgroup
  it("names each event's cgroup after its name, as perf stat -G does", function()
    local r = result(500000000, {
      { name = "task-clock", raw = 24740000, type = 1, config = 1 },
      { name = "syscalls:sys_enter_openat", raw = 620 },
      { name = "syscalls:sys_enter_openat", raw = 0, run = 0 },
      { name = "context-switches", raw = 317, type = 1, config = 3 },
    })
    r.events[1].cgroup, r.events[2].cgroup, r.events[3].cgroup = "statg_a", "statg_a", "statg_b"
    local s = F.summary { r }
    assert.are.equal(table.concat({ "",
      " Performance counter stats for 'system wide':", "",
      "             24.74 msec task-clock                       statg_a #    0.049 CPUs utilized",
      "               620      syscalls:sys_enter_openat        statg_a #   25.061 K/sec",
      "     <not counted>      syscalls:sys_enter_openat statg_b",
      "               317      context-switches",
      "",
      "       0.500000000 seconds time elapsed", "", "" }, "\n"), F.text(s, "system wide"))
    assert.are.equal(table.concat({
      "24.74,msec,task-clock,statg_a,2000000,100.00,0.049,CPUs utilized",
      "620,,syscalls:sys_enter_openat,statg_a,2000000,100.00,25.061,K/sec",
      "<not counted>,,syscalls:sys_enter_openat,statg_b,0,100.00,,",
      "317,,context-switches,,2000000,100.00,,", "" }, "\n"), F.csv(s, ","))
    assert.matches('^{"counter%-value" : "24%.740000", "unit" : "msec", "event" : "task%-clock", '
      .. '"cgroup" : "statg_a", "event%-runtime" : 2000000, ', F.json(s))
    assert.matches('\n{"counter%-value" : "317%.000000", "unit" : "", "event" : "context%-switches", '
      .. '"cgroup" : "", "event%-runtime" : 2000000, ', F.json(s))
    assert.not_matches("statg", F.text(F.summary { result(1, { { name = "x", raw = 1 } }) }, "system wide"))
  end)

  it("prints intervals as perf stat -I does: the interval's own rates, multiplexing, <not counted>", function()
    -- an interval of 50 ms ending 150 ms after the exec
    local r = result(nil, {
      { name = "task-clock", raw = 10000000, en = 50000000, run = 50000000, type = 1, config = 1 },
      { name = "syscalls:sys_enter_openat", raw = 2000, en = 50000000, run = 50000000 },
      { name = "instructions", raw = 1000, en = 50000000, run = 25000000, type = 0, config = 1 },
      { name = "page-faults", raw = 0, en = 50000000, run = 0, type = 1, config = 2 },
    })
    r.time, r.interval = 150000000, 3
    local text = F.interval(r, 100000000)
    assert.are.equal(table.concat({
      "     0.150000000              10.00 msec task-clock                       #    0.200 CPUs utilized",
      "     0.150000000              2,000      syscalls:sys_enter_openat        #  200.000 K/sec",
      "     0.150000000              2,000      instructions                     #  200.000 K/sec                    (50.00%)",
      "     0.150000000      <not counted>      page-faults",
      "" }, "\n"), text)
    assert.are.equal(table.concat({
      "     0.150000000,10.00,msec,task-clock,50000000,100.00,0.200,CPUs utilized",
      "     0.150000000,2000,,syscalls:sys_enter_openat,50000000,100.00,200.000,K/sec",
      "     0.150000000,2000,,instructions,25000000,50.00,200.000,K/sec",
      "     0.150000000,<not counted>,,page-faults,0,100.00,,",
      "" }, "\n"), F.interval(r, 100000000, ","))
    assert.are.equal("#           time             counts unit events\n", F.interval_header())
    -- the last, shorter interval: perf stat -I 200 on 2026-11-24 printed
    -- "0.301530484  4.35 msec task-clock ... # 0.022 CPUs utilized", of 200 ms
    r = result(nil, { { name = "task-clock", raw = 4350000, type = 1, config = 1 } })
    r.time, r.interval = 301530484, 2
    assert.are.equal("     0.301530484               4.35 msec task-clock                       #    0.022 CPUs utilized\n",
      F.interval(r, 200247325, nil, 200))
  end)

  -- perf stat -p P --per-thread on 2026-11-24: each event's threads
  -- together, the largest count first, <not counted> last; rates per
  -- second of the thread's own clock
  it("prints a process's threads as perf stat -p --per-thread does", function()
    local r = result(500000000, { { name = "syscalls:sys_enter_openat", raw = 0 },
      { name = "task-clock", raw = 0, type = 1, config = 1 } })
    r.per = { kind = "thread", by_event = true }
    for k, t in ipairs { { 28938, 0, 0 }, { 28988, 5, 980000 }, { 28989, 25, 500000 }, { 28990, 15, 660000 } } do
      local row = result(500000000, { { name = "syscalls:sys_enter_openat", raw = t[2], en = t[3], run = t[3] },
        { name = "task-clock", raw = t[3], en = t[3], run = t[3], type = 1, config = 1 } })
      row.key, row.comm, row.tid = "python3-" .. t[1], "python3", t[1]
      r.per[k] = row
    end
    assert.are.equal(table.concat({ "",
      " Performance counter stats for process id '28938':", "",
      "         python3-28989                    25      syscalls:sys_enter_openat        #   50.000 K/sec",
      "         python3-28990                    15      syscalls:sys_enter_openat        #   22.727 K/sec",
      "         python3-28988                     5      syscalls:sys_enter_openat        #    5.102 K/sec",
      "         python3-28938         <not counted>      syscalls:sys_enter_openat",
      "         python3-28988                  0.98 msec task-clock                       #    0.002 CPUs utilized",
      "         python3-28990                  0.66 msec task-clock                       #    0.001 CPUs utilized",
      "         python3-28989                  0.50 msec task-clock                       #    0.001 CPUs utilized",
      "         python3-28938         <not counted> msec task-clock", "",
      "       0.500000000 seconds time elapsed", "", "" }, "\n"),
      F.text(F.summary { r }, { title = "process id '28938'" }))
  end)

  it("prints means and their variation over several runs", function()
    local runs = {}
    for k, v in ipairs { 10, 20, 30 } do
      runs[k] = result(1000000 * k, { { name = "x", raw = v }, { name = "same", raw = 7 } })
    end
    local s = F.summary(runs)
    assert.are.equal(20, s.events[1].value)
    local text = F.text(s, { "true" })
    assert.matches("for 'true' %(3 runs%):", text)
    assert.matches("\n                20      x%s+%( %+%- 28%.87%% %)\n", text)
    assert.matches("\n                 7      same\n", text)
    -- as perf stat -r: "         0.0014559 +- 0.0000894 seconds time elapsed  ( +-  6.14% )"
    assert.matches("\n\n          0%.002000 %+%- 0%.000577 seconds time elapsed  %( %+%- 28%.87%% %)\n\n$", text)
    local csv = F.csv(s, ";")
    assert.are.equal("20;;x;28.87%;2000000;100.00;;\n7;;same;0.00%;2000000;100.00;;\n", csv)
    -- after a metric, as perf stat -r 3 printed it on 2026-11-24 (its metric
    -- column 35 wide: "              1.34 msec task-clock ... ( +-  3.69% )")
    for k, v in ipairs { 1000000, 2000000, 3000000 } do
      runs[k] = result(4000000, { { name = "task-clock", raw = v, type = 1, config = 1 } })
    end
    assert.matches("\n              2.00 msec task-clock                       #    0.500 CPUs utilized"
      .. "            ( +- 28.87% )\n", F.text(F.summary(runs), { "true" }), 1, true)
  end)

  it("summarises rows per place by key, and per thread by position", function()
    local function run(kind, keys, values)
      local r = result(4000000, { { name = "x", raw = 10 } })
      r.per = { kind = kind }
      for k, key in ipairs(keys) do
        local row = result(4000000, { { name = "x", raw = values[k] } })
        row.key, row.comm, row.tid, row.nr = key, "ls", 100 * k, 1
        r.per[k] = row
      end
      return r
    end
    local s = F.summary { run("thread", { "ls-100", "ls-200" }, { 2, 8 }),
      run("thread", { "ls-300", "ls-400" }, { 4, 6 }) }
    assert.are.equal(2, #s.per)
    assert.are.equal("ls-300", s.per[1].key)
    assert.are.equal(3, s.per[1].events[1].value)
    assert.are.equal(7, s.per[2].events[1].value)
    s = F.summary { run("core", { "S0-D0-C0", "S0-D0-C1" }, { 2, 8 }),
      run("core", { "S0-D0-C1" }, { 6 }) }
    assert.are.equal(2, #s.per)
    assert.are.equal(2, s.per[1].events[1].value)
    assert.are.equal(7, s.per[2].events[1].value)
  end)

  it("prints <not supported> rows as perf stat does", function()
    local argv = { "true" }
    local events = { "software/config=999/", "syscalls:sys_enter_openat" }
    local r = assert(perf.stat(argv, events, QUIET))
    local out = os.tmpname()
    assert(os.execute(("perf stat -x, -o %s -e %s -- true"):format(out, table.concat(events, ","))))
    local f = assert(io.open(out))
    local theirs = f:read("a"):match("(<not supported>[^\n]*)")
    f:close()
    os.remove(out)
    assert.are.equal("<not supported>,,software/config=999/,0,100.00,,", theirs)
    local csv = F.csv(F.summary { r }, ",")
    assert.are.equal(theirs, csv:match("^[^\n]*"))
    assert.matches("^<not supported>,,software/config=999/,0%.00%%,0,100%.00,,\n",
      F.csv(F.summary { r, r }, ","))
    assert.matches("\n   <not supported>      software/config=999/\n",
      F.text(F.summary { r }, argv))
  end)

  it("prints CSV as perf stat -x does, with the same counts", function()
    local argv = { "ls", "/" }
    local events = { "task-clock", "syscalls:sys_enter_openat", "syscalls:sys_enter_close" }
    local r = assert(perf.stat(argv, events, QUIET))
    local csv = F.csv(F.summary { r }, ",")
    local theirs = perf_stat(argv, events)
    local lines = {}
    for l in csv:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.matches("^%d+%.%d%d,msec,task%-clock,%d+,100%.00,%d+%.%d%d%d,CPUs utilized$", lines[1])
    assert.are.equal(("%d,,syscalls:sys_enter_openat,"):format(theirs["syscalls:sys_enter_openat"]),
      lines[2]:match("^%d+,,[^,]+,"))
    assert.are.equal(("%d,,syscalls:sys_enter_close,"):format(theirs["syscalls:sys_enter_close"]),
      lines[3]:match("^%d+,,[^,]+,"))
  end)
end)

describe("perf.stat_format's JSON, beside perf stat -j", function()
  local F = require "perf.stat_format"

  -- The objects of JSON lines, each as its keys in order and its values
  -- (strings unquoted), perf's "(null)" metric unit read as "".
  local function objects(text)
    local out = {}
    for line in text:gmatch("[^\n]+") do
      assert.matches("^{.*}$", line)
      local o = { keys = {}, values = {} }
      for key, value in line:gmatch('"([%w%-]+)" : ("?[^",}]*"?)') do
        value = value:match('^"(.*)"$') or tonumber(value)
        if value == "(null)" then value = "" end
        o.keys[#o.keys + 1], o.values[key] = key, value
      end
      out[#out + 1] = o
    end
    return out
  end

  local function perf_json(args)
    local out = os.tmpname()
    assert(os.execute(("perf stat -j -o %s %s >/dev/null 2>&1"):format(out, args)))
    local f = assert(io.open(out))
    local text = f:read("a"):gsub("^# started on [^\n]*\n", "")
    f:close()
    os.remove(out)
    return objects(text)
  end

  local function same_shape(theirs, ours, exact)
    assert.are.equal(#theirs, #ours)
    for k, o in ipairs(ours) do
      local t = theirs[k]
      assert.same(t.keys, o.keys)
      for _, key in ipairs { "event", "unit", "metric-unit", "core", "socket", "die", "cpu", "aggregate-number" } do
        -- perf 6.1 numbers a place's <not supported> row 1, whatever its CPUs
        if key ~= "aggregate-number" or o.values["counter-value"] ~= "<not supported>" then
          assert.are.equal(t.values[key], o.values[key], key)
        end
      end
      assert.are.equal(type(t.values["counter-value"]), type(o.values["counter-value"]))
      if exact[o.values.event] then
        assert.are.equal(t.values["counter-value"], o.values["counter-value"], o.values.event)
      end
    end
  end

  local EVENTS = { "task-clock", "page-faults", "syscalls:sys_enter_openat", "software/config=999/" }
  local EXACT = { ["syscalls:sys_enter_openat"] = true, ["software/config=999/"] = true }

  it("writes perf's keys, units and metrics, in perf's order", function()
    local theirs = perf_json("-e " .. table.concat(EVENTS, ",") .. " -- ls /")
    local r = assert(perf.stat({ "ls", "/" }, EVENTS, QUIET))
    local ours = objects(F.json(F.summary { r }))
    same_shape(theirs, ours, EXACT)
    assert.matches("^[1-9]%d*%.000000$", ours[3].values["counter-value"])   -- equal to perf's, above
    assert.are.equal("<not supported>", ours[4].values["counter-value"])
    assert.are.equal(r.events[1].time_running, ours[1].values["event-runtime"])
    assert.are.equal(r.events[1].value / 1e6, tonumber(ours[1].values["counter-value"]))
  end)

  it("adds the variance of several runs as perf stat -r does", function()
    local theirs = perf_json("-r 2 -e " .. table.concat(EVENTS, ",") .. " -- ls /")
    local runs = {}
    for k = 1, 2 do runs[k] = assert(perf.stat({ "ls", "/" }, EVENTS, QUIET)) end
    local ours = objects(F.json(F.summary(runs)))
    same_shape(theirs, ours, EXACT)
    assert.are.equal(0, ours[3].values.variance)
  end)

  it("leads rows per core, socket and CPU with perf's members", function()
    for kind, option in pairs { core = "--per-core", socket = "--per-socket", cpu = "-A" } do
      local theirs = perf_json("-a " .. option .. " -e task-clock,software/config=999/ -- true")
      local r = assert(perf.stat({ "true" }, { "task-clock", "software/config=999/" },
        { all_cpus = true, aggregate = kind }))
      same_shape(theirs, objects(F.json(F.summary { r })), EXACT)
    end
  end)

  it("writes multiplexed counts scaled with their share, and escapes names", function()
    local s = F.summary { { elapsed = 4000000, user = 0, sys = 0, status = 0, events = {
      { name = 'x"y\\z', raw = 50, value = 100, time_enabled = 4000000, time_running = 2000000,
        fraction = 0.5, type = 2, config = 7 } } } }
    assert.are.equal('{"counter-value" : "100.000000", "unit" : "", "event" : "x\\"y\\\\z", '
      .. '"event-runtime" : 2000000, "pcnt-running" : 50.00, "metric-value" : 0.000000, '
      .. '"metric-unit" : ""}\n', F.json(s))
  end)

  it("leads intervals with the time", function()
    local got
    assert(perf.stat({ "true" }, { "task-clock" }, { interval = 1000, on_interval = function(r)
      got = objects(F.interval(r, 0, "json"))
    end }))
    assert.same({ "interval", "counter-value", "unit", "event", "event-runtime", "pcnt-running",
      "metric-value", "metric-unit" }, got[1].keys)
  end)
end)
