-- perf.syntax: how a bad event string is reported (the string quoted, a
-- caret under the position, the nearest names), through perf.parse.
local parse = require "perf.event.parse"
local H = require "helpers"

local parse_error = H.parse_error
local assert_has = H.assert_has

local assert_caret = H.assert_caret

describe("errors", function()
  it("quote the string, put a caret under the position and suggest names", function()
    local err = parse_error("cycels")
    assert.matches('^[^\n]*bad event "cycels": unknown event \'cycels\' %(did you mean \'cycles\'%?%)', err)
    assert_caret(err, "cycels", 1)
    assert_has("did you mean 'task-clock'", parse_error("taskclock"))
    assert_has("did you mean 'page-faults'", parse_error("page-fault"))
  end)

  it("point at the caller of perf.parse", function()
    local ok, err = pcall(function() parse.parse("nope") end)
    assert.is_false(ok)
    assert.matches("^[^\n]*syntax_spec.lua:%d+: bad event", err)
  end)

  it("explain perf-tool events", function()
    assert_has("'duration_time' is not a kernel event", parse_error("duration_time"))
  end)

  it("reject non-strings, empty strings and white space", function()
    assert.has_error(function() parse.parse(42) end,
      "perf.parse: expected an event string, got number")
    assert_has("empty event string", parse_error(""))
    assert_has("white space around the event", parse_error(" cycles"))
  end)
end)
