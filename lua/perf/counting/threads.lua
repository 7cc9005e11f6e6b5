-- Layer lua/perf/counting/: groups, perf.measure, perf.stat, per-CPU sets and their output;
-- it requires perf.core and the layers below it (util, event) only.

-- perf.threads: a command's counts per thread, for perf.stat's per_thread.
--
-- Counters that inherit to a command's tasks add every task's count into
-- the one read at the end. With inherit_stat, the kernel also writes a
-- PERF_RECORD_READ into the counter's ring when an inherited task exits,
-- carrying that task's own count, pid and tid (kernel/events/core.c,
-- sync_child_event); rings need one counter per CPU (an inherited counter
-- on cpu -1 cannot be mapped). COMM and FORK records name the tasks. The
-- command's first task is no inherited one: its share is the total less
-- every other task's.
--
-- One more counter, which does not inherit, is attached to the command:
-- with it the kernel no longer treats the tasks' counter contexts as clones
-- of one another (perf_event_init_context: inherited_all), and so never
-- swaps two tasks' contexts at a context switch, which would send a task's
-- READ record out under another task or lose it.
local core = require "perf.core"

local M = {}

local PAGES = 16             -- per ring: about 1000 READ records between drains

--- threads.prepare(units): every counter writes its count at each task's
-- exit; the first also tells task names and forks.
function M.prepare(units)
  for u, list in ipairs(units) do
    for i, e in ipairs(list) do
      e.attr.inherit_stat = true
      if u == 1 and i == 1 then
        e.attr.comm, e.attr.comm_exec, e.attr.task = true, true, true
      end
    end
  end
end

local Tracker = {}
Tracker.__index = Tracker

--- threads.track(opened, pid) -> tracker | nil, message, errno
-- opened[u] is unit u's groups (one per CPU, from perf.stat), nil where
-- the unit could not open; pid the command's. Maps a ring on every counter
-- and attaches the non-inheriting one.
function M.track(opened, n, pid)
  local t = setmetatable({ rings = {}, index = {}, counts = {}, comm = {}, order = {}, lost = 0 }, Tracker)
  for u = 1, n do
    for _, g in ipairs(opened[u] or {}) do
      for i = 1, #g do
        local rb, msg, errno = g[i]:mmap(PAGES)
        if not rb then
          t:close()
          return nil, msg, errno
        end
        t.rings[#t.rings + 1] = rb
        t.index[g[i]:id()] = { u, i }
      end
    end
  end
  local ev, msg, errno = core.open({ type = 1, config = 9, disabled = true, inherit = false },
    { pid = pid }, "dummy")                                  -- PERF_COUNT_SW_DUMMY
  if not ev then
    t:close()
    return nil, msg, errno
  end
  t.dummy = ev
  return t
end

local function seen(t, tid)
  if not t.counts[tid] then
    t.counts[tid] = {}
    t.order[#t.order + 1] = tid
  end
  return t.counts[tid]
end

-- The value and id of a READ record's values, whether read as a group of
-- one or alone.
local function value_id(read)
  local first = read[1]
  if first then return first.value, first.id end
  return read.value, read.id
end

--- tracker:drain(): takes the records the rings hold now
function Tracker:drain()
  for _, rb in ipairs(self.rings) do
    for rec in rb:records() do
      local kind = rec.type
      if kind == "read" then
        local value, id = value_id(rec.read)
        local where = self.index[id]
        if where then
          local per = seen(self, rec.tid)
          local key = where[1] .. ":" .. where[2]
          local c = per[key] or { 0, 0, 0 }
          c[1], c[2], c[3] = c[1] + value, c[2] + (rec.read.time_enabled or 0),
            c[3] + (rec.read.time_running or 0)
          per[key] = c
          self.pid_of = self.pid_of or {}
          self.pid_of[rec.tid] = rec.pid
        end
      elseif kind == "comm" then
        self.comm[rec.tid] = rec.comm
      elseif kind == "fork" and rec.tid ~= rec.ptid then
        self.comm[rec.tid] = self.comm[rec.tid] or self.comm[rec.ptid]
      end
    end
  end
end

--- tracker:rows(r, units, pid, name) -> r.per, rows per thread
-- r is perf.stat's results (r.events in unit order); the command's first
-- task `pid`, named `name` until its exec is seen, gets what the others'
-- records leave of the totals.
function Tracker:rows(r, units, pid, name)
  self:drain()
  for _, rb in ipairs(self.rings) do self.lost = self.lost + (rb:lost()) end
  local slots, n = {}, 0                      -- r.events[n] is unit u's member i
  for u, list in ipairs(units) do
    for i = 1, #list do
      n = n + 1
      slots[n] = u .. ":" .. i
    end
  end
  local tids = {}
  for _, tid in ipairs(self.order) do if tid ~= pid then tids[#tids + 1] = tid end end
  table.sort(tids)
  table.insert(tids, 1, pid)
  self.comm[pid] = self.comm[pid] or name
  local per = { kind = "thread" }
  for k, tid in ipairs(tids) do
    local row = { tid = tid, pid = (self.pid_of or {})[tid] or pid, comm = self.comm[tid] or "?", events = {} }
    row.key = ("%s-%d"):format(row.comm, tid)
    for m, total in ipairs(r.events) do
      local e = { name = total.name, unit = total.unit, scale = total.scale, type = total.type,
        config = total.config, group = total.group, supported = total.supported }
      if total.supported then
        local c
        if tid == pid then                      -- the total less the others'
          c = { total.raw, 0, total.time_running }
          for _, other in ipairs(tids) do
            local oc = other ~= pid and self.counts[other][slots[m]]
            if oc then c[1], c[2], c[3] = c[1] - oc[1], c[2] - oc[2], c[3] - oc[3] end
          end
        else
          c = self.counts[tid][slots[m]] or { 0, 0, 0 }
        end
        -- unscaled, as perf.stat counts a task on each CPU (each CPU's
        -- counter is enabled all the time the task runs, anywhere)
        e.raw, e.value, e.fraction = c[1], c[1], 1
        e.time_running = math.max(c[3], 0)
        e.time_enabled = e.time_running
      else
        e.value = false
      end
      row.events[m], row[m] = e, e.value
      if row[e.name] == nil then row[e.name] = e.value end
    end
    per[k] = row
  end
  r.per = per
  return per
end

--- tracker:close(): unmaps the rings, closes the extra counter
function Tracker:close()
  for i = #self.rings, 1, -1 do self.rings[i]:close() end
  self.rings = {}
  if self.dummy then self.dummy:close() self.dummy = nil end
end

return M
