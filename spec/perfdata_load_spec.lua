-- csrc/perfdata_load.c: opening perf.data files as perf record writes them
-- in practice: perf record --threads directories, files cut or damaged,
-- a perf record killed by SIGKILL, a pipe-mode stream on a pipe; compared
-- with what perf script prints for the same files.
local H = require "helpers"
local data = require "perf.data"

local PERF = "/usr/bin/perf"
local have_perf = io.open(PERF) ~= nil

local dir
local function tmp(name) return dir .. "/" .. name end

local function write_all(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
  return path
end

-- perf script's samples as "tid time period" lines, in perf's order
local function script(path, extra)
  local out = {}
  local cmd = ("%s script -i %s -F tid,time,period --ns %s"):format(PERF, path, extra or "")
  for line in H.sh(cmd):gmatch("[^\n]+") do
    local tid, s, ns, period = line:match("^%s*(%d+)%s+(%d+)%.(%d+):%s+(%d+)")
    if tid then
      out[#out + 1] = ("%s %d %s"):format(tid, math.tointeger(s) * 1000000000 + math.tointeger(ns), period)
    end
  end
  return out
end

local function samples(f)
  local out = {}
  for tid, time, period in f:samples("tid", "time", "period") do
    out[#out + 1] = ("%d %d %d"):format(tid, time, period)
  end
  return out
end

-- the file offsets of the records of a normal file's data section
local function record_offsets(s)
  local doff, dsize = string.unpack("<i8i8", s, 41)
  local list, pos = {}, doff
  while pos + 8 <= doff + dsize do
    list[#list + 1] = pos
    pos = pos + string.unpack("<I2", s, pos + 7)
  end
  return list
end

local WORK = "sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; ls -R /usr/share/doc >/dev/null'"

describe("perf.data.open (csrc/perfdata_load.c)", function()
  if not have_perf then
    pending("needs the perf tool at " .. PERF)
    return
  end

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    assert(os.execute(("%s record -q --threads -o %s -e cpu-clock -- %s >/dev/null 2>&1")
      :format(PERF, tmp("thr.data"), WORK)))
    assert(os.execute(("%s record -q -o %s -e cpu-clock -- %s >/dev/null 2>&1")
      :format(PERF, tmp("clk.data"), WORK)))
  end)

  teardown(function()
    if dir then os.execute("rm -rf " .. dir) end
  end)

  describe("perf record --threads", function()
    it("reads the directory: the samples of every data.N, in time order, as perf script", function()
      local names = H.sh("ls " .. tmp("thr.data"))
      assert.matches("data\ndata%.0\n", names)           -- data plus one file a thread
      local want = script(tmp("thr.data"))
      assert.is_true(#want > 100)
      local f <close> = assert(data.open(tmp("thr.data")))
      assert.is_true(f.directory)
      assert.is_nil(f.note)
      assert.is_true(#f.files >= 2)
      assert.matches("/data%.0$", f.files[2])
      local got = samples(f)
      assert.equal(#want, #got)
      -- time order: perf's, except among samples of one nanosecond
      local last = 0
      for time in f:samples("time") do
        assert.is_true(time >= last)
        last = time
      end
      table.sort(want) table.sort(got)
      assert.same(want, got)
    end)

    it("opening its data file reads the data.N files beside it", function()
      local f <close> = assert(data.open(tmp("thr.data") .. "/data"))
      local g <close> = assert(data.open(tmp("thr.data")))
      assert.same(samples(g), samples(f))
      assert.equal(g.nrecords, f.nrecords)
    end)

    it("a data file without its data.N files says where the samples are", function()
      local copy = tmp("lonely")
      assert(os.execute(("mkdir -p %s && cp %s/data %s/"):format(copy, tmp("thr.data"), copy)))
      local f <close> = assert(data.open(copy .. "/data"))
      H.assert_has("the samples are in data.N files beside it (perf record --threads), and there are none", f.note)
      assert.same({}, samples(f))
    end)
  end)

  describe("cut and damaged files", function()
    it("a file cut after its data section: every sample, as perf script reads it", function()
      local s = H.read_file(tmp("clk.data"))
      local cut = write_all(tmp("cut1.data"), s:sub(1, #s - 1))
      local want = script(cut)
      assert.is_true(#want > 100)
      local f <close> = assert(data.open(cut))
      -- perf script sorts the samples by time; the file has them as the
      -- rings of the CPUs were drained
      local got = samples(f)
      table.sort(want) table.sort(got)
      assert.same(want, got)
      assert.is_nil(f.stopped_at)
      assert.matches("feature %d+ %(index entry at offset 0x%x+%) runs past the end of the file", f.note)
      assert.equal("string", type(f.header.hostname))     -- the sections before the cut
    end)

    it("a file cut inside its data: every whole record before the cut, and where it stopped", function()
      local s = H.read_file(tmp("clk.data"))
      local offs = record_offsets(s)
      local at = offs[#offs // 2]                         -- a record's start, cut 5 bytes into it
      local f <close> = assert(data.open(write_all(tmp("cut2.data"), s:sub(1, at + 5))))
      local whole <close> = assert(data.open(tmp("clk.data")))
      local want, n = {}, 0
      for r in whole:records() do
        n = n + 1
        if n >= #offs // 2 then break end
        want[#want + 1] = r
      end
      local got = {}
      for r in f:records() do got[#got + 1] = r end
      assert.same(want, got)
      assert.equal(at, f.stopped_at)
      H.assert_has(("reading stopped at offset 0x%x: truncated record header (5 bytes are left)"):format(at), f.note)
      H.assert_has("the file ends inside its data section", f.note)
      -- perf itself refuses it (its message depends on where the cut is)
      local perf_says = H.sh(("%s script -i %s 2>&1 | cat"):format(PERF, tmp("cut2.data")))
      assert.truthy(perf_says:find("incompatible file format", 1, true)
                    or perf_says:find("failed to process", 1, true), perf_says)
    end)

    it("a record damaged mid-way: the records before it, and a note naming its offset", function()
      local s = H.read_file(tmp("clk.data"))
      local offs = record_offsets(s)
      local at = offs[#offs // 3]
      local bad = s:sub(1, at + 6) .. "\0\0" .. s:sub(at + 9)   -- header.size 0
      local f <close> = assert(data.open(write_all(tmp("dmg.data"), bad)))
      assert.equal(#offs // 3 - 1, f.nrecords)
      assert.equal(at, f.stopped_at)
      H.assert_has(("reading stopped at offset 0x%x: a record of size 0, below a header's 8 bytes"):format(at), f.note)
      assert.equal("string", type(f.header.hostname))     -- the features are whole
      assert.matches("cut, .*see its note", tostring(f._h))
    end)

    it("a perf record killed by SIGKILL: perf's diagnosis, and the records that reached the file", function()
      local path = tmp("kill.data")
      -- perf drains its rings at a wake-up: a small ring and a busy command
      -- give records before the kill; the header keeps data size 0
      -- (the command runs 4 s, ended by timeout(1) once perf is gone)
      os.execute(("timeout -s KILL 1.5 %s record -q -m 1 -o %s -e cpu-clock -F 2000 -- %s >/dev/null 2>&1")
        :format(PERF, path, "timeout 4 sh -c 'while :; do :; done'"))
      local s = H.read_file(path)
      local doff, dsize = string.unpack("<i8i8", s, 41)
      if dsize ~= 0 then pending("perf record ended before the kill") return end
      H.assert_has("Was the 'perf record' command properly terminated?",
                   H.sh(("%s script -i %s 2>&1 | cat"):format(PERF, path)))
      local f <close> = assert(data.open(path))
      H.assert_has("the data size field is 0 which is unexpected: was 'perf record' properly terminated?", f.note)
      -- the records up to the end of the file (the last one may be cut)
      local n, pos = 0, doff + 1
      while pos + 8 <= #s + 1 do
        local size = string.unpack("<I2", s, pos + 6)
        if size < 8 or pos + size > #s + 1 then break end
        n = n + 1
        pos = pos + size
      end
      assert.is_true(n > 0)
      assert.equal(n, f.nrecords)
      local k = 0
      for r in f:records() do k = k + 1 assert.is_string(r.type) end
      assert.equal(n, k)
    end)
  end)

  describe("streams", function()
    it("reads perf's pipe format from a pipe (perf record -o - | lua ... /dev/stdin)", function()
      local path = tmp("pipe.data")
      local out = H.run_lua([[
        local data = require "perf.data"
        local f = assert(data.open("/dev/stdin"))
        local n = 0
        for _ in f:samples("tid") do n = n + 1 end
        print(f.pipe, n)
      ]], ("%s record -q -o - -e syscalls:sys_enter_openat -c 1 -- ls / 2>/dev/null | tee %s |")
        :format(PERF, path))
      local want = #script("- < " .. path)
      assert.is_true(want > 5)
      assert.equal(("true\t%d\n"):format(want), out)
    end)

    it("a stream too big for the memory it may take: ENOMEM", function()
      if os.getenv("PERF_LUA_SANITIZER_PRELOAD") then
        pending("ASan reserves more address space than the limit leaves")
        return
      end
      local out = H.run_lua([[
        local f, msg, errno = require("perf.data").open("/dev/stdin")
        print(f, errno, msg)
      ]], "ulimit -v 400000; head -c 900000000 /dev/zero |")
      assert.matches("^nil\t12\tperf.data.open \"/dev/stdin\": Cannot allocate memory %(ENOMEM%)", out)
    end)

    it("out of memory at any allocation while it opens a directory or a -z file: "
      .. "Lua's message, nothing left behind", function()
      local mem = H.load_fixture("memlimit")
      local z = tmp("small-z.data")
      assert(os.execute(("%s record -q -z -m 8 -o %s -e syscalls:sys_enter_close -c 1 -- "
        .. "sh -c 'for i in $(seq 200); do : </dev/null; done' >/dev/null 2>&1"):format(PERF, z)))
      for _, path in ipairs { tmp("thr.data"), z } do
        local function fn()
          local f <close> = assert(data.open(path))
          local n = 0
          for _ in f:records() do n = n + 1 end
          return n
        end
        local want = fn()
        mem.count()
        fn()
        local total = mem.disarm()
        local failed = 0
        for n = 0, total, total > 3000 and total // 3000 + 1 or 1 do
          mem.arm(n)
          local ok, res = pcall(fn)
          mem.disarm()
          if not ok then
            failed = failed + 1
            H.assert_has("not enough memory", tostring(res))
          else
            assert.equal(want, res)
          end
        end
        assert.is_true(failed > 0)
        collectgarbage() collectgarbage()
      end
    end)

    it("a missing file: the open's errno", function()
      local f, msg, errno = data.open(tmp("none.data"))
      assert.is_nil(f)
      assert.equal(2, errno)
      H.assert_has("ENOENT", msg)
    end)
  end)
end)
