-- The self-monitoring page (csrc/userpage.c): ev:userpage() reads it under
-- its seqlock, ev:userread() reads the counter through it. The page is the
-- header page of the event's ring, so it coexists with ev:mmap.
local perf = require "perf"
local H = require "helpers"

local OPENAT = H.tracepoint_id("syscalls", "sys_enter_openat")

local opens = H.opens

-- an openat tracepoint sampling every hit, counting this thread only
local function tp()
  return assert(perf.open { type = "tracepoint", config = OPENAT,
                            sample_period = 1, sample_type = { "tid" } })
end

local function drain(rb)
  local n = 0
  for rec in rb:records() do
    if rec.type == "sample" then n = n + 1 end
  end
  return n
end

describe("ev:userpage", function()
  it("reads the header page under its seqlock", function()
    local ev = assert(perf.open { type = "software", config = 1 })      -- task-clock
    local pg = assert(ev:userpage())
    assert.equal(0, pg.index)
    assert.is_false(pg.cap_user_rdpmc)
    assert.equal("integer", math.type(pg.time_enabled))
    ev:enable()
    local x = 0
    for i = 1, 1e5 do x = x + i end
    local v, en, run, how = ev:userread()
    ev:disable()
    assert.equal("read", how)
    assert.is_true(v > 0 and en > 0 and run > 0)
    -- the header-only mapping gives way to a ring, whose page then serves
    local rb = assert(ev:mmap(1))
    assert.equal(0, ev:userpage().index)
    rb:close()
    ev:close()
  end)

  it("coexists with ev:mmap, page first: both keep working", function()
    local ev = tp()
    assert(ev:userpage())
    local rb = assert(ev:mmap(1))
    ev:enable()
    opens(3)
    ev:disable()
    assert.equal(3, drain(rb))
    local v, _, _, how = ev:userread()
    assert.equal("read", how)
    assert.equal(3, v)
    assert.equal("integer", math.type(assert(ev:userpage()).time_enabled))
    -- the program's ring still receives records after the page was read
    ev:enable()
    opens(2)
    ev:disable()
    assert.equal(2, drain(rb))
    assert.equal(5, (ev:userread()))
    ev:close()
  end)

  it("coexists with ev:mmap, ring first; a closed ring leaves the page readable", function()
    local ev = tp()
    local rb = assert(ev:mmap(2))
    assert(ev:userpage())
    assert.has_error(function() ev:mmap(2) end,
                     "this event already has a ring buffer (" .. tostring(rb) .. "); close it first")
    ev:enable()
    opens(4)
    ev:disable()
    assert.equal(4, drain(rb))
    rb:close()
    -- no ring now: the page is mapped on its own, then gives way again
    assert.equal(4, (ev:userread()))
    assert(ev:userpage())
    local rb2 = assert(ev:mmap(1))
    ev:enable()
    opens(1)
    ev:disable()
    assert.equal(1, drain(rb2))
    assert.equal(5, (ev:userread()))
    assert.equal(1, rb2:stats().pages)
    ev:close()
  end)

  it("fails with the error shape on an event that cannot be mapped", function()
    local a, b = tp(), tp()
    assert(a:mmap(1))
    assert(b:set_output(a))
    H.fails(b:userpage())
    a:close()
    b:close()
  end)
end)
