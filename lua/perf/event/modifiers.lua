-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.modifiers: the ":ukhp..." part of perf's event syntax, and how
-- perf turns the letters into attr fields (for one event, or for every
-- member of a group on top of the member's own).

local core = require "perf.core"
local syntax = require "perf.event.syntax"

local fail = syntax.fail

local M = {}

local MOD_LETTERS = "ukhIGHpPSDWebR"

local refused_mods = {
  W = "weak groups are a perf-tool fallback with no attr field: open the members separately if the group does not fit",
  b = "counting through BPF is a perf-tool feature with no attr field",
  R = "retirement latency is a perf-tool feature with no attr field",
}

local function is_modifier_text(s)
  return s ~= "" and not s:find("[^" .. MOD_LETTERS .. "]")
end

-- Parses modifier letters at P.i (after the ':'). Returns a table of them.
local function parse_modifiers(P)
  local start = P.i
  local text = P.s:match("^%a+", P.i) or ""
  if text == "" then
    fail(P.s, P.i, "expected modifiers after ':'", "modifiers: u k h I G H p pp ppp S D e")
  end
  local mods = { precise = 0, pos = start }
  for k = 1, #text do
    local c = text:sub(k, k)
    local pos = start + k - 1
    if not MOD_LETTERS:find(c, 1, true) then
      fail(P.s, pos, ("unknown modifier '%s'"):format(c),
        "modifiers: u (user) k (kernel) h (hypervisor) I (not idle) G (guest) H (host) p/pp/ppp (precise) P (most precise) S (sample read) D (pinned) e (exclusive)")
    end
    if refused_mods[c] then fail(P.s, pos, ("modifier '%s' is not supported: %s"):format(c, refused_mods[c])) end
    if c == "p" then
      mods.precise = mods.precise + 1
      if mods.precise > 3 then fail(P.s, pos, "at most 3 p's (ppp): precise_ip goes from 0 to 3") end
    else
      if mods[c] then fail(P.s, pos, ("modifier '%s' given twice"):format(c)) end
      mods[c] = true
    end
  end
  P.i = P.i + #text
  return mods
end

local function flag(v) return v == 1 or nil end

local max_precise_cache = {}

-- The highest precise_ip (3 down to 1) the kernel accepts for `a`, probed
-- by opening it disabled for user space once per type and config, as perf
-- does for the P modifier; nil when none opens.
local function max_precise(a)
  local key = ("%d:%d:%d"):format(a.type, a.config or 0, a.config1 or a.bp_addr or 0)
  local v = max_precise_cache[key]
  if v == nil then
    v = false
    for p = 3, 1, -1 do
      local attr = { disabled = true, exclude_kernel = true, exclude_hv = true, precise_ip = p }
      for k, x in pairs(a) do
        if k ~= "st" and k ~= "name" and k ~= "scale" and k ~= "unit" and k ~= "precise_ip"
            and k:sub(1, 1) ~= "_" and k ~= "mem_start" and k ~= "alias" and k ~= "hw_term" then
          attr[k] = x
        end
      end
      local ev = core.open(attr, nil, "precise probe")
      if ev then ev:close(); v = p; break end
    end
    max_precise_cache[key] = v
  end
  return v or nil
end

-- Applies modifiers as perf does. For a group's modifiers `group` is true
-- and the member's own exclusions are the starting point; `leader` says
-- whether the attr is the group leader (pinned and exclusive apply to
-- leaders only).
local function apply_modifiers(P, a, mods, group, leader)
  local function b(v) return (group and v) and 1 or 0 end
  local eu, ek, eh = b(a.exclude_user), b(a.exclude_kernel), b(a.exclude_hv)
  local eH, eG = b(a.exclude_host), b(a.exclude_guest)
  -- u, k, h name the modes counted: the others are excluded, unless some
  -- mode is excluded already (G, H likewise)
  if (mods.u or mods.k or mods.h) and (eu | ek | eh) == 0 then eu, ek, eh = 1, 1, 1 end
  if mods.u then eu = 0 end
  if mods.k then ek = 0 end
  if mods.h then eh = 0 end
  if (mods.G or mods.H) and (eG | eH) == 0 then eG, eH = 1, 1 end
  if mods.G then eG = 0 end
  if mods.H then eH = 0 end
  if mods.u or mods.k or mods.h or group then
    a.exclude_user, a.exclude_kernel, a.exclude_hv = flag(eu), flag(ek), flag(eh)
  end
  if mods.G or mods.H or group then
    a.exclude_host, a.exclude_guest = flag(eH), flag(eG)
  end
  if mods.precise > 0 then
    local p = (a.precise_ip or 0) + mods.precise
    if p > 3 then
      fail(P.s, mods.pos, ("precise_ip would be %d; the most is 3"):format(p))
    end
    a.precise_ip = p
  end
  if mods.P then a.precise_ip = max_precise(a) end
  if mods.I then a.exclude_idle = true end
  if mods.S then a.st.read = true end
  if mods.D and leader then a.pinned = true end
  if mods.e and leader then a.exclusive = true end
end

M.parse, M.apply, M.is_text = parse_modifiers, apply_modifiers, is_modifier_text

return M
