-- examples/waits.lua: a small Lua program that waits as well as computes.
--
--   lua5.4 examples/waits.lua [n]
--
-- Computes for a while (n rounds), waits for a child process, reads a
-- pipe that answers late, then builds a long string: what
-- `perf-lua profile --mode off-cpu` (or wall, or alloc) tells apart.
local N = math.tointeger(tonumber(arg and arg[1] or "")) or 3000000

local function compute(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end

local function wait_child()
  os.execute("sleep 0.3")
end

local function read_pipe()
  local p = assert(io.popen("sleep 0.1; echo ready"))
  local answer = p:read("a")
  p:close()
  return answer
end

local function build(n)
  local parts = {}
  for i = 1, n do parts[i] = ("%d"):format(i) end
  return table.concat(parts, ",")
end

compute(N)
wait_child()
read_pipe()
print(#build(200000))
