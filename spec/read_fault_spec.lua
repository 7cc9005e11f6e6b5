-- Failed counter reads: the kernel's error state (a read giving 0 bytes)
-- and an I/O error, brought about by a seccomp filter
-- (spec/fixtures/seccomp_errno.c) in a child interpreter. Each read method
-- returns nil, message, errno, and nothing raises or crashes.
local H = require "helpers"

local _, dir = H.build_fixture("seccomp_errno")

-- Every read method on a single event, a member, a group of 3 (read by
-- generated code) and one of 70 (filled from C), one line each, with reads
-- of every perf descriptor failing with `errno` (0: end of file). The child
-- exits without closing them (see the fixture).
local function reads(errno)
  return H.run_lua(([[
local perf = require "perf"
local fault = package.loadlib(%q, "luaopen_seccomp_errno")()
local function show(what, ...) print(what, select("#", ...), ...) end
local specs = {}
for i = 1, 70 do specs[i] = { type = "software", config = perf.core.PERF_COUNT_SW_DUMMY, name = "m" .. i } end
local ev = assert(perf.open { type = "software", config = perf.core.PERF_COUNT_SW_TASK_CLOCK })
local g = assert(perf.group { "task-clock", "page-faults", "context-switches" })
local big = assert(perf.group(specs))
if %d >= 0 then fault.fail_reads(ev:fileno(), big[#big]:fileno(), %d) end
show("ev:read", ev:read())
show("member", g[2]:read())
show("g:read", g:read())
show("g:read(t)", g:read({}))
show("g:scaled", g:scaled())
show("big:read", big:read())
show("big:scaled", big:scaled({}))
print("tostring", tostring(g))
print("done")
os.exit(0, false)
]]):format(dir .. "/seccomp_errno.so", errno, errno))
end

local function last_line(out)
  return out:match("([^\n]*)\n?$")
end

describe("a failed counter read", function()
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("in error state (0 bytes) returns nil, message, EIO with the cause", function()
    local out = reads(0)
    assert.are.equal("done", last_line(out), out)
    assert.matches('ev:read\t3\tnil\tev:read "task%-clock": Input/output error %(EIO%); the event is in error state', out)
    assert.matches('member\t3\tnil\tev:read "page%-faults": Input/output error %(EIO%); the event is in error state', out)
    for _, m in ipairs { "read", "read%(t%)", "scaled" } do
      assert.matches("g:" .. m .. "\t3\tnil\tg:%a+: Input/output error %(EIO%); the group is in error state", out)
    end
    assert.matches("big:read\t3\tnil\tg:read: Input/output error %(EIO%); the group is in error state", out)
    assert.matches("big:scaled\t3\tnil\tg:scaled: Input/output error %(EIO%); the group is in error state", out)
    assert.matches('tostring\tperf.group %(3 members, disabled%) {"task%-clock", "page%-faults", "context%-switches"}', out)
  end)

  it("with an I/O error returns nil, message, EIO", function()
    local out = reads(5)
    assert.are.equal("done", last_line(out), out)
    for _, what in ipairs { "ev:read", "member", "g:read", "g:read%(t%)", "g:scaled", "big:read", "big:scaled" } do
      assert.matches(what .. '\t3\tnil\t[%a:]+[%w "%-]*: Input/output error %(EIO%)\t5', out)
    end
    assert.not_matches("error state", out)
  end)

  it("with another errno passes it on, named", function()
    local out = reads(4)
    assert.are.equal("done", last_line(out), out)
    assert.matches("g:read\t3\tnil\tg:read: Interrupted system call %(EINTR%)\t4", out)
    assert.matches('ev:read\t3\tnil\tev:read "task%-clock": Interrupted system call %(EINTR%)\t4', out)
  end)

  it("is the filter's doing: without it every read works", function()
    local out = reads(-1)
    assert.are.equal("done", last_line(out), out)
    assert.matches("g:read\t1\tperf.read {", out)
    assert.matches("ev:read\t4\t%d+\t%d+\t%d+\t%d+", out)
    assert.matches("big:read\t1\tperf.read {", out)
    assert.matches('tostring\tperf.group %(3 members, disabled%) {"task%-clock" = 0,', out)
  end)
end)
