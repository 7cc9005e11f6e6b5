-- perf.threads: perf.stat's counts per thread of the command, from the
-- kernel's READ records at each task's exit; exact tracepoint counts that
-- add up to perf stat's total for the same command.
local perf = require "perf"
local threads = require "perf.counting.threads"
local H = require "helpers"

local function fds()
  collectgarbage()
  collectgarbage()
  return math.min(H.fd_count(), H.fd_count(), H.fd_count())
end

-- perf stat -x, on a command: the count of one event
local function perf_count(argv, event)
  local out = os.tmpname()
  local cmd = {}
  for i, a in ipairs(argv) do cmd[i] = "'" .. a:gsub("'", "'\\''") .. "'" end
  assert(os.execute(("perf stat -x, -o %s -e %s -- %s >/dev/null 2>&1"):format(out, event,
    table.concat(cmd, " "))))
  local n
  for l in io.lines(out) do n = n or math.tointeger(tonumber(l:match("^(%d+),"))) end
  os.remove(out)
  return n
end

local function opens(n)
  return ("%s -e \"for i = 1, %d do io.open('/dev/null'):close() end\""):format(H.lua, n)
end

describe("perf.threads", function()
  it("asks every counter for its count at each task's exit, and the first for names", function()
    local units = { { { attr = {} } }, { { attr = {} }, { attr = {} } } }
    threads.prepare(units)
    assert.is_true(units[1][1].attr.inherit_stat and units[2][2].attr.inherit_stat)
    assert.is_true(units[1][1].attr.comm and units[1][1].attr.task and units[1][1].attr.comm_exec)
    assert.is_nil(units[2][1].attr.comm)
  end)

  it("counts each thread of a command, adding up to perf stat's totals", function()
    local before = fds()
    local argv = { "sh", "-c", opens(5) .. "; " .. opens(15) .. "; ls / >/dev/null; true" }
    local events = { "syscalls:sys_enter_close", "syscalls:sys_enter_openat", "task-clock",
      "{syscalls:sys_enter_exit_group,page-faults}" }
    local r = assert(perf.stat(argv, events, { per_thread = true }))
    assert.are.equal("thread", r.per.kind)
    assert.are.equal(4, #r.per)
    local comms = {}
    for k, row in ipairs(r.per) do comms[k] = row.comm end
    local lua = H.lua:match("[^/]*$"):sub(1, 15)
    assert.same({ "sh", lua, lua, "ls" }, comms)
    assert.is_true(r.per[2].tid < r.per[3].tid and r.per[3].tid < r.per[4].tid)
    for _, row in ipairs(r.per) do
      assert.are.equal(("%s-%d"):format(row.comm, row.tid), row.key)
      assert.are.equal(1, row["syscalls:sys_enter_exit_group"])   -- every task exits once
      assert.is_true(row["task-clock"] > 0)
    end
    -- the second lua closes 10 more files than the first
    assert.are.equal(10, r.per[3]["syscalls:sys_enter_close"] - r.per[2]["syscalls:sys_enter_close"])
    assert.are.equal(perf_count({ "ls", "/" }, "syscalls:sys_enter_openat"), r.per[4][2])
    for i, e in ipairs(r.events) do
      local sum = 0
      for _, row in ipairs(r.per) do sum = sum + row.events[i].raw end
      assert.are.equal(e.raw, sum, e.name)
      assert.are.equal(e.value, sum, e.name)
    end
    for _, name in ipairs { "syscalls:sys_enter_close", "syscalls:sys_enter_openat" } do
      assert.are.equal(perf_count(argv, name), r[name])
    end
    assert.is_nil(r.notes)
    assert.are.equal(before, fds())
  end)

  it("counts a command run by itself in one row", function()
    local r = assert(perf.stat({ "ls", "/" }, { "syscalls:sys_enter_openat" },
      { per_thread = true, stdout = "/dev/null" }))
    assert.are.equal(1, #r.per)
    assert.are.equal("ls", r.per[1].comm)
    assert.are.equal(r[1], r.per[1][1])
    assert.are.equal(perf_count({ "ls", "/" }, "syscalls:sys_enter_openat"), r.per[1][1])
  end)

  it("is refused with what counts CPUs or intervals", function()
    assert.has_error(function() perf.stat({ "true" }, { "task-clock" }, { per_thread = true, all_cpus = true }) end,
      "perf.stat: per_thread counts the command's threads; it does not go with all_cpus")
    assert.has_error(function() perf.stat({ "true" }, { "task-clock" }, { per_thread = 1 }) end,
      "perf.stat: per_thread must be true or false, got number")
  end)
end)
