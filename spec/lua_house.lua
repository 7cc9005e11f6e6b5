-- The house rules of lua/perf/, read from the sources (spec/house_spec.lua):
-- what each module requires, where (at its top or in a function), and its
-- functions with their parameters and lines. A small Lua 5.4 tokenizer:
-- comments and strings are skipped, blocks are counted by their keywords.
local M = {}

-- The layers, lowest first: a module may require its own layer's modules
-- and those of the layers below it. The files directly under lua/perf/
-- are the front (init.lua) and the public names that forward to a module.
M.LAYERS = { "util", "event", "counting", "profiling", "recording", "serving", "front", "cli" }
M.RANK = {}
for i, name in ipairs(M.LAYERS) do M.RANK[name] = i end

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

-- The tokens of a Lua source: { kind = "name"|"string"|"op"|"number", value, line },
-- and the set of lines that hold a comment.
function M.tokens(src)
  local toks, comments = {}, {}
  local i, line, n = 1, 1, #src
  local function count(s) for _ in s:gmatch("\n") do line = line + 1 end end
  local function long_bracket(at)     -- [==[ ... ]==] at `at`: its end, or nil
    local eq = src:match("^%[(=*)%[", at)
    if not eq then return nil end
    local close = "]" .. eq .. "]"
    local e = src:find(close, at, true)
    assert(e, "unfinished long bracket at line " .. line)
    return e + #close - 1
  end
  while i <= n do
    local c = src:sub(i, i)
    if c == "\n" then
      line, i = line + 1, i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local first = line
      local e = long_bracket(i + 2)
      if e then
        count(src:sub(i, e))
      else
        e = (src:find("\n", i, true) or n + 1) - 1
      end
      for l = first, line do comments[l] = true end
      i = e + 1
    elseif c == "\"" or c == "'" then
      local j, first = i + 1, line
      while true do
        local ch = src:sub(j, j)
        assert(ch ~= "", "unfinished string at line " .. first)
        if ch == "\\" then
          if src:sub(j + 1, j + 1) == "\n" then line = line + 1 end
          if src:sub(j + 1, j + 1) == "z" then
            local ws = src:match("^%s*", j + 2)
            count(ws)
            j = j + 2 + #ws
          else
            j = j + 2
          end
        elseif ch == c then
          break
        else
          if ch == "\n" then line = line + 1 end
          j = j + 1
        end
      end
      toks[#toks + 1] = { kind = "string", value = src:sub(i + 1, j - 1), line = first }
      i = j + 1
    elseif c == "[" and src:match("^%[=*%[", i) then
      local first = line
      local e = long_bracket(i)
      count(src:sub(i, e))
      toks[#toks + 1] = { kind = "string", value = src:sub(i, e), line = first }
      i = e + 1
    elseif c:match("[%a_]") then
      local w = src:match("^[%w_]+", i)
      toks[#toks + 1] = { kind = "name", value = w, line = line }
      i = i + #w
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local num = src:match("^0[xX][%x%.]*[pP][+-]?%d+", i) or src:match("^0[xX][%x%.]*", i)
        or src:match("^[%d%.]+[eE][+-]?%d+", i) or src:match("^[%d%.]+", i)
      toks[#toks + 1] = { kind = "number", value = num, line = line }
      i = i + #num
    else
      local op = src:match("^%.%.%.", i) or src:match("^[=~<>]=", i) or src:match("^::", i)
        or src:match("^//", i) or src:match("^%.%.", i) or src:match("^<<", i) or src:match("^>>", i) or c
      toks[#toks + 1] = { kind = "op", value = op, line = line }
      i = i + #op
    end
  end
  return toks, comments
end

-- A module's requires and functions:
--   requires: { { module, line, in_function = bool, guarded = bool (pcall) } }
--   functions: { { name, first, last, params = { names } } }
function M.analyze(src)
  local toks, comments = M.tokens(src)
  local requires, functions = {}, {}
  local stack = {}        -- open blocks: "function" entries are tables, others strings
  local depth = 0         -- functions open
  local function kw(t, v) return t and t.kind == "name" and t.value == v end
  local function op(t, v) return t and t.kind == "op" and t.value == v end
  for k, t in ipairs(toks) do
    local prev = toks[k - 1]
    if t.kind == "name" and not op(prev, ".") and not op(prev, ":") then
      local v = t.value
      if v == "function" then
        local name, j = {}, k + 1
        while toks[j] and not op(toks[j], "(") do
          name[#name + 1] = toks[j].value
          j = j + 1
        end
        local params = {}
        j = j + 1
        while toks[j] and not op(toks[j], ")") do
          if toks[j].kind == "name" then params[#params + 1] = toks[j].value end
          j = j + 1
        end
        local fn = { name = #name > 0 and table.concat(name) or "(anonymous)", first = t.line, params = params }
        functions[#functions + 1] = fn
        stack[#stack + 1] = fn
        depth = depth + 1
      elseif v == "while" or v == "for" then
        stack[#stack + 1] = "loop"
      elseif v == "do" then
        if stack[#stack] == "loop" then stack[#stack] = "loop do" else stack[#stack + 1] = "do" end
      elseif v == "if" or v == "repeat" then
        stack[#stack + 1] = v
      elseif v == "end" or v == "until" then
        local top = table.remove(stack)
        assert(top, "unbalanced '" .. v .. "' at line " .. t.line)
        if type(top) == "table" then
          top.last = t.line
          depth = depth - 1
        end
      elseif v == "require" then
        local arg, guarded = toks[k + 1], false
        if op(prev, "(") and kw(toks[k - 2], "pcall") and op(arg, ",") then   -- pcall(require, "m")
          arg, guarded = toks[k + 2], true
        elseif op(arg, "(") then
          arg = toks[k + 2]
        end
        if arg and arg.kind == "string" then
          requires[#requires + 1] = { module = arg.value, line = t.line, in_function = depth > 0,
            guarded = guarded, commented = comments[t.line] or comments[t.line - 1] or false }
        elseif not guarded then
          requires[#requires + 1] = { module = false, line = t.line, in_function = depth > 0,
            commented = comments[t.line] or comments[t.line - 1] or false }
        end
      end
    end
  end
  assert(#stack == 0, "unclosed block")
  return { requires = requires, functions = functions }
end

-- Every module under dir (lua/perf): { name, path, layer, forwards = target or nil }
function M.modules(root)
  local core = require "perf.core"
  local out = {}
  for _, file in ipairs(core.listdir(root)) do
    local m = file:match("^(.+)%.lua$")
    if m then
      local path = root .. "/" .. file
      local src = read(path)
      local target = src:match('^%-%-[^\n]*\nreturn require "([%w_.]+)"\n$')
      out[#out + 1] = { name = m == "init" and "perf" or "perf." .. m, path = path,
        layer = "front", forwards = target, src = src }
    elseif not file:find(".", 1, true) then
      for _, f in ipairs(core.listdir(root .. "/" .. file) or {}) do
        local mm = f:match("^(.+)%.lua$")
        if mm then
          local path = root .. "/" .. file .. "/" .. f
          out[#out + 1] = { name = "perf." .. file .. (mm == "init" and "" or "." .. mm), path = path,
            layer = file, src = read(path) }
        end
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

return M
