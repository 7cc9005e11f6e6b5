-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

-- perf.nearest: "did you mean" suggestions. The C core finds and spells
-- them (perf.core.nearest, did_you_mean, check_keys), so a message from a
-- Lua module suggests names as one from the core does:
-- " (did you mean 'a'?)", " (did you mean 'a', 'b' or 'c'?)".
local core = require "perf.core"

local M = {}

-- Up to `max` (default 3) names from the list `candidates` closest to `s`,
-- closest first; names that merely contain `s` count as close.
function M.find(s, candidates, max)
  return core.nearest(s, candidates, max)
end

-- " (did you mean 'a', 'b' or 'c'?)", or "" when nothing is close.
function M.hint(s, candidates, max)
  return core.did_you_mean(s, candidates, max)
end

-- A list of names: `names` itself, or the keys of a set, sorted.
local function list_of(names)
  if names[1] ~= nil or next(names) == nil then return names end
  local out = {}
  for k in pairs(names) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- Raises "<what> 'k' (did you mean ...?)<tail>" at `level` (as error's:
-- default 1, the caller; 0, no position) for a key of `t` that is not
-- among `names` (a list, or a set of names); returns t.
function M.check_keys(t, names, what, level, tail)
  level = level or 1
  return core.check_keys(t, list_of(names), what, level > 0 and level + 1 or 0, tail)
end

return M
