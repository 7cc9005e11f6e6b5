-- perf.data: files perf record writes during the run, read back and
-- compared with what perf script prints for the same file.
local H = require "helpers"
local data = require "perf.data"
local core = require "perf.core"

local PERF = "/usr/bin/perf"
local have_perf = io.open(PERF) ~= nil

local dir
local function tmp(name) return dir .. "/" .. name end

local function record(args, out)
  local ok = os.execute(("%s record -q -o %s %s >/dev/null 2>&1"):format(PERF, out, args))
  assert(ok, "perf record " .. args)
  return out
end

-- perf script's samples: { tid, cpu, time, period, ips = {...} } each.
-- With a callchain, `ip` prints the chain, one address a line.
local function script(file, fields, pipe)
  local cmd = pipe and ("%s script -i - -F %s --ns < %s") or ("%s script -i %s -F %s --ns")
  cmd = pipe and cmd:format(PERF, fields, file) or cmd:format(PERF, file, fields)
  local list, cur = {}, nil
  for line in H.sh(cmd):gmatch("[^\n]*") do
    local tid, rest = line:match("^%s*(%d+)%s+(.*)$")
    if tid then
      cur = { tid = math.tointeger(tid), ips = {} }
      local cpu = rest:match("^%[(%d+)%]")
      if cpu then cur.cpu = math.tointeger(cpu) rest = rest:gsub("^%[%d+%]%s*", "") end
      local s, ns, period, ip = rest:match("^(%d+)%.(%d+):%s+(%d+)%s*(%x*)")
      cur.time = math.tointeger(s) * 1000000000 + math.tointeger(ns)
      cur.period = math.tointeger(period)
      if ip ~= "" then cur.ips[1] = math.tointeger(tonumber(ip, 16)) end
      list[#list + 1] = cur
    else
      local ip = line:match("^%s+(%x+)%s*$")
      if ip and cur then cur.ips[#cur.ips + 1] = math.tointeger(tonumber(ip, 16)) end
    end
  end
  return list
end

-- perf script prints samples in time order (it sorts what it reads); the
-- file holds them in the order each CPU's ring was drained
local function by_time(list)
  table.sort(list, function(a, b)
    if a.time ~= b.time then return a.time < b.time end
    return (a.cpu or 0) < (b.cpu or 0)
  end)
  return list
end

local read_all = H.read_file

-- s with `flips` random bytes replaced, drawn from a generator seeded
-- with `seed` (the same corruptions on every run).
local function corrupt(s, seed, flips)
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return seed % n end
  return function()
    local b = { s:byte(1, -1) }
    for _ = 1, flips do
      local i = rnd(#b) + 1
      b[i] = rnd(256)
    end
    local chunks = {}
    for i = 1, #b, 4096 do chunks[#chunks + 1] = string.char(table.unpack(b, i, math.min(i + 4095, #b))) end
    return table.concat(chunks)
  end
end

local function write_all(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
  return path
end

-- the callchain as perf script prints it: addresses without the context
-- markers (PERF_CONTEXT_MAX and above, read as unsigned)
local function chain_ips(chain)
  local ips = {}
  for _, ip in ipairs(chain) do
    if type(ip) == "number" and math.ult(ip, -4095) then ips[#ips + 1] = ip end
  end
  return ips
end

-- a table as a string, keys sorted: equal tables, equal strings
local function serialize(v)
  if type(v) ~= "table" then return type(v) == "string" and ("%q"):format(v) or tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  local out = {}
  for i, k in ipairs(keys) do out[i] = tostring(k) .. "=" .. serialize(v[k]) end
  return "{" .. table.concat(out, ",") .. "}"
end

-- perf report -D: each record perf read, in the order it read them (the
-- records of a compressed one after it, decompressed by perf itself), as
-- the bytes it dumps
local function perf_dump(file, pipe)
  local cmd = pipe and ("%s report -D -i - < %s"):format(PERF, file)
                    or ("%s report -D -i %s"):format(PERF, file)
  local list, cur = {}, nil
  for line in H.sh(cmd):gmatch("[^\n]*") do
    if line:match("^%. %.%.%. raw event: size %d+ bytes") then
      cur = {}
      list[#list + 1] = cur
    elseif cur and line:match("^%.  %x%x%x%x:  ") then
      for hex in line:sub(10, 57):gmatch("%x%x") do cur[#cur + 1] = string.char(tonumber(hex, 16)) end
    else
      cur = nil
    end
  end
  for i, bytes in ipairs(list) do list[i] = table.concat(bytes) end
  return list
end

-- perf report --stats: records of each type perf read, by our names
local function perf_stats(file, pipe)
  local cmd = pipe and ("%s report --stats -i - < %s"):format(PERF, file)
                    or ("%s report --stats -i %s"):format(PERF, file)
  local counts = {}
  for line in H.sh(cmd):gmatch("[^\n]*") do
    local name, n = line:match("^%s*([%u_%d]+) events:%s+(%d+)")
    if name and name ~= "TOTAL" and not counts[name:lower()] then   -- the aggregate, first
      counts[name:lower()] = math.tointeger(n)
    end
  end
  return counts
end

describe("perf.data", function()
  if not have_perf then
    pending("needs the perf tool at " .. PERF)
    return
  end

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    record("-e syscalls:sys_enter_openat -c 1 -- ls /", tmp("tp.data"))
    record("-e cpu-clock --sample-cpu -g -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; ls / >/dev/null; sh -c \"echo >/dev/null\"'",
           tmp("clk.data"))
    os.execute(("%s record -q -o - -e syscalls:sys_enter_openat -c 1 -- ls / 2>/dev/null >%s")
      :format(PERF, tmp("pipe.data")))
    record("-e syscalls:sys_enter_openat,syscalls:sys_enter_close -c 1 -- ls /", tmp("two.data"))
    -- compressed: a small ring (8 pages), so that the records come in
    -- many compressed ones, some records spanning two of them
    local work = "sh -c 'for i in $(seq 3000); do : </dev/null; done; ls -R /usr/share/doc >/dev/null'"
    record("-z -m 8 -e syscalls:sys_enter_close -c 1 -- " .. work, tmp("z.data"))
    os.execute(("%s record -q -z -m 8 -o - -e syscalls:sys_enter_close -c 1 -- %s 2>/dev/null >%s")
      :format(PERF, work, tmp("zpipe.data")))
  end)

  teardown(function()
    if dir then os.execute("rm -rf " .. dir) end
  end)

  describe("open", function()
    it("describes the events and decodes the plain feature sections", function()
      local f <close> = assert(data.open(tmp("tp.data")))
      assert.equal(1, #f.attrs)
      assert.equal("syscalls:sys_enter_openat", f.attrs[1].name)
      assert.equal(2, f.attrs[1].attr.type)
      assert.equal(H.tracepoint_id("syscalls", "sys_enter_openat"), f.attrs[1].attr.config)
      assert.equal(1, f.attrs[1].attr.sample_period)
      assert.is_true(#f.attrs[1].ids >= 1)
      local h = f.header
      assert.equal(H.sh("uname -n"):gsub("\n", ""), h.hostname)
      assert.equal(H.sh("uname -r"):gsub("\n", ""), h.osrelease)
      assert.equal(H.sh("uname -m"):gsub("\n", ""), h.arch)
      assert.equal(tonumber(H.sh("nproc")), h.nrcpus.online)
      assert.equal(PERF, h.cmdline[1])
      assert.truthy(table.concat(h.cmdline, " "):find("record", 1, true))
      assert.equal("syscalls:sys_enter_openat", h.event_desc[1].name)
      assert.equal("string", type(h.cache))        -- no plain form: raw bytes
      assert.is_false(f.pipe)
      assert.matches('perf.data ".-tp.data" %(normal, %d+ records, events: syscalls:sys_enter_openat%)', tostring(f))
    end)

    it("its tables print readably at the prompt, and stay plain tables", function()
      local f <close> = assert(data.open(tmp("tp.data")))
      assert.matches('^perf%.data%.attr { attr = {%d+ entries}, ids = {%d+.*}, name = "syscalls:sys_enter_openat" }$',
                     tostring(f.attrs[1]))
      assert.matches('^perf%.data%.attrs { {3 entries} }$', tostring(f.attrs))
      H.assert_has(('perf.data.header { arch = "%s", '):format(f.header.arch), tostring(f.header))
      H.assert_has(('hostname = "%s"'):format(f.header.hostname), tostring(f.header))
      assert.matches('^perf%.data%.cmdline { "/usr/bin/perf", "record", "%-q", ', tostring(f.header.cmdline))
      assert.matches('^perf%.data%.nrcpus { available = %d+, online = %d+ }$', tostring(f.header.nrcpus))
      assert.equal("syscalls:sys_enter_openat", f.attrs[1].name)
      assert.equal(PERF, f.header.cmdline[1])
      local n = 0
      for _ in pairs(f.header) do n = n + 1 end
      assert.is_true(n > 10)
    end)

    it("returns nil, message, errno for a file that cannot be read", function()
      local msg, errno = H.fails(data.open(tmp("missing.data")))
      H.assert_has("missing.data", msg)
      H.assert_has("ENOENT", msg)
      assert.equal(2, errno)
    end)

    it("raises on misuse", function()
      assert.has_error(function() data.open(42) end)
    end)

    it("closes: close is idempotent, methods raise after it, <close> works", function()
      local f = assert(data.open(tmp("tp.data")))
      assert.is_true(f:close())
      assert.is_true(f:close())
      assert.has_error(function() f:records() end, "attempt to use a closed perf.data file")
      assert.matches("closed", tostring(f))
      do local g_ <close> = assert(data.open(tmp("tp.data"))) end
    end)
  end)

  describe("records", function()
    it("every tracepoint hit of perf record -c 1, as perf script prints it", function()
      local want = script(tmp("tp.data"), "tid,cpu,time,ip,period")
      local f <close> = assert(data.open(tmp("tp.data")))
      local got = {}
      for r in f:records() do
        if r.type == "sample" then
          got[#got + 1] = r
          assert.equal("syscalls:sys_enter_openat", r.event)
          assert.equal("string", type(r.raw))
        end
      end
      assert.is_true(#want > 5)
      assert.equal(#want, #got)
      by_time(want) by_time(got)
      for i, w in ipairs(want) do
        assert.same({ w.tid, w.cpu, w.time, w.period, w.ips[1] },
                    { got[i].tid, got[i].cpu, got[i].time, got[i].period, got[i].ip })
      end
    end)

    it("cpu-clock with callchains, a command and its children", function()
      local want = script(tmp("clk.data"), "tid,cpu,time,ip,period")
      local f <close> = assert(data.open(tmp("clk.data")))
      local got, forked = {}, {}
      for r in f:records() do
        if r.type == "sample" then
          got[#got + 1] = r
          assert.equal("cpu-clock", r.event)
        elseif r.type == "fork" then
          forked[r.pid] = true
        end
      end
      assert.is_true(#want > 10)
      assert.equal(#want, #got)
      by_time(want) by_time(got)
      local compared = 0
      local n = 0                      -- the command's children: ls and sh
      for _ in pairs(forked) do n = n + 1 end
      assert.is_true(n >= 2)
      for i, w in ipairs(want) do
        local g = got[i]
        assert.same({ w.tid, w.cpu, w.time, w.period }, { g.tid, g.cpu, g.time, g.period })
        -- perf script prints a user frame relative to its mapping
        -- (map_ip: ip - start + pgoff, page-aligned both): the page
        -- offset is kept, and kernel frames are printed as they are
        -- (perf script prints no chain at all for a sample whose chain it
        -- could not resolve, e.g. while the command execs)
        local ips = chain_ips(g.callchain)
        if #w.ips > 0 then compared = compared + 1 assert.equal(#w.ips, #ips) end
        for k, ip in ipairs(#w.ips > 0 and ips or {}) do
          if ip < 0 then assert.equal(w.ips[k], ip)
          else assert.equal(w.ips[k] & 0xfff, ip & 0xfff) end
        end
      end
      assert.is_true(compared > #want // 2)
    end)

    it("samples(field, ...) yields the same values as records()", function()
      local f <close> = assert(data.open(tmp("clk.data")))
      local want = {}
      for r in f:records() do
        if r.type == "sample" then want[#want + 1] = { r.tid, r.time, r.ip, r.period } end
      end
      local got = {}
      for tid, time, ip, period in f:samples("tid", "time", "ip", "period") do
        got[#got + 1] = { tid, time, ip, period }
      end
      assert.same(want, got)
      assert.has_error(function() f:samples("addr") end,
        "samples: field 'addr' is not in the sample_type of every event of this file")
      assert.has_error(function() f:samples("nosuch") end)
    end)

    it("samples(field, ...): fields read in place and fields decoded agree with records()", function()
      local f <close> = assert(data.open(tmp("tp.data")))
      local want, got = {}, {}
      for r in f:records() do
        if r.type == "sample" then
          want[#want + 1] = { r.cpu, r.pid, r.period, r.raw, r.cpumode, r.time }
        end
      end
      for cpu, pid, period, raw, cpumode, time in f:samples("cpu", "pid", "period", "raw", "cpumode", "time") do
        got[#got + 1] = { cpu, pid, period, raw, cpumode, time }
      end
      assert.is_true(#want > 5)
      assert.same(want, got)
      local fast = {}
      for cpu, pid, period, time in f:samples("cpu", "pid", "period", "time") do
        fast[#fast + 1] = { cpu, pid, period, time }
      end
      for i, w in ipairs(want) do assert.same({ w[1], w[2], w[3], w[6] }, fast[i]) end
    end)

    it("a reused table is refilled and cleared between records", function()
      local f <close> = assert(data.open(tmp("tp.data")))
      local t, n = {}, 0
      for r in f:records(t) do
        if r.type == "sample" then
          assert.equal(t, r)
          n = n + 1
        elseif r.type == "comm" then
          assert.is_nil(r.ip)
        end
      end
      assert.is_true(n > 5)
    end)

    it("a reused table holds, record by record, what records() gives (one event, two, callchains)", function()
      -- samples after one of the same event and misc are refilled from Lua,
      -- the rest from C: both must leave t as a fresh record is
      local function copy(r)
        local c = {}
        for k, v in pairs(r) do c[k] = type(v) == "table" and copy(v) or v end
        return c
      end
      for _, name in ipairs { "tp.data", "two.data", "clk.data" } do
        local f <close> = assert(data.open(tmp(name)))
        local want, mt = {}, nil
        for r in f:records() do
          want[#want + 1] = copy(r)
          if r.type == "comm" then mt = getmetatable(r) end       -- made in C
          if r.type == "sample" then                              -- made in Lua
            assert.equal(mt, getmetatable(r))
            assert.not_matches("^table: ", tostring(r))
          end
        end
        assert.truthy(mt)
        local t, i, runs, last = {}, 0, 0, nil
        for r in f:records(t) do
          i = i + 1
          if r.type == "sample" then assert.equal(t, r) end
          assert.same(want[i], copy(r), name .. " record " .. i)
          if r.type == "sample" and last == r.event then runs = runs + 1 end
          last = r.type == "sample" and r.event or nil
        end
        assert.equal(#want, i)
        assert.is_true(runs > 3, name)        -- samples that followed one of their event
      end
    end)

    it("names the records perf adds itself", function()
      local f <close> = assert(data.open(tmp("tp.data")))
      local seen = {}
      for r in f:records() do seen[r.type] = r end
      assert.truthy(seen.finished_round)
      assert.truthy(seen.mmap2 or seen.mmap)
      assert.truthy(seen.comm)
      assert.equal("table", type(seen.thread_map.threads))
      assert.equal("table", type(seen.cpu_map.cpus))
      assert.equal(#f.attrs[1].ids, #seen.id_index.entries)
      assert.equal(f.attrs[1].ids[1], seen.id_index.entries[1].id)
    end)

    it("numbers as the kernel means them: pid -1 is -1, addresses the same 64 bits as perf prints", function()
      -- perf report -D: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276988) @ 0xffffffff81000000]: x [kernel.kallsyms]_text
      local want = H.sh(("%s report -D -i %s"):format(PERF, tmp("clk.data")))
        :match("PERF_RECORD_MMAP (%-?%d+)/(%-?%d+): %[0x(%x+)%(0x(%x+)%) @ 0x(%x+)%]: %a %[kernel%.kallsyms%]_text")
      assert.equal("-1", want)
      local f <close> = assert(data.open(tmp("clk.data")))
      local kmap
      for r in f:records() do
        if r.type == "mmap" and r.filename == "[kernel.kallsyms]_text" then kmap = r end
      end
      assert.equal(-1, kmap.pid)
      local _, _, addr, len, pgoff = H.sh(("%s report -D -i %s"):format(PERF, tmp("clk.data")))
        :match("PERF_RECORD_MMAP (%-?%d+)/(%-?%d+): %[0x(%x+)%(0x(%x+)%) @ 0x(%x+)%]: %a %[kernel%.kallsyms%]_text")
      assert.equal(addr, ("%x"):format(kmap.addr))
      assert.equal(len, ("%x"):format(kmap.len))
      assert.equal(pgoff, ("%x"):format(kmap.pgoff))
      -- a kernel address is above every user one, compared unsigned
      assert.is_true(math.ult(0x7fffffffffff, kmap.addr))
    end)

    it("two events: each record decoded with its attr and named", function()
      local want = script(tmp("two.data"), "tid,cpu,time,ip,period")
      local f <close> = assert(data.open(tmp("two.data")))
      assert.equal(2, #f.attrs)
      local counts, got = {}, {}
      for r in f:records() do
        if r.type == "sample" then
          counts[r.event] = (counts[r.event] or 0) + 1
          got[#got + 1] = r
        end
      end
      assert.equal(#want, #got)
      by_time(want) by_time(got)
      assert.is_true(counts["syscalls:sys_enter_openat"] > 5)
      assert.is_true(counts["syscalls:sys_enter_close"] > 5)
      for i, w in ipairs(want) do
        assert.same({ w.tid, w.time }, { got[i].tid, got[i].time })
      end
      -- the id read in place names the same event as the record's
      local ids, k = {}, 0
      for _, a in ipairs(f.attrs) do for _, id in ipairs(a.ids) do ids[id] = a.name end end
      local order = {}
      for r in f:records() do if r.type == "sample" then order[#order + 1] = r end end
      for id, time in f:samples("id", "time") do
        k = k + 1
        assert.same({ order[k].event, order[k].time }, { ids[id], time })
      end
      assert.equal(#order, k)
    end)

    it("a sample no event of the file wrote: samples() raises where it is and why, records() yields it raw", function()
      local s = read_all(tmp("two.data"))
      local doff, dsize = string.unpack("<i8i8", s, 41)
      local f0 <close> = assert(data.open(tmp("two.data")))
      -- IP|TID|TIME|ID first: the id is the fourth u64 of a sample's body
      assert.equal(0x47, f0.attrs[1].attr.sample_type & 0x1004f)
      -- the first sample, its id made unknown
      local pos = doff + 1
      while string.unpack("<I4", s, pos) ~= 9 do pos = pos + string.unpack("<I2", s, pos + 6) end
      assert.is_true(pos < doff + dsize)
      local bad = s:sub(1, pos + 31) .. string.pack("<I8", 0x7fffffff12345) .. s:sub(pos + 40)
      local f <close> = assert(data.open(write_all(tmp("badid.data"), bad)))
      local ok, err = pcall(function() for _ in f:samples("tid") do end end)
      assert.is_false(ok)
      assert.matches(("sample record at offset 0x%x: record id matches no event of this file$"):format(pos - 1), err)
      assert.is_nil(err:find("ok:", 1, true))
      local raw
      for r in f:records() do if r.type == "sample" and r.error then raw = r break end end
      assert.matches("record id matches no event of this file$", raw.error)
      assert.equal("string", type(raw.raw))
    end)

    it("a record from the file equals the one the ring decoder makes of its bytes", function()
      local s = read_all(tmp("tp.data"))
      local doff, dsize = string.unpack("<i8i8", s, 41)
      local f <close> = assert(data.open(tmp("tp.data")))
      local a = f.attrs[1].attr
      local layout = { sample_type = a.sample_type, sample_id_all = a.sample_id_all or false }
      local pos, n = doff + 1, 0
      for r in f:records() do
        local size = string.unpack("<I2", s, pos + 6)
        local bytes = s:sub(pos, pos + size - 1)
        pos = pos + size
        if r.type == "sample" or r.type == "comm" or r.type == "mmap2" then
          local want = core.decode(bytes, layout)
          r.event = nil
          assert.same(want, r)
          n = n + 1
        end
      end
      assert.equal(doff + dsize + 1, pos)
      assert.is_true(n > 5)
    end)
  end)

  describe("leader sampling", function()
    -- perf record -e '{cpu-clock,page-faults}:S': the leader samples, each
    -- sample reads the group; perf script shows a sample of each member
    local function script_events(file)
      local list = {}
      for line in H.sh(("%s script -i %s -F tid,time,period,event --ns"):format(PERF, file)):gmatch("[^\n]+") do
        local tid, s, ns, period, ev = line:match("^%s*(%d+)%s+(%d+)%.(%d+):%s+(%d+)%s+([%w%-:]+):")
        if tid then
          list[#list + 1] = ("%s %d %s %s"):format(tid, math.tointeger(s) * 1000000000 + math.tointeger(ns), period, ev)
        end
      end
      return list
    end

    it("yields a sample of each member, built from the group read values, as perf script", function()
      local path = tmp("leader.data")
      record("-e '{cpu-clock,page-faults}:S' -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; ls -R /usr/share/doc >/dev/null'", path)
      local want = script_events(path)
      local f <close> = assert(data.open(path))
      local name_of = {}                              -- one id per CPU for each event
      for _, a in ipairs(f.attrs) do for _, id in ipairs(a.ids) do name_of[id] = a.name end end
      local got, counts, reads = {}, {}, 0
      for r in f:records() do
        if r.type == "sample" then
          got[#got + 1] = ("%d %d %d %s"):format(r.tid, r.time, r.period, r.event)
          counts[r.event] = (counts[r.event] or 0) + 1
          assert.equal(2, #r.read)                      -- the raw group read stays reachable
          assert.equal(r.event, name_of[r.id])
          if r.event == "page-faults" then reads = reads + 1 end
        end
      end
      assert.is_true(counts["cpu-clock"] > 10)
      assert.is_true(counts["page-faults"] > 0)
      table.sort(want) table.sort(got)
      assert.same(want, got)
      assert.is_true(reads > 0)
      -- the fast path yields the same
      local fast = {}
      for tid, time, period, id in f:samples("tid", "time", "period", "id") do
        fast[#fast + 1] = ("%d %d %d %s"):format(tid, time, period, name_of[id])
      end
      table.sort(fast)
      assert.same(want, fast)
      -- split_groups = false: the samples as written, the leader's only
      local raw <close> = assert(data.open(path, { split_groups = false }))
      local n = 0
      for r in raw:records() do
        if r.type == "sample" then n = n + 1 assert.equal("cpu-clock", r.event) end
      end
      assert.is_true(n >= counts["cpu-clock"])
      assert.has_error(function() data.open(path, { split = false }) end)
    end)
  end)

  describe("pipe mode", function()
    it("reads perf record -o - output, attrs from its header_attr records", function()
      local want = script(tmp("pipe.data"), "tid,time,ip,period", true)
      local f <close> = assert(data.open(tmp("pipe.data")))
      assert.is_true(f.pipe)
      assert.equal(1, #f.attrs)
      assert.equal("syscalls:sys_enter_openat", f.attrs[1].name)
      assert.equal(H.sh("uname -n"):gsub("\n", ""), f.header.hostname)
      local got, seen = {}, {}
      for r in f:records() do
        seen[r.type] = true
        if r.type == "sample" then got[#got + 1] = r end
      end
      assert.truthy(seen.header_attr)
      assert.truthy(seen.header_feature)
      assert.is_true(#want > 5)
      assert.equal(#want, #got)
      by_time(want) by_time(got)
      for i, w in ipairs(want) do
        assert.same({ w.tid, w.time, w.period, w.ips[1] },
                    { got[i].tid, got[i].time, got[i].period, got[i].ip })
      end
    end)
  end)

  describe("compressed records (perf record -z)", function()
    -- perf script's samples as pid, tid, time, cpu
    local function script_ids(file, pipe)
      local cmd = pipe and ("%s script -i - -F pid,tid,cpu,time --ns < %s"):format(PERF, file)
                        or ("%s script -i %s -F pid,tid,cpu,time --ns"):format(PERF, file)
      local list = {}
      for line in H.sh(cmd):gmatch("[^\n]*") do
        local pid, tid, cpu, sec, ns = line:match("^%s*(%d+)/(%d+)%s+%[(%d+)%]%s+(%d+)%.(%d+):")
        if pid then
          list[#list + 1] = { pid = math.tointeger(pid), tid = math.tointeger(tid),
                              cpu = math.tointeger(cpu),
                              time = math.tointeger(sec) * 1000000000 + math.tointeger(ns) }
        end
      end
      return list
    end

    local function same_samples(file, pipe)
      local want = script_ids(file, pipe)
      local f <close> = assert(data.open(file))
      local got = {}
      for r in f:records() do
        if r.type == "sample" then
          assert.equal("syscalls:sys_enter_close", r.event)
          got[#got + 1] = r
        end
      end
      assert.is_true(#want > 3000)
      assert.equal(#want, #got)
      by_time(want) by_time(got)
      for i, w in ipairs(want) do
        assert.same({ w.pid, w.tid, w.cpu, w.time }, { got[i].pid, got[i].tid, got[i].cpu, got[i].time })
      end
      return f
    end

    it("gives every sample perf script prints, with its pid, tid, cpu and time", function()
      local f = same_samples(tmp("z.data"))
      assert.is_true(f.compressed > 10)
      assert.matches('perf.data ".-z.data" %(normal, compressed, closed, %d+ records', tostring(f))
    end)

    it("yields each record as the ring decoder decodes the bytes perf decompresses", function()
      local f <close> = assert(data.open(tmp("z.data")))
      local a = f.attrs[1].attr
      local layout = { sample_type = a.sample_type, sample_id_all = a.sample_id_all or false }
      -- the kernel's records (types below 64); perf dumps them as it
      -- delivers them, sorted by time within each round: compared as sets
      local want, got = {}, {}
      for _, bytes in ipairs(perf_dump(tmp("z.data"))) do
        if #bytes >= 8 and string.unpack("<I4", bytes) < 64 then
          want[#want + 1] = serialize(core.decode(bytes, layout))
        end
      end
      for r in f:records() do
        if r.offset == nil then                  -- not one of perf's own
          assert.equal("syscalls:sys_enter_close", r.event)
          r.event = nil
          got[#got + 1] = serialize(r)
        end
      end
      assert.is_true(#got > 3000)
      table.sort(want)
      table.sort(got)
      assert.same(want, got)
    end)

    it("yields as many records of each type as perf report --stats counts", function()
      local f <close> = assert(data.open(tmp("z.data")))
      local want = perf_stats(tmp("z.data"))
      assert.equal(f.compressed, want.compressed)
      want.compressed = nil
      local got, n = {}, 0
      for r in f:records() do
        got[r.type] = (got[r.type] or 0) + 1
        n = n + 1
      end
      assert.same(want, got)
      assert.equal(f.nrecords, n)
    end)

    it("samples(field, ...) yields what records() does", function()
      local f <close> = assert(data.open(tmp("z.data")))
      local want, got = {}, {}
      for r in f:records() do
        if r.type == "sample" then want[#want + 1] = { r.pid, r.tid, r.time, r.cpu } end
      end
      for pid, tid, time, cpu in f:samples("pid", "tid", "time", "cpu") do
        got[#got + 1] = { pid, tid, time, cpu }
      end
      assert.is_true(#want > 3000)
      assert.same(want, got)
    end)

    it("decodes the header's compressed feature", function()
      local f <close> = assert(data.open(tmp("z.data")))
      local c = f.header.compressed
      assert.equal("zstd", c.type)
      assert.equal(1, c.level)                       -- -z: level 1
      assert.equal(9 * 4096, c.mmap_len)             -- -m 8: 8 data pages and the control page
      assert.is_true(c.ratio >= 1)
      assert.equal(0, c.version)
      local plain <close> = assert(data.open(tmp("tp.data")))
      assert.is_nil(plain.header.compressed)
      assert.equal(0, plain.compressed)
    end)

    it("reads pipe mode", function()
      local f = same_samples(tmp("zpipe.data"), true)
      assert.is_true(f.pipe)
      assert.is_true(f.compressed > 10)
      assert.equal("zstd", f.header.compressed.type)
      assert.equal("syscalls:sys_enter_close", f.attrs[1].name)
    end)

    -- the pipe-mode file with its compressed records turned into
    -- PERF_RECORD_COMPRESSED2 (u64 data_size, then the data, padded to 8),
    -- as newer perf writes them; `edit(i, rec)` may change the i-th
    local function as_compressed2(s, edit)
      local out, pos, i = { s:sub(1, 16) }, 17, 0
      while pos <= #s do
        local t, misc, size = string.unpack("<I4I2I2", s, pos)
        if t == 66 then          -- header_tracing_data: its data follows, padded to 8
          size = size + ((string.unpack("<I4", s, pos + 8) + 7) & ~7)
        end
        local rec = s:sub(pos, pos + size - 1)
        if t == 81 then
          i = i + 1
          local d = rec:sub(9)
          local pad = (8 - #d % 8) % 8
          rec = string.pack("<I4I2I2i8", 83, misc, 16 + #d + pad, #d) .. d .. ("\0"):rep(pad)
          if edit then rec = edit(i, rec) end
        end
        out[#out + 1] = rec
        pos = pos + size
      end
      assert(i > 10, "compressed records converted")
      return table.concat(out)
    end

    it("reads PERF_RECORD_COMPRESSED2 as newer perf writes it", function()
      local s = as_compressed2(read_all(tmp("zpipe.data")))
      local f <close> = assert(data.open(write_all(tmp("z2.data"), s)))
      local g <close> = assert(data.open(tmp("zpipe.data")))
      local a, b = {}, {}
      for r in f:records() do r.offset = nil a[#a + 1] = r end
      for r in g:records() do r.offset = nil b[#b + 1] = r end
      assert.is_true(#a > 3000)
      assert.same(b, a)
      assert.equal(g.compressed, f.compressed)
    end)

    it("a truncated or corrupted compressed record: read up to it, a note naming its offset", function()
      local s = read_all(tmp("z.data"))
      local doff, dsize = string.unpack("<i8i8", s, 41)
      -- the first compressed record
      local pos = doff + 1
      while string.unpack("<I4", s, pos) ~= 81 do pos = pos + string.unpack("<I2", s, pos + 6) end
      local off, size = pos - 1, string.unpack("<I2", s, pos + 6)
      assert.equal("\x28\xb5\x2f\xfd", s:sub(pos + 8, pos + 11))   -- a zstd frame
      -- cut inside it: the data section ends there
      -- (and no feature sections: their index would follow the data)
      local cut = s:sub(1, 48) .. string.pack("<i8", off + 20 - doff) .. s:sub(57, 72)
                  .. ("\0"):rep(32) .. s:sub(105, off + 20)
      -- the records before it: plain ones, all read
      local before = 0
      do
        local q = doff + 1
        while q < pos do before = before + 1 q = q + string.unpack("<I2", s, q + 6) end
      end
      local f <close> = assert(data.open(write_all(tmp("zbad.data"), cut)))
      assert.equal(off, f.stopped_at)
      H.assert_has(("reading stopped at offset 0x%x: truncated record"):format(off), f.note)
      local n = 0
      for _ in f:records() do n = n + 1 end
      assert.equal(before, n)
      -- not a zstd frame
      local bad = s:sub(1, pos + 7) .. "JUNK" .. s:sub(pos + 12)
      local g <close> = assert(data.open(write_all(tmp("zbad.data"), bad)))
      assert.equal(off, g.stopped_at)
      H.assert_has(("reading stopped at the compressed record at offset 0x%x: cannot decompress it: "):format(off), g.note)
      -- its header says it is shorter: its data ends inside the frame
      bad = s:sub(1, pos + 5) .. string.pack("<I2", size - 12) .. s:sub(pos + 8)
      local h <close> = assert(data.open(write_all(tmp("zbad.data"), bad)))
      assert.matches("offset 0x%x+", h.note)
      assert.is_true(h.stopped_at >= off)
      assert.is_true(dsize > 0)
    end)

    it("a compressed record holding more than the ring size the header gives", function()
      local s = read_all(tmp("z.data"))
      -- the feature index after the data: one {offset, size} per bit set
      local doff, dsize = string.unpack("<i8i8", s, 41)
      local at = doff + dsize
      for bit = 1, data.feature_bits.compressed - 1 do
        local byte = s:byte(73 + bit // 8)
        if (byte >> (bit % 8)) & 1 == 1 then at = at + 16 end
      end
      local foff = string.unpack("<i8", s, at + 1)
      assert.equal(9 * 4096, string.unpack("<I4", s, foff + 17))
      local small = s:sub(1, foff + 16) .. string.pack("<I4", 256) .. s:sub(foff + 21)
      local f <close> = assert(data.open(write_all(tmp("zbig.data"), small)))
      assert.matches("compressed record at offset 0x%x+: it decompresses to more than 256 bytes", f.note)
      assert.is_number(f.stopped_at)
      -- a compression this reader does not know: nothing can be read
      local other = s:sub(1, foff + 4) .. string.pack("<I4", 7) .. s:sub(foff + 9)
      local ok, msg, errno = data.open(write_all(tmp("zbig.data"), other))
      assert.is_nil(ok)
      H.assert_has("compression type 7; only zstd (1) is read", msg)
      assert.equal(22, errno)                       -- EINVAL
    end)

    it("a COMPRESSED2 record whose data_size runs past it", function()
      local s = as_compressed2(read_all(tmp("zpipe.data")), function(i, rec)
        if i ~= 2 then return rec end
        return rec:sub(1, 8) .. string.pack("<i8", #rec) .. rec:sub(17)
      end)
      local f <close> = assert(data.open(write_all(tmp("z2bad.data"), s)))
      assert.matches("compressed record at offset 0x%x+: a compressed record whose data_size runs past the record", f.note)
    end)

    it("random corruption never crashes: a file (with a note where damaged) or nil and a message", function()
      local next_copy = corrupt(read_all(tmp("z.data")), 4242, 4)
      local noted = 0
      for _ = 1, 100 do
        local f, msg = data.open(write_all(tmp("zfuzz.data"), next_copy()))
        if f then
          pcall(function() for r in f:records() do assert.is_string(r.type) end end)
          if f.note then noted = noted + 1 assert.matches("offset 0x%x+", f.note) end
          f:close()
        else
          assert.matches("offset 0x%x+", msg)
        end
      end
      assert.is_true(noted > 0)
    end)
  end)

  describe("malformed files", function()
    it("a file cut inside its header: nil, a message naming the offset, EINVAL", function()
      local s = read_all(tmp("tp.data"))
      for _, cut in ipairs { 0, 8, 15, 16, 60, 103 } do
        local ok, msg, errno = data.open(write_all(tmp("cut.data"), s:sub(1, cut)))
        assert.is_nil(ok)
        assert.matches("offset 0x%x+", msg)
        assert.equal(22, errno)
      end
    end)

    it("a truncated pipe-mode file: every whole record, and where it stopped", function()
      local s = read_all(tmp("pipe.data"))
      local f <close> = assert(data.open(write_all(tmp("cut.data"), s:sub(1, #s - 3))))
      local whole <close> = assert(data.open(tmp("pipe.data")))
      assert.equal(whole.nrecords - 1, f.nrecords)
      assert.matches("reading stopped at offset 0x%x+: truncated record", f.note)
      assert.is_true(f.stopped_at < #s and f.stopped_at > #s - 1000)
    end)

    it("refuses the other byte order clearly", function()
      local s = read_all(tmp("tp.data"))
      local swapped = s:sub(1, 8):reverse() .. s:sub(9)
      local ok, msg = data.open(write_all(tmp("be.data"), swapped))
      assert.is_nil(ok)
      H.assert_has("other byte order", msg)
    end)

    it("not a perf.data file", function()
      local ok, msg = data.open(write_all(tmp("x.data"), ("x"):rep(200)))
      assert.is_nil(ok)
      H.assert_has("not a perf.data file", msg)
    end)

    it("sections pointing outside the file", function()
      local s = read_all(tmp("tp.data"))
      for _, at in ipairs { 25, 33, 41 } do           -- attrs section, data offset
        local bad = s:sub(1, at - 1) .. string.pack("<i8", 1 << 40) .. s:sub(at + 8)
        local ok, msg, errno = data.open(write_all(tmp("bad.data"), bad))
        assert.is_nil(ok)
        assert.matches("offset 0x%x+", msg)
        assert.equal(22, errno)
      end
      -- a data size past the end: read as a cut file
      local bad = s:sub(1, 48) .. string.pack("<i8", 1 << 40) .. s:sub(57)
      local f <close> = assert(data.open(write_all(tmp("bad.data"), bad)))
      H.assert_has("the file ends inside its data section (0x10000000000 bytes at offset", f.note)
    end)

    it("unsigned header values print in hex in messages, never negative", function()
      local s = read_all(tmp("tp.data"))
      local bad = s:sub(1, 24) .. string.pack("<I8", 0x8000000000000000) .. s:sub(33)
      local ok, msg = data.open(write_all(tmp("bad.data"), bad))
      assert.is_nil(ok)
      H.assert_has("attrs section at offset 0x8000000000000000 (", msg)
      assert.is_nil(msg:find("-%d"))
    end)

    it("random corruption never crashes: a file or nil and a message", function()
      local next_copy = corrupt(read_all(tmp("clk.data")), 12345, 8)
      for _ = 1, 200 do
        local f, msg, errno = data.open(write_all(tmp("fuzz.data"), next_copy()))
        if f then
          for r in f:records() do assert.is_string(r.type) end
          f:close()
        else
          assert.is_string(msg)
          assert.equal(22, errno)
        end
      end
    end)
  end)
end)
