-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

--- Documented on the perf page.
-- @submodule perf

-- perf.parse: perf's event syntax to perf_event_attr tables.
--
-- The forms are those of `perf stat -e` that make one attr each:
--
--   cycles  instructions:u  cs  faults:k          hardware and software
--   L1-dcache-load-misses  dTLB-stores  branch-loads  hardware cache
--   r01c2  r0x1a8/period=1000/  1:1                raw, numeric type:config
--   msr/tsc/  cpu/event=0x3c,umask=0,name=x/      PMU with sysfs terms
--   sched:sched_switch                            tracepoint
--   mem:0x1000/8:w                                breakpoint
--   {cycles,instructions}:u  name{a,b}            a group (a list of attrs)
--
-- Each attr is a new table under the kernel's field names with integer
-- `type` and `config`; `name` (display name), `scale` and `unit` (from a
-- PMU's events/*.scale and *.unit) are extra keys the front removes.
-- Malformed strings raise an error that quotes the string and puts a
-- caret under the offending position.

local events = require "perf.event.events"
local pmus = require "perf.event.pmu"
local tracepoint = require "perf.event.tracepoint"
local nearest = require "perf.util.nearest"
local syntax = require "perf.event.syntax"
local terms = require "perf.event.terms"
local modifiers = require "perf.event.modifiers"
local naming = require "perf.event.naming"
local core = require "perf.core"

local fail, unavailable, misuse, guarded = syntax.fail, syntax.unavailable,
  syntax.misuse, syntax.guarded
local tonumber64, NAME, at, skip_space = syntax.tonumber64, syntax.NAME, syntax.at,
  syntax.skip_space
local new_attr = syntax.new_attr
local parse_terms, apply_plain_terms, pmu_event = terms.parse, terms.apply_plain, terms.pmu_event
local parse_modifiers, apply_modifiers = modifiers.parse, modifiers.apply
local is_modifier_text = modifiers.is_text

local M = {}

M.tonumber64 = tonumber64

-- ------------------------------------------------------------------------
-- PMU families

-- PMUs whose name is `name` followed by _N, or uncore_`name`[_N]: perf's
-- wildcard for a set of uncore PMUs.
local function pmu_family(name)
  local out = {}
  for _, n in ipairs(pmus.names()) do
    if n:match("^" .. name:gsub("%p", "%%%0") .. "_%d+$")
        or n:match("^uncore_" .. name:gsub("%p", "%%%0") .. "_?%d*$") then
      out[#out + 1] = n
    end
  end
  return out
end

-- ------------------------------------------------------------------------
-- Names

local function all_symbolic_names()
  local out = {}
  for _, list in ipairs { events.hardware_list, events.software_list } do
    for _, e in ipairs(list) do
      out[#out + 1] = e[1]
      for _, al in ipairs(e.aliases or {}) do out[#out + 1] = al end
    end
  end
  for _, c in ipairs(events.cache.all()) do out[#out + 1] = c.name end
  for _, p in ipairs(pmus.list()) do
    for ev in pairs(p.events) do
      out[#out + 1] = ev
      out[#out + 1] = p.name .. "/" .. ev .. "/"
    end
  end
  return out
end

-- A raw event "rNNN" / "r0xNNN": its config, or nil.
local function raw_config(name)
  local hex = name:match("^r0x(%x+)$") or name:match("^r(%x+)$")
  if hex and #hex <= 16 then return tonumber64("0x" .. hex) end
end

-- Resolves a plain event name (no terms) to an attr, or returns nil, and a
-- message and position offset when the name is a cache name gone wrong.
local function symbolic(name)
  local t, generic = core.generic_event(name)     -- hardware, then software (any case)
  if t then return new_attr(t, generic) end
  local cfg, err, off = events.cache.decode(name)
  if cfg then return new_attr(3, cfg) end
  local raw = raw_config(name)
  if raw then return new_attr(4, raw) end
  if off and off > 1 then return nil, err, off end
end

-- An event name found among the PMUs' events/: the PMU, or nil; raises
-- when several PMUs have it.
local function pmu_with_event(P, name, pos)
  local found = pmus.with_event(name)
  if #found == 0 then
    for _, p in ipairs(pmus.list()) do
      for ev in pairs(p.events) do
        if ev:lower() == name:lower() then found[#found + 1] = p end
      end
    end
  end
  if #found > 1 then
    local alts = {}
    for _, p in ipairs(found) do alts[#alts + 1] = p.name .. "/" .. name .. "/" end
    fail(P.s, pos, ("'%s' is an event of %d PMUs"):format(name, #found),
      "pick one: " .. table.concat(alts, ", "))
  end
  return found[1]
end

local function unknown_event(P, name, pos)
  if events.tool[name] then
    fail(P.s, pos, ("'%s' is not a kernel event: it is the %s"):format(name, events.tool[name]))
  end
  fail(P.s, pos, ("unknown event '%s'%s"):format(name, nearest.hint(name, all_symbolic_names())),
    "perf.list() shows the events of this machine")
end

local function resolve_plain(P, name, pos)
  local a, err, off = symbolic(name)
  if a then return a end
  if err then fail(P.s, pos + off - 1, err) end
  local p = pmu_with_event(P, name, pos)
  if p then return pmu_event(P, p, { { name = name, value = true, pos = pos } }) end
  unknown_event(P, name, pos)
end

-- NAME/terms/: a PMU, or a symbolic event refined by the terms in list.
local function resolve_with_terms(P, name, pos, list)
  local p = pmus.find(name)
  if p then return pmu_event(P, p, list) end
  local a, err, off = symbolic(name)
  if err then fail(P.s, pos + off - 1, err) end
  if a then
    apply_plain_terms(P, a, list)
    return a
  end
  local family = pmu_family(name)
  if #family > 0 then
    fail(P.s, pos, ("'%s' names %d PMUs (%s); perf.parse makes one event"):format(
      name, #family, table.concat(family, ", ")), "name one of them")
  end
  p = pmu_with_event(P, name, pos)
  if p then
    local all = { { name = name, value = true, pos = pos } }
    for _, t in ipairs(list) do all[#all + 1] = t end
    return pmu_event(P, p, all)
  end
  fail(P.s, pos, ("no PMU or event '%s'%s"):format(name,
    nearest.hint(name, (function()
      local c = pmus.names()
      for _, n in ipairs(all_symbolic_names()) do c[#c + 1] = n end
      return c
    end)())),
    "PMUs here: " .. table.concat(pmus.names(), ", ")
      .. " (a PMU whose driver is a kernel module appears once the module is loaded)")
end

-- ------------------------------------------------------------------------
-- Tracepoints

local function resolve_tracepoint(P, sys, ev, pos)
  if sys:find("[%*%?%[]") or ev:find("[%*%?%[]") then
    fail(P.s, pos, ("'%s:%s' is a pattern; perf.parse makes one event"):format(sys, ev),
      ("perf.stat and perf.group count one event per match; perf.list(%q) lists them")
        :format(sys .. ":" .. ev))
  end
  local id, err, code = tracepoint.id(sys, ev)
  if not id then
    if code == core.errno.ENOENT and tracepoint.path() then
      local systems = tracepoint.systems()
      local known = false
      for _, s in ipairs(systems) do if s == sys then known = true end end
      if known then
        fail(P.s, pos + #sys + 1, ("no tracepoint '%s' in '%s'%s"):format(ev, sys,
          nearest.hint(ev, tracepoint.events(sys))))
      end
      fail(P.s, pos, ("no tracepoint subsystem '%s'%s"):format(sys, nearest.hint(sys, systems)),
        "perf.list(\"tracepoint\") lists them")
    end
    unavailable(P.s, err, code)
  end
  local a = new_attr(2, id)
  a.sample_period = 1
  a.st.raw, a.st.time, a.st.cpu, a.st.period = true, true, true, true
  return a
end

-- ------------------------------------------------------------------------
-- Breakpoints: mem:ADDR[/LEN][:rwx]

local function parse_mem(P)
  local start = P.i
  P.i = P.i + 4
  local num = P.s:match("^0[xX]%x+", P.i) or P.s:match("^%d+", P.i)
  if not num then fail(P.s, P.i, "expected an address after 'mem:'", "mem:ADDR[/LEN][:rwx], e.g. mem:0x1000/8:w") end
  local addr = tonumber64(num)
  if not addr then fail(P.s, P.i, ("address '%s' does not fit in 64 bits"):format(num)) end
  P.i = P.i + #num
  local len
  if at(P) == "/" and P.s:match("^%d", P.i + 1) then
    P.i = P.i + 1
    local l = P.s:match("^0[xX]%x+", P.i) or P.s:match("^%d+", P.i)
    len = tonumber64(l)
    if not len or len == 0 then fail(P.s, P.i, ("bad length '%s'"):format(l)) end
    P.i = P.i + #l
  end
  local bp = 0
  if at(P) == ":" then
    local access = P.s:match("^[rwx]+", P.i + 1)
    local after = access and P.s:sub(P.i + 1 + #access, P.i + 1 + #access)
    if access and (after == "" or after:match("[:/,}%s]")) then
      local bits = { r = 1, w = 2, x = 4 }
      for k = 1, #access do
        local c = access:sub(k, k)
        if bp & bits[c] ~= 0 then
          fail(P.s, P.i + k, ("'%s' given twice in the access type"):format(c))
        end
        bp = bp | bits[c]
      end
      P.i = P.i + 1 + #access
    end
  end
  if bp == 0 then bp = 3 end
  if not len then len = bp == 4 and 8 or 4 end
  local a = new_attr(5, 0)
  a.bp_addr, a.bp_len, a.bp_type = addr, len, bp
  a.sample_period = 1
  a.mem_start = start
  return a
end

-- ------------------------------------------------------------------------
-- Events and groups

-- Whether position i ends an event (end of string, ',' or '}' in a group).
local function at_event_end(P, in_group)
  local c = at(P)
  return c == "" or (in_group and (c == "," or c == "}"))
end

-- Turns the internal attr into the table handed out.
local function finish(a, text)
  local st = a.st
  a.st = nil
  local list = {}
  for _, name in ipairs(events.sample_type_bits) do
    if st[name] then list[#list + 1] = name end
  end
  if #list > 0 then a.sample_type = list end
  a.mem_start, a.alias, a.hw_term = nil, nil, nil
  a.name = a.name or text
  return a
end

local function parse_event(P, in_group)
  local start = P.i
  local a
  if P.s:sub(P.i, P.i + 3) == "mem:" then
    a = parse_mem(P)
    if at(P) == "/" then apply_plain_terms(P, a, parse_terms(P)) end
  else
    local name = P.s:match(NAME, P.i)
    if not name then
      if P.i > #P.s then fail(P.s, P.i, "expected an event") end
      fail(P.s, P.i, ("unexpected '%s', expected an event name"):format(at(P)))
    end
    local pos = P.i
    P.i = P.i + #name
    local c = at(P)
    if c == "/" then
      a = resolve_with_terms(P, name, pos, parse_terms(P))
    elseif c == ":" then
      local t2 = P.s:match(NAME, P.i + 1)
      local n1, n2 = tonumber64(name), t2 and tonumber64(t2)
      if n1 and n2 then
        -- numeric "type:config"
        if n1 > 0xffffffff then fail(P.s, pos, "type does not fit in 32 bits") end
        a = new_attr(n1, n2)
        P.i = P.i + 1 + #t2
        if at(P) == "/" then apply_plain_terms(P, a, parse_terms(P)) end
      elseif not t2 then
        fail(P.s, P.i + 1, "expected modifiers or a tracepoint name after ':'")
      else
        local sym = symbolic(name) or (not name:find("[%*%?]") and pmu_with_event(P, name, pos))
        if sym or (is_modifier_text(t2) and not tracepoint.id(name, t2)) then
          a = resolve_plain(P, name, pos)
        else
          P.i = P.i + 1 + #t2
          a = resolve_tracepoint(P, name, t2, pos)
          if at(P) == "/" then apply_plain_terms(P, a, parse_terms(P)) end
        end
      end
    else
      a = resolve_plain(P, name, pos)
    end
  end
  if at(P) == ":" then
    P.i = P.i + 1
    apply_modifiers(P, a, parse_modifiers(P), false, true)
  elseif P.s:sub(P.i - 1, P.i - 1) == "/" and at(P):match("%a") then
    -- "pmu/terms/u": modifiers may follow the closing '/' directly
    apply_modifiers(P, a, parse_modifiers(P), false, true)
  end
  local text = P.s:sub(start, P.i - 1)
  if in_group then skip_space(P) end
  if not at_event_end(P, in_group) then
    if at(P) == "," then
      fail(P.s, P.i, "several events: perf.parse makes one event or one {group}",
        "write a group as {a,b}, or pass a list of events to perf.group")
    end
    fail(P.s, P.i, ("unexpected '%s' after the event"):format(at(P)))
  end
  return a, text
end

local function parse_group(P)
  local gname = P.s:match("^([%w_%.%-]*){", P.i)
  local gstart = P.i
  P.i = P.i + #gname + 1
  local members, texts = {}, {}
  skip_space(P)
  if at(P) == "}" then fail(P.s, P.i, "empty group") end
  while true do
    skip_space(P)
    if at(P) == "{" then fail(P.s, P.i, "groups cannot be nested") end
    local a, text = parse_event(P, true)
    members[#members + 1], texts[#texts + 1] = a, text
    skip_space(P)
    local c = at(P)
    if c == "," then
      P.i = P.i + 1
    elseif c == "}" then
      P.i = P.i + 1
      break
    else
      fail(P.s, P.i, "unterminated group, expected '}'")
    end
  end
  if at(P) == ":" then
    P.i = P.i + 1
    local mods = parse_modifiers(P)
    for k, a in ipairs(members) do apply_modifiers(P, a, mods, true, k == 1) end
  end
  if P.i <= #P.s then
    if at(P) == "," then
      fail(P.s, P.i, "several groups or events: perf.parse makes one event or one {group}")
    end
    fail(P.s, P.i, ("unexpected '%s' after the group"):format(at(P)))
  end
  local list = {}
  for k, a in ipairs(members) do list[k] = finish(a, texts[k]) end
  list.name = gname ~= "" and gname or P.s:sub(gstart)
  list.group = true
  return list
end

local function parse_string(s)
  local P = { s = s, i = 1 }
  if s:match("^%s*$") then fail(s, 1, "empty event string") end
  if s:find("^%s") or s:find("%s$") then
    fail(s, s:find("%s"), "white space around the event")
  end
  if s:match("^[%w_%.%-]*{") then return parse_group(P) end
  local a, text = parse_event(P, false)
  return finish(a, text)
end

-- ------------------------------------------------------------------------
-- Entry points

--- Parses perf's event syntax into the attr table `perf.open` accepts.
--
-- Names (`"cycles"`, `"L1-dcache-load-misses"`, aliases such as `"cs"`),
-- modifiers (`u k h G H p pp ppp I S D`...), PMU terms
-- (`"cpu/event=0x3c,umask=0x0/"`), raw codes (`"r01c2"`), breakpoints
-- (`"mem:0x1000/8:w"`) and tracepoints (`"sched:sched_switch"`).
-- @string str an event string; `"{a,b}:mods"` is a group
-- @param[opt] level (internal) the error level
-- @treturn table the attr (or for a group, a list of attrs with
-- `group = true` and `name`); it prints as `perf.attr { ... }`
-- @raise on malformed input, pointing at the position, with the nearest
-- valid name
-- @usage
-- local attr = perf.parse "page-faults:u"
-- assert(attr.type == 1 and attr.exclude_kernel)
-- @function parse
function M.parse(str, level)
  if type(str) ~= "string" then
    error(("perf.parse: expected an event string, got %s"):format(type(str)), (level or 1) + 1)
  end
  -- not a tail call: the error level counts this frame
  local r = guarded((level or 1) + 1, false, parse_string, str)
  return core.show(r, r.group and "perf.attrs" or "perf.attr")
end

local generic_types = events.types
local T = events.types            -- PERF_TYPE_* by name

local function resolve_type(t)
  if math.type(t) == "integer" then return t end
  if type(t) ~= "string" then
    misuse(("attr field 'type' must be a type name or an integer, not %s"):format(type(t)))
  end
  if generic_types[t] then return generic_types[t] end
  local p = pmus.find(t)
  if p then return p.type, p end
  local set, cands = {}, {}
  for k in pairs(generic_types) do set[k] = true end
  for _, n in ipairs(pmus.names()) do set[n] = true end
  for k in pairs(set) do cands[#cands + 1] = k end
  table.sort(cands)
  misuse(("unknown event type '%s'%s; types: %s"):format(t, nearest.hint(t, cands),
    table.concat(cands, ", ")))
end

-- A config given by name, for the type already resolved.
local function resolve_config(a, name, p)
  local t = a.type
  local function as_event(str)
    local r = parse_string(str)
    if r.group then misuse("config cannot be a group") end
    return r
  end
  if p then
    return as_event(p.name .. "/" .. name .. "/")
  elseif t == T.hardware or t == T.software then
    local v, why = core.generic_config(t, name)    -- as ev:modify_attributes resolves it
    if not v then misuse(why) end
    return { config = v }
  elseif t == T.tracepoint then
    local r = as_event(name)
    if r.type ~= T.tracepoint then misuse(("'%s' is not a tracepoint (write \"subsystem:event\")"):format(name)) end
    return { config = r.config }
  elseif t == T.hw_cache then
    local v, err = events.cache.decode(name)
    if not v then misuse(("bad cache event '%s': %s"):format(name, err)) end
    return { config = v }
  elseif t == T.raw then
    local v = raw_config(name) or tonumber64(name)
    if not v then misuse(("raw config '%s' must be rNNN or a number"):format(name)) end
    return { config = v }
  end
  misuse(("config names are not known for type %d: give an integer"):format(t))
end

local attr_conflicts = {
  sample_freq = { "sample_period" },
  sample_period = { "sample_freq" },
}

-- parse.spec(spec): what perf.open and perf.group call. `spec` is a perf
-- syntax string, or a table of attr fields whose optional [1] is such a
-- string that the other fields refine; `type` and `config` may be names.
-- Returns a new table; raises on misuse (a group string: use perf.group);
-- returns nil, message, errno when the machine cannot say what a name means
-- (tracefs missing or unreadable).
function M.spec(spec, level)
  level = (level or 1) + 1
  local r, msg, errno = guarded(level, true, function()
    if type(spec) == "string" then
      local r = parse_string(spec)
      if r.group then misuse(("%q is a group: open it with perf.group"):format(spec)) end
      return r
    end
    if type(spec) ~= "table" then
      misuse(("an event must be a string or a table of attr fields, not %s"):format(type(spec)))
    end
    local a
    local base = spec[1]
    if base ~= nil then
      if type(base) ~= "string" then
        misuse(("the event's [1] must be a perf event string, not %s"):format(type(base)))
      end
      a = parse_string(base)
      if a.group then misuse(("%q is a group: open it with perf.group"):format(base)) end
    else
      a = {}
    end
    for k, v in pairs(spec) do
      if k ~= 1 then
        if type(k) ~= "string" then
          misuse(("unexpected key %s in the event table (attr fields have names)"):format(tostring(k)))
        end
        a[k] = v
        for _, other in ipairs(attr_conflicts[k] or {}) do
          if spec[other] == nil then a[other] = nil end
        end
      end
    end
    if spec.sample_freq ~= nil and spec.freq == nil then a.freq = true end
    if spec.sample_period ~= nil and spec.sample_freq == nil and spec.freq == nil then a.freq = nil end
    if a.type == nil then
      misuse("the event table needs a type (or a perf event string as [1])")
    end
    local p
    a.type, p = resolve_type(a.type)
    if type(a.config) == "string" then
      local r = resolve_config(a, a.config, p)
      a.config = nil
      for k, v in pairs(r) do
        if k ~= "name" and (spec[k] == nil or k == "config") then a[k] = v end
      end
      a.name = a.name or (spec.name == nil and base == nil and r.name) or a.name
    elseif a.config == nil then
      a.config = 0
    end
    if a.name == nil then a.name = naming.name_of(a) end
    return a
  end)
  return r, msg, errno
end

return M
