-- Layer lua/perf/cli/: the perf-lua commands; they stand above the front and may require it
-- (perf) and any layer.

-- perf-lua: perf's commands, written with perf for Lua.
--
-- Each command is a script, lua/perf/cli/<command>.lua, found on
-- package.path and run with its arguments as `...`; its opening comment is
-- its --help text. The commands sit above the library, as the examples do:
-- they require "perf", nothing in the library requires them.
--
-- Exit codes are perf's: 0, or the measured command's status; 129 for a
-- usage error (perf's parse-options); 1 for an unknown command or a
-- failure.
local core = require "perf.core"
local perf = require "perf"

local cli = {}

-- name, summary: in the order `perf-lua --help` lists them
cli.commands = {
  { "stat", "Run a command and print what it cost (counters)" },
  { "list", "List the events this machine offers" },
  { "top", "Live view of the hottest commands and functions on every CPU" },
  { "record", "Sample a command and show what was hot (writes perf.data with -o)" },
  { "profile", "Run a Lua script and show which functions and lines cause an event" },
  { "serve", "Serve counters to Prometheus and profiles to pprof over HTTP" },
}

local function find(name)
  for _, c in ipairs(cli.commands) do
    if c[1] == name then return c end
  end
end

-- The file of a command's script, or nil.
function cli.script(name)
  if not find(name) then return nil end
  return package.searchpath("perf.cli." .. name, package.path)
end

-- A command's --help text: its script's opening comment.
function cli.help(name)
  local path = assert(cli.script(name), name)
  local lines = {}
  for line in io.lines(path) do
    local text = line:match("^%-%- ?(.*)$")
    if not text then break end
    lines[#lines + 1] = text
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The library's advice names Lua calls; on the command line, the command
-- that does the same: perf.list("x") -> perf-lua list 'x'.
function cli.as_command(msg)
  return (msg:gsub('perf%.list%(("?)(.-)%1%)', function(_, pattern)
    if pattern == "" then return "perf-lua list" end
    return "perf-lua list '" .. pattern .. "'"
  end))
end

-- With no message: the command's help on standard output, exit 0.
-- With one: the message and the usage lines on standard error, exit 129,
-- as perf's option parser does.
function cli.usage(name, msg)
  if not msg then
    io.stdout:write(cli.help(name))
    os.exit(0)
  end
  local lines = {}
  for line in cli.help(name):gmatch("[^\n]+") do
    if line:match("^%s+perf%-lua " .. name) then lines[#lines + 1] = line end
  end
  io.stderr:write(("perf-lua %s: %s\n\n usage:%s\n\nSee 'perf-lua %s --help'.\n")
    :format(name, cli.as_command(msg), table.concat(lines, "\n       "):gsub("^%s+", " "), name))
  os.exit(129)
end

-- The options a command's --help text names: "-e", "--call-graph", ...
function cli.options(name)
  local seen, list = {}, {}
  for opt in (" " .. cli.help(name)):gmatch("[^%w%-](%-%-?%a[%w%-]*)") do
    if not seen[opt] then seen[opt], list[#list + 1] = true, opt end
  end
  table.sort(list)
  return list
end

-- A usage error for an option the command does not take; a long one
-- gets the nearest long options its help names (a letter has no near
-- miss worth naming: every other letter is one edit away).
function cli.unknown_option(name, opt)
  local hint = ""
  if opt:match("^%-%-.") then
    local long = {}
    for _, o in ipairs(cli.options(name)) do
      if o:match("^%-%-") then long[#long + 1] = o end
    end
    hint = core.did_you_mean(opt, long)
  end
  cli.usage(name, ("unknown option '%s'%s"):format(opt, hint))
end

-- An option's value for a command's argument loop: args[i + 1], or a
-- usage error when it is missing; returns the value and its index.
function cli.value(name, args, i)
  if args[i + 1] == nil then cli.usage(name, args[i] .. " needs a value") end
  return args[i + 1], i + 1
end

-- An option's value that must be a positive integer (-F, -c, -n, ...).
function cli.count(name, args, i)
  local v, j = cli.value(name, args, i)
  local n = math.tointeger(tonumber(v))
  if not n or n < 1 then
    cli.usage(name, ("%s takes a positive integer, not '%s'"):format(args[i], v))
  end
  return n, j
end

-- A command's option loop over `args`: each option in turn, long names
-- mapped to their short ones (o.long), until "--" or the first argument
-- that is not an option, which start the command: the list returned.
-- handle(opt, value, count) takes one option and returns true when it is
-- the command's; value() is its value (the next argument), count() that
-- value as a positive integer. -h and --help print the help; an unknown
-- option is a usage error naming the nearest. With o.equals, "--long=V"
-- gives V; o.joined, a pattern, matches the short options that take
-- their value joined ("-r5"), and o.short_names names the short option
-- in the message of a missing value.
function cli.each_option(name, args, o, handle)
  local cmd, i = {}, 1
  while i <= #args do
    local a = args[i]
    local long, v
    if o.equals then long, v = a:match("^(%-%-[%w-]+)=(.*)$") end   -- --event=EVENTS
    if o.long[long or a] then a = o.long[long or a] .. (v or "") end
    local opt, joined
    if o.joined then opt, joined = a:match(o.joined) end
    opt = opt or a
    local at = i
    local function value()
      if joined then return joined end
      if args[i + 1] == nil then cli.usage(name, (o.short_names and a or args[i]) .. " needs a value") end
      i = i + 1
      return args[i]
    end
    local function count()
      local s = value()
      local n = math.tointeger(tonumber(s))
      if not n or n < 1 then
        cli.usage(name, ("%s takes a positive integer, not '%s'"):format(args[at], s))
      end
      return n
    end
    if opt == "--" then
      table.move(args, i + 1, #args, 1, cmd)
      break
    elseif opt == "-h" or opt == "--help" then
      cli.usage(name)
    elseif handle(opt, value, count) then -- luacheck: ignore 542
      -- the command's option, taken
    elseif opt:sub(1, 1) == "-" then
      cli.unknown_option(name, a)
    else
      table.move(args, i, #args, 1, cmd)
      break
    end
    i = i + 1
  end
  return cmd
end

-- perf's limit on -F: above the kernel's maximum rate, the maximum, with
-- perf's warning.
function cli.max_freq(hz)
  local max_rate = perf.capabilities().max_sample_rate
  if not (max_rate and hz > max_rate) then return hz end
  io.stderr:write(("warning: Maximum frequency rate (%d Hz) exceeded, throttling from %d Hz to %d Hz.\n"
    .. "         The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate.\n"
    .. "         The kernel will lower it when perf's interrupts take too long.\n")
    :format(max_rate, hz, max_rate))
  return max_rate
end

function cli.main_help()
  local out = { "usage: perf-lua [--version] [--help] COMMAND [ARGS]\n",
    "The perf-lua commands are:" }
  for _, c in ipairs(cli.commands) do
    out[#out + 1] = ("   %-9s %s"):format(c[1], c[2])
  end
  out[#out + 1] = "\nSee 'perf-lua COMMAND --help' for more information on a command."
  return table.concat(out, "\n") .. "\n"
end

-- Runs the command line `args` (args[1] the command); returns the exit
-- code when the command returns instead of exiting.
function cli.main(args)
  local name = args[1]
  if name == nil or name == "-h" or name == "--help" then
    io.stdout:write(cli.main_help())
    return name and 0 or 1
  elseif name == "-v" or name == "--version" then
    io.stdout:write(("perf-lua version %s (%s)\n"):format(core.version, _VERSION))
    return 0
  elseif name == "help" then
    if args[2] == nil then
      io.stdout:write(cli.main_help())
      return 0
    end
    name, args = args[2], { args[2], "--help" }
  end
  local path = cli.script(name)
  if not path then
    io.stderr:write(("perf-lua: '%s' is not a perf-lua command. See 'perf-lua --help'.\n"):format(name))
    return 1
  end
  local chunk = assert(loadfile(path))
  local rest = table.move(args, 2, #args, 1, {})
  local status = chunk(rest)
  return math.type(status) == "integer" and status or 0
end

return cli
