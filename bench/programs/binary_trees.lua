-- binary-trees (the benchmarks game's task): allocate, walk and drop
-- perfect binary trees of growing depth, keeping one long-lived tree.
local function make(depth)
  if depth == 0 then return {} end
  depth = depth - 1
  return { make(depth), make(depth) }
end

local function check(tree)
  if tree[1] then return 1 + check(tree[1]) + check(tree[2]) end
  return 1
end

return function(n)
  n = n or 14
  local total = check(make(n + 1))
  local long_lived = make(n)
  for depth = 4, n, 2 do
    local iterations = 1 << (n - depth + 4)
    for _ = 1, iterations do total = total + check(make(depth)) end
  end
  return total + check(long_lived)
end
