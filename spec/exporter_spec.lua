-- perf.exporter: counters that keep counting, read as Prometheus text.
local H = require "helpers"
local perf = require "perf"
local exporter = require "perf.serving.exporter"

local function value(text, series)
  local v = text:match("\n" .. series:gsub("%p", "%%%0") .. " (%S+)\n")
  return v and (math.tointeger(tonumber(v)) or tonumber(v))
end

-- Each family's lines: its # HELP, its # TYPE, then its samples, together.
local function families(text)
  local fams, order, current = {}, {}, nil
  for line in text:gmatch("[^\n]+") do
    local kind, name, rest = line:match("^# (%u+) (%S+) (.*)$")
    if kind then
      if kind == "HELP" then
        assert(not fams[name], "family given twice: " .. name)
        fams[name], current = { help = rest, samples = {} }, name
        order[#order + 1] = name
      else
        assert.equal(current, name)
        fams[name].type = rest
      end
    else
      local fam = line:match("^([%w_]+)[{ ]")
      assert.equal(current, fam, line)
      fams[fam].samples[#fams[fam].samples + 1] = line
    end
  end
  return fams, order
end

describe("perf.exporter", function()
  it("names each event's counter family as the issue says", function()
    assert.equal("perf_page_faults_total", exporter.family("page-faults"))
    assert.equal("perf_syscalls_sys_enter_openat_total", exporter.family("syscalls:sys_enter_openat"))
    assert.equal("perf_cpu_event_0x3c_umask_0x0__total", exporter.family("cpu/event=0x3c,umask=0x0/"))
    assert.equal([[a\\b\"c\nd]], exporter.label_value('a\\b"c\nd'))
  end)

  it("counts this process exactly, each scrape reading it again", function()
    local e <close> = assert(perf.exporter { events = { "syscalls:sys_enter_openat", "page-faults" } })
    local series = ('perf_syscalls_sys_enter_openat_total{pid="%d"}'):format(H.PID)
    local before = value(e:metrics(), series)
    H.opens(25)
    local text = e:metrics()
    assert.equal(25, value(text, series) - before)
    H.opens(3)
    assert.equal(28, value(e:metrics(), series) - before)
    assert.equal(1, value(text, ('perf_target_up{pid="%d"}'):format(H.PID)))
  end)

  it("writes the text format 0.0.4: HELP and TYPE, counters, times, the target gauge", function()
    local e <close> = assert(perf.exporter { events = "page-faults,task-clock", cpus = "0" })
    local fams, order = families(e:metrics())
    assert.same({ "perf_page_faults_total", "perf_task_clock_total", "perf_enabled_seconds_total",
      "perf_running_seconds_total", "perf_target_up" }, order)
    for name, f in pairs(fams) do
      assert.equal(name == "perf_target_up" and "gauge" or "counter", f.type)
      assert.equal(name:match("seconds") and 2 or 1, #f.samples, name)
    end
    assert.matches('^perf_page_faults_total{cpu="0"} %d+$', fams.perf_page_faults_total.samples[1])
    assert.matches('^perf_enabled_seconds_total{event="page%-faults",cpu="0"} %d+%.%d+$',
      fams.perf_enabled_seconds_total.samples[1])
    assert.equal('perf_target_up{cpu="0"} 1', fams.perf_target_up.samples[1])
  end)

  it("labels every online CPU with all_cpus", function()
    local e <close> = assert(perf.exporter { events = "context-switches", all_cpus = true })
    local text = e:metrics()
    for _, c in ipairs(require("perf.event.capabilities").online_cpus()) do
      assert.truthy(value(text, ('perf_context_switches_total{cpu="%d"}'):format(c)))
      assert.is_true(value(text, ('perf_enabled_seconds_total{event="context-switches",cpu="%d"}')
        :format(c)) > 0, "CPU " .. c .. " not counting")
    end
  end)

  it("never gives a count below one it gave before", function()
    local e <close> = assert(perf.exporter { events = "page-faults", cpus = "0" })
    local key = 'perf_page_faults_total{cpu="0"}'
    e:metrics()
    e.last[key] = math.maxinteger - 1                -- as if an estimate had been higher
    assert.equal(math.maxinteger - 1, value(e:metrics(), key))
  end)

  it("says a process that exited is down, and keeps its counts", function()
    local o = require("serve_helpers").opener(4)
    local e <close> = assert(perf.exporter { events = "syscalls:sys_enter_openat", pid = o.pid })
    o.go()
    local series = ('perf_syscalls_sys_enter_openat_total{pid="%d"}'):format(o.pid)
    assert.equal(4, value(e:metrics(), series))
    assert.equal(1, value(e:metrics(), ('perf_target_up{pid="%d"}'):format(o.pid)))
    o.finish()                                       -- its stdin closes: it exits
    local text = e:metrics()
    assert.equal(0, value(text, ('perf_target_up{pid="%d"}'):format(o.pid)))
    assert.equal(4, value(text, series))
  end)

  it("says a cgroup that was removed is down", function()
    local root = H.cgroup2()
    if not root then return pending("needs a cgroup v2 hierarchy") end
    local name = ("perf-exporter-%d-%d"):format(H.PID, math.random(1e9))
    assert(os.execute(("mkdir %s/%s"):format(root, name)))
    local e <close> = assert(perf.exporter { events = "context-switches", cgroup = name })
    assert.equal(1, value(e:metrics(), ('perf_target_up{cgroup="%s"}'):format(name)))
    assert(os.execute(("rmdir %s/%s"):format(root, name)))
    local text = e:metrics()
    assert.equal(0, value(text, ('perf_target_up{cgroup="%s"}'):format(name)))
    assert.truthy(value(text, ('perf_context_switches_total{cgroup="%s"}'):format(name)))
  end)

  it("returns the kernel's refusal, and raises on misuse", function()
    local msg = H.fails(perf.exporter { events = "syscalls:sys_enter_openat", pid = 0x3fffffff })
    H.assert_has("no process", msg)
    assert.error_matches(function() perf.exporter { evnets = "page-faults" } end,
      "unknown option 'evnets'")
    assert.error_matches(function() perf.exporter { all_cpus = true, pid = 1 } end, "one target")
    assert.error_matches(function() perf.exporter { events = { "page-faults", "page-faults" } } end,
      "both make the metric perf_page_faults_total")
    assert.error_matches(function() perf.exporter { max_seconds = 0 } end, "max_seconds")
  end)

  it("closes its counters (fds back), and refuses use after close", function()
    local before = H.fd_count()
    local e = assert(perf.exporter { events = "page-faults,context-switches", all_cpus = true })
    assert.is_true(H.fd_count() > before)
    e:close()
    e:close()
    assert.equal(before, H.fd_count())
    assert.equal("perf.exporter (closed)", tostring(e))
    assert.error_matches(function() e:metrics() end, "closed perf.exporter")
  end)

  it("profiles this process into pprof's gzipped bytes while `wait` runs", function()
    local e <close> = assert(perf.exporter { events = "page-faults" })
    local work = 0
    local gz = assert(e:profile(1, { event = "syscalls:sys_enter_openat", wait = function(secs)
      assert.equal(1, secs)
      H.opens(30)
      work = work + 1
    end }))
    assert.equal(1, work)
    assert.equal("\31\139", gz:sub(1, 2))             -- gzip's magic
    assert.error_matches(function() e:profile(61) end, "from 1 to 60 %(the cap%)")
    assert.error_matches(function() e:profile(1, { frequency = 9 }) end, "unknown profile option 'frequency'")
  end)
end)
