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

local events = require "perf.events"
local pmus = require "perf.pmu"
local tracepoint = require "perf.tracepoint"
local nearest = require "perf.nearest"

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
M.tonumber64 = tonumber64

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
M.common_terms = common_list

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

---------------------------------------------------------------------------
-- Building an attr: a table of fields plus the sample_type set

local function new_attr(type_, config)
  return { type = type_, config = config, st = {} }
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

local function machine()
  local f = io.open("/proc/sys/kernel/arch")
  local m = f and f:read("l")
  if f then f:close() end
  if not m then
    local p = io.popen("uname -m 2>/dev/null")
    m = p and p:read("l")
    if p then p:close() end
  end
  return m or "unknown"
end

local function apply_callgraph(P, a, t)
  local v = str_term(P, t)
  if v == "fp" then
    a.st.callchain = true
  elseif v == "dwarf" then
    if machine() ~= "x86_64" then
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

-- Packs the terms of PMU `p` into attr `a`. `alias_name` is set when the
-- terms came from an event alias (for messages).
local function apply_pmu_terms(P, a, p, terms)
  local formats = {}
  for name in pairs(p.format_bits) do formats[#formats + 1] = name end
  table.sort(formats)
  local events_list = {}
  for name in pairs(p.events) do events_list[#events_list + 1] = name end
  table.sort(events_list)

  -- Expand event aliases first: their terms come before the user's, so
  -- the user's terms override them.
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
  local given = {}
  for _, t in ipairs(user) do given[t.name] = true end

  local format_terms = {}
  for _, list in ipairs { expanded, user } do
    for _, t in ipairs(list) do
      if p.format_bits[t.name] then
        if t.value == "?" then
          if not given[t.name] then
            fail(P.s, t.pos, ("event '%s' needs a value for '%s' (%s/%s,%s=N/)"):format(
              t.alias, t.name, p.name, t.alias, t.name))
          end
        else
          format_terms[#format_terms + 1] = t
        end
      elseif apply_common(P, a, t) then
        -- done
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

---------------------------------------------------------------------------
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
  local low = name:lower()
  if events.hardware[low] then return new_attr(0, events.hardware[low]) end
  if events.software[low] then return new_attr(1, events.software[low]) end
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

-- NAME/terms/: a PMU, or a symbolic event refined by terms.
local function resolve_with_terms(P, name, pos, terms)
  local p = pmus.find(name)
  if p then return pmu_event(P, p, terms) end
  local a, err, off = symbolic(name)
  if err then fail(P.s, pos + off - 1, err) end
  if a then
    apply_plain_terms(P, a, terms)
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
    for _, t in ipairs(terms) do all[#all + 1] = t end
    return pmu_event(P, p, all)
  end
  fail(P.s, pos, ("no PMU or event '%s'%s"):format(name,
    nearest.hint(name, (function()
      local c = pmus.names()
      for _, n in ipairs(all_symbolic_names()) do c[#c + 1] = n end
      return c
    end)())),
    "PMUs here: " .. table.concat(pmus.names(), ", "))
end

---------------------------------------------------------------------------
-- Tracepoints

local function resolve_tracepoint(P, sys, ev, pos)
  if sys:find("[%*%?%[]") or ev:find("[%*%?%[]") then
    fail(P.s, pos, ("'%s:%s' is a pattern; perf.parse makes one event"):format(sys, ev),
      ("perf.list(%q) lists the tracepoints it matches"):format(sys .. ":" .. ev))
  end
  local id, err, code = tracepoint.id(sys, ev)
  if not id then
    if code == 2 and tracepoint.path() then
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

---------------------------------------------------------------------------
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

---------------------------------------------------------------------------
-- Modifiers

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
local function max_precise(P, a, pos)
  local key = ("%d:%d:%d"):format(a.type, a.config or 0, a.config1 or a.bp_addr or 0)
  local v = max_precise_cache[key]
  if v == nil then
    local ok, core = pcall(require, "perf.core")
    if not ok then fail(P.s, pos, "modifier 'P' probes the kernel and needs perf.core") end
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
  local exclude, exclude_GH = eu | ek | eh, eG | eH
  if mods.u then
    if exclude == 0 then exclude, eu, ek, eh = 1, 1, 1, 1 end
    eu = 0
  end
  if mods.k then
    if exclude == 0 then exclude, eu, ek, eh = 1, 1, 1, 1 end
    ek = 0
  end
  if mods.h then
    if exclude == 0 then exclude, eu, ek, eh = 1, 1, 1, 1 end
    eh = 0
  end
  if mods.G then
    if exclude_GH == 0 then exclude_GH, eG, eH = 1, 1, 1 end
    eG = 0
  end
  if mods.H then
    if exclude_GH == 0 then exclude_GH, eG, eH = 1, 1, 1 end
    eH = 0
  end
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
  if mods.P then a.precise_ip = max_precise(P, a, mods.pos) end
  if mods.I then a.exclude_idle = true end
  if mods.S then a.st.read = true end
  if mods.D and leader then a.pinned = true end
  if mods.e and leader then a.exclusive = true end
end

---------------------------------------------------------------------------
-- Events and groups

local function skip_space(P)
  P.i = P.s:match("^%s*()", P.i)
end

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

---------------------------------------------------------------------------
-- Entry points

-- perf.parse(str): an attr table, or for "{a,b}:mods" a list of attr
-- tables (with `group = true` and `name`). Raises on malformed input.
function M.parse(str, level)
  if type(str) ~= "string" then
    error(("perf.parse: expected an event string, got %s"):format(type(str)), (level or 1) + 1)
  end
  -- not a tail call: the error level counts this frame
  local r = guarded((level or 1) + 1, false, parse_string, str)
  return r
end

-- The display name of an attr that came without one.
function M.name_of(a)
  local t, c = a.type, a.config or 0
  if t == 0 then return events.hardware_names[c] or ("hardware/config=0x%x/"):format(c) end
  if t == 1 then return events.software_names[c] or ("software/config=0x%x/"):format(c) end
  if t == 2 then return tracepoint.name_of(c) or ("tracepoint/config=0x%x/"):format(c) end
  if t == 3 then return events.cache.name_of(c) or ("hw_cache/config=0x%x/"):format(c) end
  if t == 4 then return ("r%x"):format(c) end
  if t == 5 then
    local addr = a.bp_addr or a.config1 or 0
    local bt = a.bp_type
    if math.type(bt) == "integer" then
      bt = (bt & 1 ~= 0 and "r" or "") .. (bt & 2 ~= 0 and "w" or "") .. (bt & 4 ~= 0 and "x" or "")
    end
    return ("mem:0x%x/%d:%s"):format(addr, a.bp_len or a.config2 or 0, bt or "rw")
  end
  local p = math.type(t) == "integer" and pmus.by_type(t)
  if p then return ("%s/config=0x%x/"):format(p.name, c) end
  return ("type %s/config=0x%x/"):format(tostring(t), c)
end

local generic_types = {
  hardware = 0, software = 1, tracepoint = 2, hw_cache = 3, raw = 4, breakpoint = 5,
}

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
  elseif t == 0 or t == 1 then
    local tbl = t == 0 and events.hardware or events.software
    local v = tbl[name:lower()]
    if not v then
      local cands = {}
      for k in pairs(tbl) do cands[#cands + 1] = k end
      table.sort(cands)
      misuse(("no %s event '%s'%s"):format(t == 0 and "hardware" or "software", name,
        nearest.hint(name, cands)))
    end
    return { config = v }
  elseif t == 2 then
    local r = as_event(name)
    if r.type ~= 2 then misuse(("'%s' is not a tracepoint (write \"subsystem:event\")"):format(name)) end
    return { config = r.config }
  elseif t == 3 then
    local v, err = events.cache.decode(name)
    if not v then misuse(("bad cache event '%s': %s"):format(name, err)) end
    return { config = v }
  elseif t == 4 then
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
    if a.name == nil then a.name = M.name_of(a) end
    return a
  end)
  return r, msg, errno
end

return M
