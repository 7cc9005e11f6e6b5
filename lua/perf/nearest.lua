-- perf.nearest: "did you mean" suggestions by edit distance.

local M = {}

-- Levenshtein distance between a and b (case-insensitive), giving up
-- (returning limit + 1) once it exceeds `limit`.
local function distance(a, b, limit)
  a, b = a:lower(), b:lower()
  if math.abs(#a - #b) > limit then return limit + 1 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    local best = i
    local ai = a:byte(i)
    for j = 1, #b do
      local cost = ai == b:byte(j) and 0 or 1
      local v = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      cur[j] = v
      if v < best then best = v end
    end
    if best > limit then return limit + 1 end
    prev = cur
  end
  return prev[#b]
end
M.distance = distance

-- Up to `max` (default 3) names from `candidates` closest to `s`, closest
-- first; names that merely contain `s` or start like it count as close.
function M.find(s, candidates, max)
  max = max or 3
  local limit = math.max(2, #s // 3)
  local scored = {}
  local low = s:lower()
  for _, c in ipairs(candidates) do
    local d = distance(s, c, limit)
    if d > limit and #low >= 3 and c:lower():find(low, 1, true) then
      d = limit
    end
    if d <= limit then scored[#scored + 1] = { c, d } end
  end
  table.sort(scored, function(x, y)
    if x[2] ~= y[2] then return x[2] < y[2] end
    return x[1] < y[1]
  end)
  local out = {}
  for i = 1, math.min(max, #scored) do out[i] = scored[i][1] end
  return out
end

-- " (did you mean a, b or c?)", or "" when nothing is close.
function M.hint(s, candidates, max)
  local found = M.find(s, candidates, max)
  if #found == 0 then return "" end
  if #found == 1 then return (" (did you mean %s?)"):format(found[1]) end
  return (" (did you mean %s or %s?)"):format(
    table.concat(found, ", ", 1, #found - 1), found[#found])
end

return M
