-- Layer lua/perf/event/: event syntax and names, discovery (PMUs, tracefs, capabilities) and
-- opening one event; it requires perf.core and lua/perf/util/ only.

-- perf.terms: the "/term=value,.../" part of perf's event syntax: the terms
-- every event takes (config, period, freq, name, call-graph, branch_type,
-- ...) and, for a sysfs PMU, its format terms packed into config, config1,
-- config2 and config3 and its event aliases.

local events = require "perf.event.events"
local pmus = require "perf.event.pmu"
local nearest = require "perf.util.nearest"
local fs = require "perf.util.fs"
local syntax = require "perf.event.syntax"

local fail, at, expect, tonumber64 = syntax.fail, syntax.at, syntax.expect, syntax.tonumber64
local new_attr = syntax.new_attr

local M = {}

---------------------------------------------------------------------------
-- Terms: "/term=value,term,.../"

local common_terms = {
  config = true, config1 = true, config2 = true, config3 = true, name = true,
  period = true, freq = true, branch_type = true, time = true,
  ["call-graph"] = true, ["stack-size"] = true, inherit = true,
  ["no-inherit"] = true, ["max-stack"] = true, overwrite = true,
  ["no-overwrite"] = true, ["aux-output"] = true, ["aux-sample-size"] = true,
  ["aux-action"] = true,
}
local common_list = {}
for k in pairs(common_terms) do common_list[#common_list + 1] = k end
table.sort(common_list)

local refused_terms = {
  nr = "'nr' limits how many samples the perf tool writes; it has no attr field",
  percore = "'percore' is how the perf tool sums counts; it has no attr field",
  ["metric-id"] = "'metric-id' names a metric in the perf tool; it has no attr field",
  cpu = "'cpu' picks the CPU to open on: pass it in the target ({cpu = N})",
}

-- Parses "/.../" at P.i (which is at the opening '/'). Returns a list of
-- { name =, value = integer | string | true, pos =, vpos = }.
local function parse_terms(P)
  expect(P, "/")
  local terms = {}
  if at(P) == "/" then P.i = P.i + 1; return terms end
  while true do
    local pos = P.i
    local name = P.s:match("^@?[%w_][%w_%.%-]*", P.i)
    if not name then
      fail(P.s, P.i, P.i > #P.s and "unterminated term list, expected '/'"
        or "expected a term name")
    end
    P.i = P.i + #name
    local term = { name = name, value = true, pos = pos }
    if at(P) == "=" then
      P.i = P.i + 1
      term.vpos = P.i
      local q = P.s:match("^'[^']*'", P.i)
      local v = q or P.s:match("^[^,/]+", P.i)
      if not v then fail(P.s, P.i, "expected a value after '='") end
      P.i = P.i + #v
      if q then
        term.value = q:sub(2, -2)
      else
        local n = tonumber64(v)
        if n then
          term.value = n
        elseif v:match("^%d") then
          fail(P.s, term.vpos, ("bad number '%s'"):format(v),
            "numbers are decimal or 0x hex, below 2^64")
        else
          term.value = v
        end
      end
    end
    terms[#terms + 1] = term
    local c = at(P)
    if c == "," then
      P.i = P.i + 1
    elseif c == "/" then
      P.i = P.i + 1
      return terms
    else
      fail(P.s, P.i, P.i > #P.s and "unterminated term list, expected '/'"
        or ("unexpected '%s' in terms"):format(c))
    end
  end
end

local function int_term(P, t)
  if math.type(t.value) ~= "integer" then
    if t.value == true then
      fail(P.s, t.pos, ("term '%s' needs a value (%s=N)"):format(t.name, t.name))
    end
    fail(P.s, t.vpos, ("term '%s' needs a number, not '%s'"):format(t.name, t.value))
  end
  return t.value
end

local function bool_term(P, t)
  if t.value == true then return true end
  local v = int_term(P, t)
  if v ~= 0 and v ~= 1 then fail(P.s, t.vpos, ("term '%s' takes 0 or 1"):format(t.name)) end
  return v == 1
end

local function str_term(P, t)
  if t.value == true then
    fail(P.s, t.pos, ("term '%s' needs a value (%s=...)"):format(t.name, t.name))
  end
  return tostring(t.value)
end

-- x86-64 user registers for DWARF unwinding: AX..FLAGS, CS, SS, R8..R15
-- (the segment registers DS, ES, FS, GS left out), as perf asks for them.
local X86_64_REGS = 0xff0fff

local function apply_callgraph(P, a, t)
  local v = str_term(P, t)
  if v == "fp" then
    a.st.callchain = true
  elseif v == "dwarf" then
    if fs.machine() ~= "x86_64" then
      fail(P.s, t.vpos, "call-graph=dwarf is only known for x86_64 here")
    end
    a.st.callchain, a.st.regs_user, a.st.stack_user = true, true, true
    a.sample_regs_user = X86_64_REGS
    a.sample_stack_user = a.sample_stack_user or 8192
    a.exclude_callchain_user = true
  elseif v == "lbr" then
    a.st.callchain, a.st.branch_stack = true, true
    a.branch_sample_type = { "user", "call_stack", "no_flags", "no_cycles", "hw_index" }
  elseif v == "no" then
    a.st.callchain, a.st.regs_user, a.st.stack_user = nil, nil, nil
  else
    fail(P.s, t.vpos, ("unknown call-graph mode '%s'"):format(v),
      "call-graph takes fp, dwarf, lbr or no")
  end
end

local function apply_branch(P, a, t)
  local v = str_term(P, t)
  if v == "no" then
    a.st.branch_stack = nil
    a.branch_sample_type = nil
    return
  end
  local names, priv_only = {}, true
  for word in v:gmatch("[^|]+") do
    local k = events.branch_spellings[word]
    if not k then
      local all = {}
      for s in pairs(events.branch_spellings) do all[#all + 1] = s end
      table.sort(all)
      fail(P.s, t.vpos, ("unknown branch filter '%s'%s"):format(word, nearest.hint(word, all)),
        "branch filters: " .. table.concat(all, ", "))
    end
    names[#names + 1] = k
    if k ~= "user" and k ~= "kernel" and k ~= "hv" then priv_only = false end
  end
  -- only privilege levels given: perf samples any branch at those levels
  if priv_only then names[#names + 1] = "any" end
  a.branch_sample_type = names
  a.st.branch_stack = true
end

-- Applies a term every kind of event accepts. Returns false when `t` is
-- not such a term.
local function apply_common(P, a, t)
  local n = t.name
  if refused_terms[n] then fail(P.s, t.pos, refused_terms[n]) end
  if n:sub(1, 1) == "@" then
    fail(P.s, t.pos, "driver configuration terms (@...) are not supported")
  end
  if not common_terms[n] then return false end
  if n == "config" or n == "config1" or n == "config2" or n == "config3" then
    a[n] = int_term(P, t)
  elseif n == "name" then
    a.name = str_term(P, t)
  elseif n == "period" then
    a.sample_period, a.sample_freq, a.freq = int_term(P, t), nil, nil
    a.st.period = nil
  elseif n == "freq" then
    a.sample_freq, a.sample_period, a.freq = int_term(P, t), nil, true
    a.st.period = true
  elseif n == "time" then
    a.st.time = bool_term(P, t) or nil
  elseif n == "call-graph" then
    apply_callgraph(P, a, t)
  elseif n == "stack-size" then
    a.sample_stack_user = int_term(P, t)
  elseif n == "inherit" then
    a.inherit = bool_term(P, t)
  elseif n == "no-inherit" then
    a.inherit = not bool_term(P, t)
  elseif n == "max-stack" then
    a.sample_max_stack = int_term(P, t)
  elseif n == "overwrite" then
    a.write_backward = bool_term(P, t)
  elseif n == "no-overwrite" then
    a.write_backward = not bool_term(P, t)
  elseif n == "aux-output" then
    a.aux_output = bool_term(P, t)
  elseif n == "aux-sample-size" then
    a.aux_sample_size = int_term(P, t)
  elseif n == "aux-action" then
    local v = str_term(P, t)
    local field = ({ ["start-paused"] = "aux_start_paused", pause = "aux_pause",
      resume = "aux_resume" })[v]
    if not field then
      fail(P.s, t.vpos, ("unknown aux-action '%s'"):format(v),
        "aux-action takes start-paused, pause or resume")
    end
    a[field] = true
  elseif n == "branch_type" then
    apply_branch(P, a, t)
  end
  return true
end

local function unknown_term(P, t, extra)
  local cands = {}
  for _, c in ipairs(common_list) do cands[#cands + 1] = c end
  for _, c in ipairs(extra or {}) do cands[#cands + 1] = c end
  local hint = "terms here: " .. table.concat(cands, ", ")
  fail(P.s, t.pos, ("unknown term '%s'%s"):format(t.name, nearest.hint(t.name, cands)), hint)
end

-- Terms on an event that is not a sysfs PMU event: only common terms.
local function apply_plain_terms(P, a, terms)
  for _, t in ipairs(terms) do
    if not apply_common(P, a, t) then unknown_term(P, t) end
  end
end

---------------------------------------------------------------------------
-- PMU events: "pmu/terms/" with terms packed by the PMU's format

local hardware_terms = events.hardware

local function sorted_keys(t)
  local out = {}
  for name in pairs(t) do out[#out + 1] = name end
  table.sort(out)
  return out
end

-- The event aliases among `terms` expanded: their terms come before the
-- user's (`expanded`), so the user's terms (`user`) override them.
local function expand_aliases(a, p, terms, events_list)
  local expanded, user = {}, {}
  for _, t in ipairs(terms) do
    local ev = t.value == true and not p.format_bits[t.name] and not common_terms[t.name]
      and (p.events[t.name] and t.name or nil)
    if not ev and t.value == true and not p.format_bits[t.name] then
      for _, e in ipairs(events_list) do
        if e:lower() == t.name:lower() then ev = e end
      end
    end
    if ev then
      for _, at_ in ipairs(pmus.parse_terms(p.events[ev])) do
        local v = at_[2]
        if type(v) == "string" then v = tonumber64(v) or v end
        expanded[#expanded + 1] = { name = at_[1], value = v, pos = t.pos, vpos = t.pos,
          alias = ev }
      end
      local info = p.event_info[ev] or {}
      a.scale, a.unit = info.scale, info.unit
      a.alias = ev
    else
      user[#user + 1] = t
    end
  end
  return expanded, user
end

-- A term of PMU `p` that is neither one of its formats nor common: raises,
-- with the nearest names.
local function unknown_pmu_term(P, p, t, formats, events_list)
  local extra = {}
  for _, f in ipairs(formats) do extra[#extra + 1] = f end
  for _, e in ipairs(events_list) do extra[#extra + 1] = e end
  if t.alias then
    fail(P.s, t.pos, ("event '%s' of %s uses term '%s', which %s has no format for")
      :format(t.alias, p.name, t.name, p.name))
  end
  local cands = {}
  for _, c in ipairs(common_list) do cands[#cands + 1] = c end
  for _, c in ipairs(extra) do cands[#cands + 1] = c end
  local fmt = #formats > 0 and table.concat(formats, ", ") or "none"
  local evs = #events_list > 0 and table.concat(events_list, ", ") or "none"
  fail(P.s, t.pos, ("%s has no term or event '%s'%s"):format(p.name, t.name,
    nearest.hint(t.name, cands)),
    ("%s format terms: %s; events: %s; built-in terms: %s"):format(
      p.name, fmt, evs, table.concat(common_list, ", ")))
end

-- A term of PMU `p` that is no format term: a common term, a raw config,
-- a generic cache or hardware event on this PMU, else unknown.
local function apply_other_term(P, a, p, t, formats, events_list)
  if apply_common(P, a, t) then -- luacheck: ignore 542
    -- done: the test itself applied the common term
  elseif t.value == true and t.name:match("^r%x+$") and #t.name <= 17 then
    -- "rNNN" that is neither a format term nor an event: the raw config
    a.config = tonumber64("0x" .. t.name:sub(2))
  elseif t.value == true and events.cache.decode(t.name) then
    -- a generic cache event on this PMU
    a.type = 3
    a.config = events.cache.decode(t.name)
    if p.name ~= "cpu" then a.config = a.config | p.type << 32 end
  elseif hardware_terms[t.name] and t.value == true then
    -- a generic hardware event on this PMU (hybrid systems)
    a.type = 0
    a.config = hardware_terms[t.name]
    if p.name ~= "cpu" then a.config = a.config | p.type << 32 end
    a.hw_term = true
  else
    unknown_pmu_term(P, p, t, formats, events_list)
  end
end

-- Packs the terms of PMU `p` into attr `a`: event aliases are expanded
-- first, so the user's terms override theirs.
local function apply_pmu_terms(P, a, p, terms)
  local formats = sorted_keys(p.format_bits)
  local events_list = sorted_keys(p.events)
  local expanded, user = expand_aliases(a, p, terms, events_list)
  local given = {}
  for _, t in ipairs(user) do given[t.name] = true end

  local format_terms = {}
  for _, list in ipairs { expanded, user } do
    for _, t in ipairs(list) do
      if not p.format_bits[t.name] then
        apply_other_term(P, a, p, t, formats, events_list)
      elseif t.value == "?" then
        if not given[t.name] then
          fail(P.s, t.pos, ("event '%s' needs a value for '%s' (%s/%s,%s=N/)"):format(
            t.alias, t.name, p.name, t.alias, t.name))
        end
      else
        format_terms[#format_terms + 1] = t
      end
    end
  end
  for _, t in ipairs(format_terms) do
    local f = p.format_bits[t.name]
    local v = t.value == true and 1 or t.value
    if math.type(v) ~= "integer" then
      fail(P.s, t.vpos or t.pos, ("term '%s' needs a number, not '%s'"):format(t.name, v))
    end
    local word, err = pmus.pack(f, a[f.field] or 0, v)
    if not word then fail(P.s, t.vpos or t.pos, err) end
    a[f.field] = word
  end
end

local function pmu_event(P, p, terms)
  local a = new_attr(p.type, 0)
  apply_pmu_terms(P, a, p, terms)
  return a
end

M.common_terms, M.common_list = common_terms, common_list
M.parse, M.apply_common, M.apply_plain = parse_terms, apply_common, apply_plain_terms
M.apply_pmu, M.pmu_event = apply_pmu_terms, pmu_event

return M
