-- perf-lua: the command dispatcher, its help and its exit codes (perf's).
local H = require "helpers"

-- Runs bin/perf-lua with `args`; returns its standard output, its standard
-- error and its exit code.
local function perf_lua(args)
  local out, err = os.tmpname(), os.tmpname()
  local _, _, code = os.execute(("%s bin/perf-lua %s >%s 2>%s"):format(H.example, args, out, err))
  local function slurp(path)
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    return text
  end
  return slurp(out), slurp(err), code
end

describe("perf-lua", function()
  it("lists its commands with --help, and says so with no command", function()
    local out, err, code = perf_lua("--help")
    assert.equal(0, code)
    assert.equal("", err)
    assert.matches("^usage: perf%-lua %[%-%-version%] %[%-%-help%] COMMAND %[ARGS%]\n", out)
    for _, c in ipairs(require("perf.cli").commands) do
      assert.matches("\n   " .. c[1] .. " +" .. c[2]:gsub("%p", "%%%0") .. "\n", out)
    end
    local out2, _, code2 = perf_lua("")
    assert.equal(out, out2)
    assert.equal(1, code2)                          -- perf with no command
    local out3, _, code3 = perf_lua("help")
    assert.equal(out, out3)
    assert.equal(0, code3)
  end)

  it("says which command is unknown, and exits 1", function()
    local out, err, code = perf_lua("frobnicate")
    assert.equal("", out)
    assert.equal("perf-lua: 'frobnicate' is not a perf-lua command. See 'perf-lua --help'.\n", err)
    assert.equal(1, code)
  end)

  it("prints its version", function()
    local out, _, code = perf_lua("--version")
    assert.equal(0, code)
    assert.equal(("perf-lua version %s (%s)\n"):format(require("perf.core").version, _VERSION), out)
  end)

  it("prints each command's help from its script's opening comment, and exits 0", function()
    for _, c in ipairs(require("perf.cli").commands) do
      local out, err, code = perf_lua(c[1] .. " --help")
      assert.equal(0, code, c[1])
      assert.equal("", err, c[1])
      assert.matches("^perf%-lua " .. c[1] .. ": ", out)
      assert.matches("\n  perf%-lua " .. c[1], out)
      local out2 = perf_lua("help " .. c[1])
      assert.equal(out, out2)
    end
  end)

  it("refuses a bad option with the usage, exit code 129, as perf's option parser", function()
    local out, err, code = perf_lua("stat --frobnicate true")
    assert.equal("", out)
    assert.equal(129, code)
    assert.matches("^perf%-lua stat: unknown option '%-%-frobnicate'\n\n usage: perf%-lua stat %[%-e EVENTS%]", err)
    assert.matches("\nSee 'perf%-lua stat %-%-help'%.\n$", err)
    -- a long option gets the nearest of the command's, a letter none
    for _, c in ipairs {
      { "stat --per-thrad true", "stat: unknown option '--per-thrad' (did you mean '--per-thread'?)\n" },
      { "record --outptu x true", "record: unknown option '--outptu' (did you mean '--output'?)\n" },
      { "profile --timr x.lua", "profile: unknown option '--timr' (did you mean '--timer'?)\n" },
      { "top --dealy 1", "top: unknown option '--dealy' (did you mean '--delay'?)\n" },
      { "top -X", "top: unknown option '-X'\n" },
    } do
      local _, e, rc = perf_lua(c[1])
      assert.equal(129, rc)
      assert.equal("perf-lua " .. c[2], e:match("^[^\n]*\n"))
    end
    err, code = select(2, perf_lua("stat -r 0 true"))
    assert.equal(129, code)
    assert.matches("^perf%-lua stat: %-r needs a positive count\n", err)
    err, code = select(2, perf_lua("list sw hw"))
    assert.equal(129, code)
    assert.matches("^perf%-lua list: one kind or pattern at most\n", err)
  end)

  it("stat takes perf stat's long option names, --name VALUE and --name=VALUE", function()
    local _, err, code = perf_lua("stat --field-separator=, --event syscalls:sys_enter_close "
      .. "--no-inherit -- sh -c 'exit 5'")
    assert.equal(5, code)
    assert.matches("^%d+,,syscalls:sys_enter_close,", err)
    local tmp = os.tmpname()
    _, err, code = perf_lua(("stat --output %s --event=task-clock true"):format(tmp))
    assert.equal(0, code)
    assert.equal("", err)
    local f = assert(io.open(tmp))
    local text = f:read("a")
    f:close()
    os.remove(tmp)
    assert.matches("Performance counter stats for 'true'", text)
  end)

  it("list prints the events of a kind", function()
    local out, _, code = perf_lua("list sw")
    assert.equal(0, code)
    assert.matches("\n  page%-faults OR faults +%[Software event%]\n", out)
  end)
end)
