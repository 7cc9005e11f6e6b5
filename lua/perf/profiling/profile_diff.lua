-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.profile_diff: two profiles of the same code compared, stack by
-- stack and line by line.
--
--   local d = prof:diff(base)        -- base: the profile before the change
--   d:folded()                       -- "stack base_count count" lines
--   d:write "d.folded"               -- (FlameGraph's difffolded.pl form)
--   print(d)                         -- the lines that grew and shrank most
--
-- Stacks are those of prof:folded(): the same code profiled twice gives
-- the same stack strings, so they are matched as strings (a profile's
-- from its tree, perf.profiling.stack_tree; only folded text a user hands
-- in, a base read back with M.folded, is parsed). Counts are
-- weights in the profiles' unit; percentages compare each side to its
-- own total, so runs of different lengths still compare.

local nearest = require "perf.util.nearest"
local flamegraph = require "perf.profiling.flamegraph"
local fs = require "perf.util.fs"
local stack_tree = require "perf.profiling.stack_tree"

local M = {}

local Diff = { __name = "perf.profile.diff" }
Diff.__index = Diff

local Folded = { __name = "perf.profile.folded" }
Folded.__index = Folded

-- folded text -> { [stack] = count }, total
local function parse_folded(text)
  local counts, total = {}, 0
  for line in text:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    if stack then
      n = math.tointeger(tonumber(n))
      counts[stack] = (counts[stack] or 0) + n
      total = total + n
    end
  end
  return counts, total
end

-- A side's { [stack] = count } and total: a profile's from its tree,
-- a base read back from folded text as it was parsed.
local function counts_of(p)
  if getmetatable(p) == Folded then return p.counts, p.total end
  if p.stacks then
    local t = stack_tree.of(p)
    return stack_tree.counts(t), t.total
  end
  return parse_folded(p:folded())
end

-- A side's call tree (perf.flamegraph's shape).
local function tree_of(p)
  if p.stacks then return stack_tree.of(p).root end
  if getmetatable(p) == Folded then
    p.tree = p.tree or flamegraph.tree(p.text)
    return p.tree
  end
  return flamegraph.tree(p:folded())
end

-- the weight of each self line: { [source:line] = { count, name, source, line } }
local function lines_of(prof)
  local by = {}
  for _, l in ipairs(prof:lines()) do
    by[l.source .. ":" .. l.line] = l
  end
  return by
end

local function check_profile(p, what)
  local mt = getmetatable(p)
  if type(p) ~= "table" or type(p.folded) ~= "function" or type(p.lines) ~= "function" then
    error(("prof:diff: %s must be a profile, got %s"):format(what, mt and mt.__name or type(p)), 4)
  end
end

-- A function that only a tail call or C code called has no name in a run
-- ("<source:line it is defined at>"), and its name in another: one name
-- for both sides. From the profile: the function each source line is in,
-- and the names; from the base's frames ("name (source:line)"), the name
-- of a function the profile left unnamed. Returns the base and a copy of
-- the profile, renamed.
local function one_name(base, prof)
  local fn_of, name_of = {}, {}          -- "source:line" -> function key; key -> name
  for _, s in ipairs(prof.stacks or {}) do
    for _, f in ipairs(s.frames) do
      if f.kind == "lua" then
        local key = f.source .. ":" .. f.linedefined
        fn_of[f.source .. ":" .. f.line] = key
        if f.name:sub(1, 1) ~= "<" then name_of[key] = f.name end
      end
    end
  end
  local text = base.text
  for name, src, line in text:gmatch("([^;\n]-) %(([^;\n]+):(%-?%d+)%)") do
    local key = fn_of[src .. ":" .. line]
    if key and not name_of[key] and name:sub(1, 1) ~= "<" then name_of[key] = name end
  end
  local renamed = text:gsub("<([^;\n>]+:%-?%d+)> %(", function(key)
    return name_of[key] and (name_of[key] .. " (") or nil
  end)
  local copy = setmetatable({}, getmetatable(prof))
  for k, v in pairs(prof) do copy[k] = v end
  copy.stacks = {}
  for i, s in ipairs(prof.stacks or {}) do
    local frames = {}
    for j, f in ipairs(s.frames) do
      local key = f.kind == "lua" and f.source .. ":" .. f.linedefined
      if key and f.name:sub(1, 1) == "<" and name_of[key] then
        frames[j] = setmetatable({ name = name_of[key] }, { __index = f })
      else
        frames[j] = f
      end
    end
    copy.stacks[i] = setmetatable({ frames = frames }, { __index = s })
  end
  return M.folded(renamed, base.unit), copy
end

-- M.new(base, prof) -> diff
function M.new(base, prof)
  check_profile(base, "base")
  check_profile(prof, "the profile")
  if getmetatable(base) == Folded and prof.stacks then base, prof = one_name(base, prof) end
  if (base.unit or "samples") ~= (prof.unit or "samples") then
    error(("prof:diff: the profiles count different things (%s and %s)")
      :format(base.unit or "samples", prof.unit or "samples"), 3)
  end
  local before, base_total = counts_of(base)
  local after, total = counts_of(prof)
  local stacks = {}
  for stack, n in pairs(before) do stacks[#stacks + 1] = { stack = stack, base = n, count = after[stack] or 0 } end
  for stack, n in pairs(after) do
    if not before[stack] then stacks[#stacks + 1] = { stack = stack, base = 0, count = n } end
  end
  table.sort(stacks, function(a, b) return a.stack < b.stack end)
  return setmetatable({ base = base, profile = prof, stacks = stacks, base_total = base_total,
    total = total, event = prof.event, unit = prof.unit or "samples" }, Diff)
end

-- d:folded() -> "stack base_count count" lines, sorted by stack
function Diff:folded()
  local out = {}
  for i, s in ipairs(self.stacks) do out[i] = ("%s %d %d\n"):format(s.stack, s.base, s.count) end
  return table.concat(out)
end

local function share(n, total) return total > 0 and n / total or 0 end

-- d:lines() -> { {source, line, name, base, count, change}, ... }: every
-- line either profile charged, the largest change of share first
-- (`change`: the line's share of its profile minus its share of the base,
-- in percentage points).
function Diff:lines()
  local before, after = lines_of(self.base), lines_of(self.profile)
  local list = {}
  local function add(key, l)
    local b, a = before[key], after[key]
    list[#list + 1] = { source = l.source, line = l.line, name = l.name,
      base = b and b.count or 0, count = a and a.count or 0 }
  end
  for key, l in pairs(after) do add(key, l) end
  for key, l in pairs(before) do if not after[key] then add(key, l) end end
  for _, e in ipairs(list) do
    e.change = 100 * (share(e.count, self.total) - share(e.base, self.base_total))
  end
  table.sort(list, function(x, y)
    if math.abs(x.change) ~= math.abs(y.change) then return math.abs(x.change) > math.abs(y.change) end
    if x.source ~= y.source then return x.source < y.source end
    return x.line < y.line
  end)
  return list
end

-- ---- a base read back from folded stacks ----

-- The innermost Lua frame of a folded stack: "name (source:line)".
local function leaf_line(stack)
  local frames = {}
  for f in stack:gmatch("[^;]+") do frames[#frames + 1] = f end
  for i = #frames, 1, -1 do
    local name, source, line = frames[i]:match("^(.-) %((.+):(%-?%d+)%)$")
    if name then return name, source, math.tointeger(tonumber(line)) end
  end
end

function Folded:folded() return self.text end

function Folded:lines()
  local by, list = {}, {}
  for stack, n in pairs(self.counts) do
    local name, source, line = leaf_line(stack)
    if name then
      local key = source .. ":" .. line
      local e = by[key]
      if not e then
        e = { source = source, line = line, name = name, count = 0 }
        by[key], list[#list + 1] = e, e
      end
      e.count = e.count + n
    end
  end
  return list
end

-- M.check_folded(text) -> true | nil, what the text is instead: whether
-- it holds folded stacks M.folded reads ("frame;frame;... count" lines,
-- at least one), not another of the profile's formats or another file.
function M.check_folded(text)
  if text:sub(1, 2) == "\31\139" then return nil, "a gzip file (pprof's .pb.gz?), not folded stacks" end
  if text:match("^%s*<") then return nil, "an XML file (an SVG flame graph?), not folded stacks" end
  if text:match("^%s*[{%[]") then return nil, "a JSON file (speedscope's?), not folded stacks" end
  local n, lineno = 0, 0
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    lineno = lineno + 1
    if line ~= "" then
      if not line:match("^.*[^%s] %d+$") then
        return nil, ("line %d is not a folded stack ('frame;frame;... count'): %s"):format(lineno, line:sub(1, 60))
      end
      n = n + 1
    end
  end
  if n == 0 then return nil, "no stacks in it" end
  return true
end

-- M.folded(text [, unit]) -> a base for prof:diff from the folded stacks
-- prof:folded() wrote (an earlier run's `-o x.folded`), counted in `unit`
-- (the profile's, "samples" by default).
function M.folded(text, unit)
  if type(text) ~= "string" then
    error(("perf.profile_diff.folded: folded text expected, got %s"):format(type(text)), 2)
  end
  local counts, total = parse_folded(text)
  return setmetatable({ text = text, counts = counts, total = total, unit = unit or "samples" }, Folded)
end

function Diff:report(max)
  max = max or 10
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  add("# perf.profile diff: %s", self.event or "?")
  add("# base %d %s, now %d %s", self.base_total, self.unit, self.total, self.unit)
  add("#")
  add("#    Base      Now   Change  Line")
  local lines = self:lines()
  for i = 1, math.min(max, #lines) do
    local l = lines[i]
    add("  %6.2f%%  %6.2f%%  %+6.2f  %s:%d  %s", 100 * share(l.base, self.base_total),
      100 * share(l.count, self.total), l.change, l.source, l.line, l.name or "?")
  end
  if #lines > max then add("  ... %d more line%s", #lines - max, #lines - max == 1 and "" or "s") end
  return table.concat(out, "\n") .. "\n"
end

function Diff:__tostring() return self:report() end

-- d:svg() -> a differential flame graph: the frames of the profile, as wide
-- as their counts there, red where their share grew since the base, blue
-- where it shrank (full colour at 20 points of share), white where it held.
function Diff:svg()
  local fg = flamegraph
  local base = {}
  local function index(node, path)
    base[path] = node.value
    for _, c in ipairs(node.children) do index(c, path == "" and c.name or path .. ";" .. c.name) end
  end
  index(tree_of(self.base), "")
  local base_total, total = math.max(self.base_total, 1), math.max(self.total, 1)
  local function change(path, node) return node.value / total - (base[path] or 0) / base_total end
  local function colour(path, node, depth)
    if depth == 0 then return nil end
    local c = change(path, node)
    local fade = math.floor(235 - 200 * math.min(1, math.abs(c) * 5) + 0.5)
    if c > 0 then return ("rgb(255,%d,%d)"):format(fade, fade) end
    if c < 0 then return ("rgb(%d,%d,255)"):format(fade, fade) end
    return "rgb(235,235,235)"
  end
  local function info(path, node, percent)
    return ("%s (%d %s, %.2f%%; base %d, %+.2f points)"):format(node.name, node.value, self.unit,
      percent, base[path] or 0, 100 * change(path, node))
  end
  return fg.svg_tree(tree_of(self.profile), {
    title = "Differential flame graph: " .. (self.event or "?"),
    subtitle = ("base %d, now %d %s; red grew, blue shrank; click a frame to zoom")
      :format(self.base_total, self.total, self.unit),
    unit = self.unit, colour = colour, info = info })
end

local FORMATS = { "folded", "svg" }
local BY_EXTENSION = { folded = "folded", txt = "folded", svg = "svg" }

-- M.format_of(path) -> the format d:write gives `path` by its extension,
-- or nil and why not.
function M.format_of(path)
  local ext = path:match("%.([%w]+)$")
  local format = ext and BY_EXTENSION[ext:lower()]
  if format then return format end
  return nil, ("cannot tell the format from '%s': name it (\"folded\" or \"svg\") or use .folded or .svg"):format(path)
end

-- d:write(path [, format]) -> true | nil, message, errno
function Diff:write(path, format)
  if type(path) ~= "string" then
    error(("diff:write: path expected, got %s"):format(type(path)), 2)
  end
  if format == nil then
    local why
    format, why = M.format_of(path)
    if not format then error("diff:write: " .. why, 2) end
  elseif not BY_EXTENSION[format] then
    error(("diff:write: unknown format '%s'%s"):format(tostring(format), nearest.hint(tostring(format), FORMATS)), 2)
  end
  local text
  if format == "folded" then
    text = self:folded()
  else
    text = self:svg()
  end
  local ok, msg, errno = fs.write_atomic(path, text)
  if not ok then return nil, "diff:write: " .. msg, errno end
  return true
end

return M
