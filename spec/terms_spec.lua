-- perf.terms: the "/term=value,.../" lists of perf's event syntax on
-- generic events, through perf.parse.
local parse = require "perf.event.parse"
local H = require "helpers"

local parse_error = H.parse_error
local assert_has = H.assert_has

local assert_caret = H.assert_caret

describe("terms on generic events", function()
  it("period, freq, name, time, inherit, overwrite, max-stack", function()
    assert.same({ type = 0, config = 0, sample_freq = 4000, freq = true,
      sample_type = { "period" }, name = "cycles/freq=4000/" },
      parse.parse("cycles/freq=4000/"))
    assert.same({ type = 1, config = 0, name = "clk", sample_type = { "time" },
      inherit = false, write_backward = true, sample_max_stack = 10 },
      parse.parse("cpu-clock/name=clk,time,no-inherit,overwrite,max-stack=10/"))
    assert.same({ type = 1, config = 0, name = "a,b" },
      parse.parse("cpu-clock/name='a,b'/"))
  end)

  it("call-graph and branch_type", function()
    local a = parse.parse("cpu-clock/call-graph=fp/")
    assert.same({ "callchain" }, a.sample_type)
    a = parse.parse("cpu-clock/call-graph=dwarf,stack-size=4096/")
    assert.same({ "callchain", "regs_user", "stack_user" }, a.sample_type)
    assert.equal(0xff0fff, a.sample_regs_user)
    assert.equal(4096, a.sample_stack_user)
    assert.is_true(a.exclude_callchain_user)
    a = parse.parse("cycles/branch_type=any_call/")
    assert.same({ "any_call" }, a.branch_sample_type)
    assert.same({ "branch_stack" }, a.sample_type)
    assert.same({ "user", "any" }, parse.parse("cycles/branch_type=u/").branch_sample_type)
    assert_has("unknown call-graph mode 'xyz'", parse_error("cycles/call-graph=xyz/"))
    assert_has("unknown branch filter 'anycall' (did you mean 'any_call'?)",
      parse_error("cycles/branch_type=anycall/"))
  end)

  it("refuse perf-tool terms and unknown terms", function()
    assert_has("'nr' limits how many samples", parse_error("cycles/nr=3/"))
    assert_has("pass it in the target", parse_error("cycles/cpu=1/"))
    local err = parse_error("cycles/perod=10/")
    assert_has("unknown term 'perod' (did you mean 'period'?)", err)
    assert_caret(err, "cycles/perod=10/", 8)
    assert_has("term 'period' needs a value", parse_error("cycles/period/"))
    assert_has("term 'period' needs a number, not 'x'", parse_error("cycles/period=x/"))
    assert_has("unterminated term list", parse_error("cycles/period=1"))
  end)
end)
