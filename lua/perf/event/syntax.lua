-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.syntax: what the event-syntax modules share. Failures are raised
-- as tables carrying the source and a position, and become messages with a
-- caret under the position at the entry points (perf.parse, parse.spec).
-- The scanner state is a table { s = source, i = position }.

local M = {}

---------------------------------------------------------------------------
-- Errors: raised as tables inside, turned into messages at the entry points

local Failure = {}

-- A syntax error at byte `pos` of `src`.
local function fail(src, pos, msg, hint)
  error(setmetatable({ src = src, pos = pos, msg = msg, hint = hint }, Failure), 0)
end

-- The machine cannot answer (tracefs missing or unreadable): perf.parse
-- raises, parse.spec returns nil, message, errno.
local function unavailable(src, msg, errno)
  error(setmetatable({ src = src, msg = msg, errno = errno }, Failure), 0)
end

-- A misuse that is not about a position in a string.
local function misuse(msg)
  error(setmetatable({ msg = msg }, Failure), 0)
end

local function render(e)
  if e.errno then return ("%q: %s"):format(e.src, e.msg) end
  if not e.src then return e.msg end
  local pos = math.max(1, math.min(e.pos, #e.src + 1))
  local lines = {
    ("bad event %q: %s"):format(e.src, e.msg),
    "    " .. e.src,
    "    " .. (" "):rep(pos - 1) .. "^",
  }
  if e.hint then lines[#lines + 1] = "  " .. e.hint end
  return table.concat(lines, "\n")
end

-- Runs fn(...) turning Failure objects into an error raised at `level`
-- above the caller of the entry point.
-- With `soft`, a failure of the machine returns nil, message, errno.
local function guarded(level, soft, fn, ...)
  local res = table.pack(pcall(fn, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  local e = res[2]
  if getmetatable(e) == Failure then
    if soft and e.errno then return nil, render(e), e.errno end
    error(render(e), level + 1)
  end
  error(e, 0)
end

---------------------------------------------------------------------------
-- Numbers

-- An unsigned 64-bit number written in decimal or 0x hex, as a Lua integer
-- (values past 2^63 wrap, as the kernel's u64 does). nil when malformed or
-- too big.
local function tonumber64(s)
  local hex = s:match("^0[xX](%x+)$")
  if hex then
    if #hex:gsub("^0+", "") > 16 then return nil end
    local v = 0
    for i = 1, #hex do v = v << 4 | tonumber(hex:sub(i, i), 16) end
    return v
  end
  if not s:match("^%d+$") then return nil end
  local v = 0
  for i = 1, #s do
    local d = s:byte(i) - 48
    -- v * 10 + d must stay below 2^64: compare as unsigned
    if math.ult(0x1999999999999999, v) or
        (v == 0x1999999999999999 and d > 5) then
      return nil
    end
    v = v * 10 + d
  end
  return v
end


---------------------------------------------------------------------------
-- The scanner state: the source and a position in it

local NAME = "^[%w_%.%*%?!%[%]%-]+"

local function at(P, n) return P.s:sub(P.i, P.i + (n or 1) - 1) end

local function expect(P, ch, what)
  if at(P) ~= ch then
    local got = P.i > #P.s and "end of string" or ("'" .. at(P) .. "'")
    fail(P.s, P.i, ("expected %s, found %s"):format(what or ("'" .. ch .. "'"), got))
  end
  P.i = P.i + 1
end

local function skip_space(P)
  P.i = P.s:match("^%s*()", P.i)
end

-- A new attr under construction: fields plus `st`, the sample_type set.
local function new_attr(type_, config)
  return { type = type_, config = config, st = {} }
end

M.Failure, M.fail, M.unavailable, M.misuse = Failure, fail, unavailable, misuse
M.render, M.guarded, M.tonumber64 = render, guarded, tonumber64
M.NAME, M.at, M.expect, M.skip_space, M.new_attr = NAME, at, expect, skip_space, new_attr

return M
