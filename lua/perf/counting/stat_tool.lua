-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

-- perf stat's tool events: duration_time, user_time and system_time are
-- no kernel events; perf stat takes them from the command's wall-clock
-- time and rusage. perf.stat does the same with the times it measures
-- (results.elapsed, .user, .sys), in the place the event was given.
local M = {}

local FIELD = { duration_time = "elapsed", user_time = "user", system_time = "sys" }

-- The tool event an item names ("duration_time", or with modifiers, which
-- perf accepts and ignores), or nil.
local function tool_name(item)
  if type(item) ~= "string" then return nil end
  local name = item:match("^([%a_]+)$") or item:match("^([%a_]+):%a*$")
  return name and FIELD[name] and name or nil
end

-- Splits the events: the kernel's in a list, the tool's by position.
-- Returns the kernel events and a table position -> tool event, or nil
-- for that table when there is none.
function M.split(events)
  local kernel, tools = {}, nil
  for i, item in ipairs(events) do
    if tool_name(item) then
      tools = tools or {}
      tools[i] = item
    else
      kernel[#kernel + 1] = item
    end
  end
  return kernel, tools
end

-- Raises for the options whose results the tool events cannot take part in.
function M.check(opts)
  for _, k in ipairs { "interval", "per_thread", "aggregate" } do
    if opts and opts[k] ~= nil and opts[k] ~= false then
      error(("perf.stat: duration_time, user_time and system_time are counted for the "
        .. "whole command; they do not go with %s"):format(k), 0)
    end
  end
end

-- A tool event's entry from the command's times.
local function entry(item, r)
  local v = r[FIELD[tool_name(item)]]
  if math.type(v) ~= "integer" then
    return { name = item, supported = false, tool = true,
      error = item .. ": the command's times were not measured (a running process is counted)" }
  end
  -- perf stat gives a tool event its own value as its enabled and running
  -- times: a zero system_time was not counted
  return { name = item, value = v, raw = v, unit = "ns", supported = true, tool = true,
    time_enabled = v, time_running = v, fraction = 1 }
end

-- Puts the tool events into the results r of the kernel events given
-- (when none was, `placeholder` names the one counted in their stead,
-- dropped here), each in its given place, as perf stat prints them:
-- before the entries of the kernel event given after it (a group or a
-- pattern gives several). given(e) is the index, among the kernel events
-- given, of the one entry e comes from.
function M.merge(r, tools, placeholder, given)
  local kernel = placeholder and {} or r.events
  local of, loose, nkernel, last = {}, {}, 0, 0
  for _, e in ipairs(kernel) do
    local j = given(e)
    if j then
      of[j] = of[j] or {}
      table.insert(of[j], e)
      nkernel = math.max(nkernel, j)
    else
      loose[#loose + 1] = e
    end
  end
  for pos in pairs(tools) do last = math.max(last, pos) end
  local events, j, pos = {}, 0, 1
  while pos <= last or j < nkernel do
    if tools[pos] then
      events[#events + 1] = entry(tools[pos], r)
    else
      j = j + 1
      for _, e in ipairs(of[j] or {}) do events[#events + 1] = e end
    end
    pos = pos + 1
  end
  for _, e in ipairs(loose) do events[#events + 1] = e end
  for n = #r, 1, -1 do r[n] = nil end
  if placeholder then r[placeholder] = nil end
  for n, e in ipairs(events) do
    local v = e.supported ~= false and e.value
    r[n] = v
    if e.tool and r[e.name] == nil then r[e.name] = v end
  end
  r.events = events
  return r
end

return M
