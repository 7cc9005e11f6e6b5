-- perf.modifiers: the ":ukhp..." suffixes of perf's event syntax, through
-- perf.parse.
local parse = require "perf.event.parse"
local H = require "helpers"

local parse_error = H.parse_error
local assert_has = H.assert_has

local assert_caret = H.assert_caret

describe("modifiers", function()
  local cases = {
    { "cycles:u", { exclude_kernel = true, exclude_hv = true } },
    { "cycles:k", { exclude_user = true, exclude_hv = true } },
    { "cycles:h", { exclude_user = true, exclude_kernel = true } },
    { "cycles:uk", { exclude_hv = true } },
    { "cycles:kh", { exclude_user = true } },
    { "cycles:ukh", {} },
    { "cycles:I", { exclude_idle = true } },
    { "cycles:G", { exclude_host = true } },
    { "cycles:H", { exclude_guest = true } },
    { "cycles:GH", {} },
    { "cycles:p", { precise_ip = 1 } },
    { "cycles:pp", { precise_ip = 2 } },
    { "cycles:ppp", { precise_ip = 3 } },
    { "cycles:S", { sample_type = { "read" } } },
    { "cycles:D", { pinned = true } },
    { "cycles:e", { exclusive = true } },
    { "cycles:upp", { exclude_kernel = true, exclude_hv = true, precise_ip = 2 } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local want = { type = 0, config = 0, name = c[1] }
      for k, v in pairs(c[2]) do want[k] = v end
      assert.same(want, parse.parse(c[1]))
    end)
  end

  it("P sets the highest precise_ip the kernel accepts for the event", function()
    local caps = require("perf").capabilities()
    -- software events take any precise_ip; without a PMU cycles opens with none
    assert.equal(3, parse.parse("task-clock:P").precise_ip)
    assert.equal(3, parse.parse("{cs,faults}:P")[2].precise_ip)
    if not caps.pmu then assert.is_nil(parse.parse("cycles:P").precise_ip) end
  end)

  it("aux-action sets the AUX pause bits", function()
    assert.is_true(parse.parse("cpu-clock/aux-action=start-paused/").aux_start_paused)
    assert.is_true(parse.parse("cpu-clock/aux-action=pause/").aux_pause)
    assert.is_true(parse.parse("cpu-clock/aux-action=resume/").aux_resume)
    assert_has("unknown aux-action 'x'", parse_error("cpu-clock/aux-action=x/"))
  end)

  it("refuse letters with no attr field, saying why", function()
    assert_has("modifier 'W' is not supported: weak groups", parse_error("{cycles,cs}:W"))
    assert_has("modifier 'b' is not supported: counting through BPF", parse_error("cycles:b"))
  end)

  it("reject unknown, repeated and excess modifiers", function()
    local err = parse_error("cycles:uq")
    assert_has("unknown modifier 'q'", err)
    assert_caret(err, "cycles:uq", 9)
    assert_has("modifier 'u' given twice", parse_error("cycles:uu"))
    assert_has("at most 3 p's", parse_error("cycles:pppp"))
    assert_has("expected modifiers or a tracepoint name after ':'", parse_error("cycles:"))
  end)

  it("may follow a term list without ':'", function()
    assert.same({ type = 1, config = 1, name = "tc", sample_period = 1000,
      exclude_kernel = true, exclude_hv = true },
      parse.parse("task-clock/period=1000,name=tc/u"))
  end)
end)
