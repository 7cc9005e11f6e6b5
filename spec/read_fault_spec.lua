-- Failed reads: the kernel's error state (end of file), an I/O error and a
-- short read, brought about by spec/fixtures/read_fault.c preloaded into a
-- child interpreter. Each read method returns nil, message, errno; none
-- raises or reads past what the kernel gave.
local H = require "helpers"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute(("mkdir -p %s && cc -shared -fPIC -o %s/read_fault.so spec/fixtures/read_fault.c -ldl")
  :format(dir, dir)))

-- Runs `code` with reads of perf descriptors failing as `mode` says.
local function with_fault(mode, code)
  return H.run_lua(code, ('PERF_FAULT_READ=%s LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }%s/read_fault.so"')
    :format(mode, dir))
end

-- Every read method on a single event, a member, a group of 3 (read by
-- generated code) and one of 70 (filled from C); one line each.
local READS = [[
local perf = require "perf"
local function show(what, ...) print(what, select("#", ...), ...) end
local specs = {}
for i = 1, 70 do specs[i] = { type = "software", config = perf.core.PERF_COUNT_SW_DUMMY, name = "m" .. i } end
local ev = assert(perf.open { type = "software", config = perf.core.PERF_COUNT_SW_TASK_CLOCK })
local g = assert(perf.group { "task-clock", "page-faults", "context-switches" })
local big = assert(perf.group(specs))
show("ev:read", ev:read())
show("member", g[2]:read())
show("g:read", g:read())
show("g:read(t)", g:read({}))
show("g:scaled", g:scaled())
show("big:read", big:read())
show("big:scaled", big:scaled({}))
print("tostring", tostring(g))
print("done")
]]

local function lines(out)
  local t = {}
  for line in out:gmatch("[^\n]+") do t[#t + 1] = line end
  return t
end

describe("a failed read", function()
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("in error state (end of file) returns nil, message, EIO with the cause", function()
    local out = with_fault("eof", READS)
    local l = lines(out)
    assert.are.equal("done", l[#l], out)
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
    local out = with_fault("eio", READS)
    local l = lines(out)
    assert.are.equal("done", l[#l], out)
    assert.matches('ev:read\t3\tnil\tev:read "task%-clock": Input/output error %(EIO%)\t5', out)
    assert.matches("g:read\t3\tnil\tg:read: Input/output error %(EIO%)\t5", out)
    assert.matches("big:scaled\t3\tnil\tg:scaled: Input/output error %(EIO%)\t5", out)
    assert.not_matches("error state", out)
  end)

  it("cut short returns nil, message, EIO rather than reading past it", function()
    local out = with_fault("short", READS)
    local l = lines(out)
    assert.are.equal("done", l[#l], out)
    for _, what in ipairs { "ev:read", "member", "g:read", "g:read%(t%)", "g:scaled", "big:read", "big:scaled" } do
      assert.matches(what .. '\t3\tnil\t[%a:]+[%w "%-]*: Input/output error %(EIO%)\t5', out)
    end
  end)

  it("is the preloaded helper's doing: without it every read works", function()
    local out = with_fault("none", READS)
    assert.matches("g:read\t1\ttable", out)
    assert.matches("ev:read\t4\t%d+\t%d+\t%d+\t%d+", out)
    assert.matches("big:read\t1\ttable", out)
  end)
end)
