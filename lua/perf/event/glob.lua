-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.glob: event patterns expanded to the events they name, as perf stat
-- -e expands them.
--
--   glob.expand "syscalls:sys_enter_open*"
--     --> { "syscalls:sys_enter_open", "syscalls:sys_enter_open_by_handle_at", ... }
--   glob.expand "{sched:sched_process_*,page-faults}:u"
--     --> { "{sched:sched_process_exec,...,sched:sched_process_wait,page-faults}:u" }
--
-- A pattern is a tracepoint name with '*' (any run of characters) or '?'
-- (one character) in its subsystem, its event or both ("sched:sched_*",
-- "sys*:sys_enter_openat", "*:sys_enter_openat"); modifiers and terms
-- after it (":u", "/.../") go with every match. The matches come in
-- tracefs's directory order, as perf stat counts and prints them; a subsystem with no matching
-- event is skipped. Inside a {group} each pattern becomes its matches, in
-- the same group. perf itself expands no PMU event names (msr/*/ is an
-- unknown term to it), and neither does this.
local tracepoint = require "perf.event.tracepoint"

local M = {}

local WILD = "[%*%?]"

-- A glob ("sched_*", "sys_enter_read?") to an anchored Lua pattern.
function M.to_pattern(g)
  return "^" .. g:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".") .. "$"
end

-- The parts of a tracepoint pattern "sys:event" plus what follows it, or
-- nil when `s` is no pattern.
local function split_pattern(s)
  local sys, ev, rest = s:match("^([%w_%*%?%-%.]+):([%w_%*%?%-%.]+)(.*)$")
  if not sys then return nil end
  if not (sys:find(WILD) or ev:find(WILD)) then return nil end
  if rest ~= "" and not rest:match("^[:/]") then return nil end
  return sys, ev, rest
end

--- glob.is_pattern(s) -> whether the event string is a tracepoint pattern
function M.is_pattern(s)
  return type(s) == "string" and split_pattern(s) ~= nil
end

-- The tracepoints matching sys:ev in tracefs's order, or nil, message, errno when
-- tracefs cannot be read. Raises when none matches.
local function matches(s, sys, ev)
  local dir, why, errno = tracepoint.path()
  if not dir then return nil, ("%q: %s"):format(s, why), errno end
  local sys_pat, ev_pat = M.to_pattern(sys), M.to_pattern(ev)
  local out = {}
  for _, system in ipairs(tracepoint.systems(true)) do
    if system:match(sys_pat) then
      for _, event in ipairs(tracepoint.events(system, true)) do
        if event:match(ev_pat) then out[#out + 1] = system .. ":" .. event end
      end
    end
  end
  if #out == 0 then
    error(("no tracepoint matches %q (perf-lua list %q lists those that exist)")
      :format(sys .. ":" .. ev, sys), 0)
  end
  return out
end

-- A group string "name{a,b*}:mods" with each pattern member replaced by
-- its matches. Members are found between commas; a comma inside a PMU's
-- /terms/ splits a piece that is no pattern, which is kept as it was.
local function expand_group(s)
  local head, body, tail = s:match("^([%w_%.%-]*{)(.*)(}[^}]*)$")
  if not head then return { s } end
  local pieces = {}
  for piece in (body .. ","):gmatch("([^,]*),") do
    local sys, ev, rest = split_pattern(piece)
    if sys then
      local list, msg, errno = matches(piece, sys, ev)
      if not list then return nil, msg, errno end
      for _, name in ipairs(list) do pieces[#pieces + 1] = name .. rest end
    else
      pieces[#pieces + 1] = piece
    end
  end
  return { head .. table.concat(pieces, ",") .. tail }
end

--- glob.expand(s) -> list of event strings | nil, message, errno
-- An event or "{group}" string to the events it names: a pattern to one
-- string per match, a group to one group string with its patterns
-- expanded, anything else to itself. Raises when a pattern matches
-- nothing; nil, message, errno when tracefs cannot be read.
function M.expand(s)
  if s:match("^[%w_%.%-]*{") then return expand_group(s) end
  local sys, ev, rest = split_pattern(s)
  if not sys then return { s } end
  local list, msg, errno = matches(s, sys, ev)
  if not list then return nil, msg, errno end
  for i, name in ipairs(list) do list[i] = name .. rest end
  return list
end

--- glob.specs(list) -> list | nil, message, errno
-- A list of event specs (strings or attr tables whose [1] is a string)
-- with every pattern replaced by its matches in place; a table spec is
-- copied once per match.
function M.specs(list)
  local out = {}
  for _, spec in ipairs(list) do
    local base = type(spec) == "table" and spec[1] or spec
    if type(base) == "string" and (M.is_pattern(base) or base:match("^[%w_%.%-]*{")) then
      local names, msg, errno = M.expand(base)
      if not names then return nil, msg, errno end
      for _, name in ipairs(names) do
        if type(spec) == "table" then
          local c = {}
          for k, v in pairs(spec) do c[k] = v end
          c[1] = name
          out[#out + 1] = c
        else
          out[#out + 1] = name
        end
      end
    else
      out[#out + 1] = spec
    end
  end
  for k, v in pairs(list) do                  -- a parsed group's name, group
    if math.type(k) ~= "integer" then out[k] = v end
  end
  return out
end

return M
