-- perf-lua stat -G: cgroup names paired with the events as perf stat pairs
-- them.
--
--   local pair = require "perf.cli.stat_cgroups"
--   pair { { e = "a,b" }, { G = "x" } }              --> { "a", "b" }, { "x", "x" }
--   pair { { e = "a,b,c" }, { G = "x,,y" } }         --> { "a", "b", "c" }, { "x", false, "y" }
--   pair { { e = "a" }, { G = "x" }, { e = "b" } }   --> { "a", "b" }, { "x", false }
--
-- perf numbers the events (each member of a {group}, each match of a
-- pattern) and gives the n-th name of all the -G options, in order, to the
-- n-th event; when the first -G has one name, every event given before it
-- is in that cgroup. An empty name ("x,,y") skips its event; events with
-- no name count everything on the CPUs. A group's events must share one.
local glob = require "perf.event.glob"
local split = require("perf.counting.stat").split

-- The events of one -e value (patterns expanded when they can be; a
-- pattern that matches nothing is left for perf.stat to report).
local function items(value)
  local list = split(value)
  local ok, expanded = pcall(glob.specs, list)
  return ok and expanded or list
end

-- How many events perf counts in an item: a group's members, else one.
local function size(item)
  local inner = item:match("^[%w_%.%-]*{(.*)}")
  return inner and #split(inner) or 1
end

--- pair(options) -> events, cgroups | nil, message
-- `options`: the -e and -G options in the order given ({ e = value } or
-- { G = value }). Returns the events and the cgroup of each (false for
-- none), or nil and what is wrong (as perf says it).
return function(options)
  local events, owner, names, given = {}, {}, {}, 0
  for _, o in ipairs(options) do
    if o.e then
      for _, item in ipairs(items(o.e)) do
        events[#events + 1] = item
        for _ = 1, size(item) do owner[#owner + 1] = #events end
      end
    else
      if #owner == 0 then return nil, "must define events before cgroups" end
      for name in (o.G .. ","):gmatch("([^,]*),") do
        given = given + 1
        if given > #owner then
          return nil, ("more cgroups than events: %s names cgroup %d, for event %d of %d")
            :format(o.G, given, given, #owner)
        end
        if name ~= "" then names[given] = name end
      end
      if given == 1 then                              -- one cgroup for the events so far
        for k = 2, #owner do names[k] = names[1] end
      end
    end
  end
  local cgroups = {}
  for k, item in ipairs(owner) do
    local name = names[k] or false
    if cgroups[item] ~= nil and cgroups[item] ~= name then
      return nil, ("the events of the group %s are in one cgroup, not several"):format(events[item])
    end
    cgroups[item] = name
  end
  return events, cgroups
end
