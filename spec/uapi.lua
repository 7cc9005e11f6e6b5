-- The constants of the installed uapi headers, parsed at test time (for
-- specs that compare the library's numbers and names with the kernel's):
-- enums with their implicit values, object-like #defines, the _IO* ioctl
-- encoding of asm-generic/ioctl.h.
local M = {}

M.PERF_EVENT_H = "/usr/include/linux/perf_event.h"
M.HW_BREAKPOINT_H = "/usr/include/linux/hw_breakpoint.h"
M.PERF_REGS_H = "/usr/include/x86_64-linux-gnu/asm/perf_regs.h"

-- The C type sizes the perf ioctls use (LP64).
local SIZEOF = { __u64 = 8, __u32 = 4 }

-- asm-generic/ioctl.h: dir << 30 | size << 16 | type << 8 | nr, with
-- _IOC_WRITE = 1 and _IOC_READ = 2.
local function ioc(dir, ty, nr, ctype)
  local size = 0
  if ctype then size = ctype:find("%*") and 8 or assert(SIZEOF[ctype], ctype) end
  return dir << 30 | size << 16 | ty:byte() << 8 | nr
end

-- The expressions of a header: name -> C expression text, for enum members
-- (implicit ones as "prev + 1") and object-like #defines.
function M.definitions(path, into)
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", ""):gsub("\\\n", " ")
  for name, value in text:gmatch("\n#define%s+([%w_]+)[ \t]+([^\n]+)") do
    into[name] = value
  end
  for body in text:gmatch("enum[%w_%s]*(%b{})") do
    local prev
    for item in body:sub(2, -2):gmatch("[^,]+") do
      local name, value = item:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
      if not name then name = item:match("^%s*([%a_][%w_]*)%s*$") end
      if name then
        into[name] = value or (prev and ("(" .. prev .. ") + 1") or "0")
        prev = name
      end
    end
  end
  return into
end

-- Evaluates every definition as Lua (suffixes and casts dropped, _IO* by
-- ioc); names refer to each other. Returns name -> integer, leaving out
-- those that are no plain integer expression.
function M.evaluate(defs)
  local values, env = {}, {}
  local function eval(name)
    if values[name] == nil then
      local e = defs[name]
      values[name] = false                              -- no cycles
      e = e:gsub("%(%s*__u%d+%s*%)", "")                -- (__u64)-32
        :gsub("(%f[%w]0[xX]%x+)[uUlL]+", "%1"):gsub("(%f[%w]%d+)[uUlL]+", "%1")
      e = e:gsub("_IO(W?R?)%s*(%b())", function(rw, args)
        local ty, nr, ctype = args:match("^%(%s*'(.)'%s*,%s*(%d+)%s*,?%s*(.-)%s*%)$")
        local dir = (rw:find("W") and 1 or 0) | (rw:find("R") and 2 or 0)
        return tostring(ioc(dir, ty, tonumber(nr), ctype ~= "" and ctype or nil))
      end)
      local chunk = load("return " .. e, name, "t", env)
      local ok, v = pcall(chunk or error)
      values[name] = ok and math.type(v) == "integer" and v or false
    end
    return values[name] or error("not an integer: " .. name)
  end
  setmetatable(env, { __index = function(_, k)
    if defs[k] then return eval(k) end
    error("unknown name " .. k)
  end })
  local out = {}
  for name in pairs(defs) do
    if eval(name) ~= nil then out[name] = values[name] or nil end
  end
  return out
end


-- The members of enum `name` in the header at `path`, in order.
function M.enum(path, name)
  local f = assert(io.open(path))
  local text = f:read("a"):gsub("/%*.-%*/", " ")
  f:close()
  local body = assert(text:match("enum%s+" .. name .. "%s*(%b{})"), "no enum " .. name)
  local out = {}
  for member in body:gmatch("([%a_][%w_]*)%s*[=,}]") do out[#out + 1] = member end
  return out
end

-- name -> integer for every constant the headers at `paths` define.
function M.constants(paths)
  local defs = {}
  for _, path in ipairs(paths) do M.definitions(path, defs) end
  return M.evaluate(defs)
end

return M
