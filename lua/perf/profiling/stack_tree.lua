-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.profiling.stack_tree: a profile's stacks once in memory, the one
-- thing every output of the profile renders from (the report, folded
-- stacks, the SVG flame graph, speedscope, pprof, the diffs).
--
--   local t = stack_tree.of(prof)   -- built at the first need, then kept
--   t.frames[i], t.labels[i]        -- the distinct frames, and their labels
--   t.stacks[k]                     -- { ids = frame indices root first,
--                                   --   count, counters, running }
--   t.root                          -- the call tree by label: { name,
--                                   --   value, self, children (by name) }
--   stack_tree.folded(t)            -- "root;...;leaf N" lines
--
-- It is made from prof.stacks, the stacks M.new in perf.profiling.profile
-- made of what the C hook collected, in their order (speedscope and pprof
-- list them so). A frame is interned by what any output reads of it
-- (kind, name, source, linedefined, line): its label, its speedscope frame
-- and its pprof location are made once. The call tree merges frames by
-- label, as a flame graph shows them.

local M = {}

-- "name (source:line)" for a Lua frame, "name [C]" for a C function,
-- "name [native]" for a native frame; never a ';' (the folded separator).
function M.label(f)
  local s
  if f.kind == "lua" then
    s = ("%s (%s:%d)"):format(f.name, f.source, f.line or -1)
  elseif f.kind == "elided" then
    s = f.name
  elseif f.kind == "c" then
    s = f.name == "[gc]" and f.name or f.name .. " [C]"   -- a collector step
  else
    s = f.name
  end
  return (s:gsub(";", ":"):gsub("\n", " "))
end

-- ---- the call tree ----

function M.new_root()
  return { name = "all", value = 0, self = 0, children = {}, by = {} }
end

-- Adds a stack (its labels, root first) weighing n to the tree at root.
function M.add(root, labels, n)
  root.value = root.value + n
  local node = root
  for _, name in ipairs(labels) do
    local child = node.by[name]
    if not child then
      child = { name = name, value = 0, self = 0, children = {}, by = {} }
      node.by[name] = child
      node.children[#node.children + 1] = child
    end
    child.value = child.value + n
    node = child
  end
  node.self, node.ends = node.self + n, true
end

-- Orders every node's children by name and drops the lookup tables.
function M.finish(root)
  local function order(node)
    table.sort(node.children, function(a, b) return a.name < b.name end)
    for _, c in ipairs(node.children) do order(c) end
    node.by = nil
  end
  order(root)
  return root
end

-- ---- a profile's stacks ----

local function frame_key(f)
  return ("%s\0%s\0%s\0%s\0%s"):format(f.kind, tostring(f.name), tostring(f.source),
    tostring(f.linedefined), tostring(f.line))
end

-- M.build(stacks) -> the tree of a list of { frames = root first, count,
-- counters, running }
function M.build(stacks)
  local t = { frames = {}, labels = {}, stacks = {}, total = 0, root = M.new_root(), source = stacks }
  local index = {}
  for k, s in ipairs(stacks) do
    local ids, labels = {}, {}
    for j, f in ipairs(s.frames) do
      local key = frame_key(f)
      local i = index[key]
      if not i then
        i = #t.frames + 1
        index[key], t.frames[i], t.labels[i] = i, f, M.label(f)
      end
      ids[j], labels[j] = i, t.labels[i]
    end
    if #labels == 0 then labels[1] = "[unknown]" end
    M.add(t.root, labels, s.count)
    t.total = t.total + s.count
    t.stacks[k] = { ids = ids, count = s.count, counters = s.counters, running = s.running }
  end
  M.finish(t.root)
  return t
end

local built = setmetatable({}, { __mode = "k" })

-- M.of(prof) -> prof's tree, built at the first call (again only if
-- prof.stacks was replaced)
function M.of(prof)
  local t = built[prof]
  if not t or t.source ~= prof.stacks then
    t = M.build(prof.stacks)
    built[prof] = t
  end
  return t
end

-- M.counts(t) -> { [folded stack] = count }, the stacks sorted: each
-- weight of the stacks that end at a node, under its path of labels
function M.counts(t)
  if t.counts then return t.counts, t.paths end
  local counts, paths = {}, {}
  local function walk(node, path)
    if node.ends then
      counts[path] = node.self
      paths[#paths + 1] = path
    end
    for _, c in ipairs(node.children) do walk(c, path and path .. ";" .. c.name or c.name) end
  end
  walk(t.root, nil)
  table.sort(paths)
  t.counts, t.paths = counts, paths
  return counts, paths
end

-- M.folded(t) -> FlameGraph's folded stacks, "root;...;leaf N" lines, sorted
function M.folded(t)
  local counts, paths = M.counts(t)
  local out = {}
  for i, path in ipairs(paths) do out[i] = ("%s %d\n"):format(path, counts[path]) end
  return table.concat(out)
end

-- The index in stack st of its innermost Lua frame (nil when it has none).
function M.leaf(t, st)
  for j = #st.ids, 1, -1 do
    if t.frames[st.ids[j]].kind == "lua" then return j end
  end
end

return M
