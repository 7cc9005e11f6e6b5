-- Layer lua/perf/recording/: perf.record and perf.data files, read and written; it requires
-- perf.core and the layers below it (util, event, counting, profiling) only.

--- Documented on the perf page.
-- @submodule perf

-- perf.record: sample a command and its children, as perf record does.
--
--   local r = assert(perf.record({ "ls", "-l" }, "cpu-clock", { output = "ls.data" }))
--   print(r)        --> perf.record: 12 samples of cpu-clock (0 lost), exit 0, 0.004 s, ls.data
--
-- The command is forked and waits until the events are open: one event
-- per CPU for each event asked for (inherit, enable_on_exec), each CPU
-- with its own ring, as perf record without -a. The first event also
-- follows the tasks (comm, mmap2, fork and exit records); what ran before
-- the exec (the forked child) is written as comm and mmap2 records taken
-- from /proc, and the kernel's text as perf's "[kernel.kallsyms]_text"
-- map, so perf report names every sample. With `output`, the records go
-- to a perf.data file (perf.data_writer); without, they are only counted.
local core = require "perf.core"
local parse = require "perf.event.parse"
local cpus = require "perf.counting.cpus"
local writer = require "perf.recording.data_writer"
local nearest = require "perf.util.nearest"
local base = require "perf.event.base"
local naming = require "perf.event.naming"
local profile = require "perf.profiling.profile"

local M = {}

local OPTS = { stdin = true, stdout = true, stderr = true, inherit = true,
               all_cpus = true, cpus = true, freq = true, period = true,
               sample_type = true, callchain = true, output = true, pages = true,
               on_progress = true, cmdline = true }
local DEFAULT_FREQ = 999
local BASE_SAMPLE_TYPE = { "identifier", "ip", "tid", "time", "cpu", "period" }

local Result = {}
Result.__index = Result
Result.__name = "perf.record"
function Result:__tostring()
  local status = self.signal and ("killed by %s"):format(self.signal) or ("exit %s"):format(tostring(self.status))
  if self.interrupted then status = status .. ", interrupted by " .. self.interrupted end
  return ("perf.record: %d samples of %s (%d lost), %s, %.3f s%s"):format(
    self.samples, table.concat(self.events, ", "), self.lost, status,
    (self.elapsed or 0) / 1e9, self.output and (", " .. self.output) or "")
end

local function check_opts(opts)
  nearest.check_keys(opts, OPTS, "perf.record: unknown option", 3)
  for _, k in ipairs { "freq", "period" } do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
      error(("perf.record: %s must be a positive integer, got %s"):format(k, tostring(v)), 3)
    end
  end
  if opts.freq and opts.period then error("perf.record: give freq or period, not both", 3) end
  if opts.on_progress ~= nil and type(opts.on_progress) ~= "function" then
    error(("perf.record: on_progress must be a function, got %s"):format(type(opts.on_progress)), 3)
  end
  if opts.cmdline ~= nil then
    local ok = type(opts.cmdline) == "table"
    for _, a in ipairs(ok and opts.cmdline or {}) do ok = ok and type(a) == "string" end
    if not ok then error("perf.record: cmdline must be a list of strings", 3) end
  end
end

local function event_list(events)
  if type(events) == "string" then
    local list = {}
    for e in events:gmatch("[^,]+") do list[#list + 1] = e end
    return list
  end
  if type(events) ~= "table" or #events == 0 then
    error("perf.record: events must be a string or a list of events", 3)
  end
  return events
end

-- The spec perf.open takes for event e, sampling as perf record would.
local function spec_of(e, opts, first)
  local attr = type(e) == "string" and parse.parse(e) or e
  local spec = {}
  for k, v in pairs(attr) do spec[k] = v end
  local sample_type = {}
  for _, s in ipairs(BASE_SAMPLE_TYPE) do sample_type[#sample_type + 1] = s end
  if opts.callchain then sample_type[#sample_type + 1] = "callchain" end
  if attr.type == core.PERF_TYPE_TRACEPOINT or attr.type == "tracepoint" then  -- the fields, as perf record
    sample_type[#sample_type + 1] = "raw"
  end
  for _, s in ipairs(opts.sample_type or {}) do sample_type[#sample_type + 1] = s end
  spec.sample_type = sample_type
  if opts.period then
    spec.sample_period, spec.freq = opts.period, false
  elseif opts.freq or profile.by_frequency(attr) then
    spec.sample_freq, spec.freq = opts.freq or DEFAULT_FREQ, true
  else
    spec.sample_period, spec.freq = 1, false     -- every hit, as perf record
  end
  spec.sample_id_all = true
  spec.inherit = opts.inherit ~= false and not opts.all_cpus
  spec.enable_on_exec = not opts.all_cpus
  spec.disabled = true
  if first then
    spec.mmap, spec.mmap2, spec.comm, spec.comm_exec, spec.task = true, true, true, true, true
  end
  return spec, type(e) == "string" and e or naming.name_of(attr) or "event"
end

-- The ring size perf record takes by default: perf_event_mlock_kb (the
-- kernel's per-CPU allowance of locked ring pages for each user) less the
-- control page, rounded down to a power of 2: 128 data pages for the
-- default 516 kB; 128 when the sysctl cannot be read.
function M.default_pages()
  local f = io.open("/proc/sys/kernel/perf_event_mlock_kb")
  local kb = f and math.tointeger(f:read("n"))
  if f then f:close() end
  local pages = kb and (kb - 4) // 4 or 128
  local p = 1
  while p * 2 <= pages do p = p * 2 end
  return p
end

local function close_all(sets)
  for i = #sets, 1, -1 do sets[i]:close() end
end

-- all the process ids in /proc
local function processes()
  local list = {}
  for _, name in ipairs(core.listdir("/proc") or {}) do
    if name:match("^%d+$") then list[#list + 1] = math.tointeger(tonumber(name)) end
  end
  table.sort(list)
  return list
end

-- The events of `list` opened on the CPUs of `target`, each set with its
-- rings mapped: the recording's state (sets, their names, every event as
-- `all` with the rings as all.rings, the rings, the counts), or nil,
-- message, errno when one cannot open.
local function open_sets(list, opts, target)
  local sets, names, all, rings = {}, {}, { rings = {} }, {}
  for i, e in ipairs(list) do
    local spec, name = spec_of(e, opts, i == 1)
    local set, msg, errno = cpus.open(spec, target)
    -- refused for sampling the kernel too (perf_event_paranoid): user
    -- space only, as perf record retries
    local user = not set and not opts.all_cpus and base.user_only(spec, errno)
    local uset = user and cpus.open(user, target)
    if uset then set, name = uset, base.user_name(name) end
    if not set then close_all(sets) return nil, "perf.record: " .. msg, errno end
    sets[#sets + 1], names[#names + 1] = set, name
    local ok
    ok, msg, errno = set:mmap(opts.pages or M.default_pages())
    if not ok then close_all(sets) return nil, "perf.record: " .. msg, errno end
    for k = 1, #set do all[#all + 1] = set[k] end
    for _, rb in ipairs(set.rings) do rings[#rings + 1] = rb end
  end
  all.rings = rings
  return { sets = sets, names = names, all = all, rings = rings, samples = 0, lost = 0 }
end

-- A recording that cannot go on: its file and events closed.
local function fail(rec, m, e)
  if rec.w then rec.w:close() end
  close_all(rec.sets)
  return nil, "perf.record: " .. m, e
end

-- The perf.data file of opts.output (rec.w), with what ran before the
-- events opened: the kernel's map, and the command (every process with
-- all_cpus).
local function open_output(rec, opts, pid)
  local w, msg, errno = writer.writer(opts.output, rec.all)
  if not w then close_all(rec.sets) return nil, msg, errno end
  rec.w = w
  local ok = w:synthesize_kernel()
  if ok and opts.all_cpus then
    for _, p in ipairs(processes()) do w:synthesize(p) end
  elseif ok then
    ok, msg, errno = w:synthesize(pid)
  end
  if not ok then return fail(rec, msg, errno) end
  return true
end

-- The rings drained: into the file, or counted and consumed without one.
local function drain(rec)
  if rec.w then return rec.w:write(rec.all) end
  for _, rb in ipairs(rec.rings) do
    local _, s, l = core.ring_write(rb, nil)   -- counted and consumed
    rec.samples, rec.lost = rec.samples + s, rec.lost + l
  end
  return true
end

-- what was recorded so far, for opts.on_progress (after each drain)
local function progress(rec, opts)
  if not opts.on_progress then return end
  local w = rec.w
  if w then
    opts.on_progress { samples = w.samples, lost = w.lost,
                       bytes = w.data_offset + w.data_size, output = opts.output }
  else
    opts.on_progress { samples = rec.samples, lost = rec.lost }
  end
end

-- The rings are drained whenever one is past its watermark, at least
-- every 200 ms, until the command exits. A signal stops the recording
-- and what was recorded is kept (rec.interrupted names the first): the
-- command, which a ^C reached too, has 100 ms to end, then it gets
-- SIGTERM, as perf record sends it (and SIGKILL at a second signal).
local GRACE = 100000000
local function record_until_exit(rec, opts, child, waiter)
  local term_at, termed
  while true do
    local timeout = (term_at and not termed) and math.max(0, (term_at - child:elapsed()) // 1000000) or 200
    local what, signo, werrno = waiter:wait(rec.rings, timeout)
    if what == nil then return fail(rec, signo, werrno) end
    if what == "signal" then
      if rec.interrupted then waiter:kill(9) end
      rec.interrupted = rec.interrupted or signo
      term_at = term_at or child:elapsed() + GRACE
      if child:wait(0) then what = "exited" end   -- signals first, an exit still ends
    end
    local ok, msg, errno = drain(rec)
    if not ok then return fail(rec, msg, errno) end
    progress(rec, opts)
    if what == "exited" then return true end
    if term_at and not termed and child:elapsed() >= term_at then
      waiter:kill(15)
      termed = true
    end
  end
end

-- signals that came as the command ended are taken before the wait:
-- it ignores SIGINT until the child is reaped, which discards a pending one
local function take_pending(rec, waiter)
  while true do
    local what, signo = waiter:wait({}, 0)
    if what ~= "signal" then return end
    rec.interrupted = rec.interrupted or signo
  end
end

-- The result of a recording whose command was reaped (res: its status),
-- the file finished and the events closed.
local function finish(rec, argv, opts, res, pid, waiter)
  local r = setmetatable({ events = rec.names, pid = pid }, Result)
  for k, v in pairs(res) do r[k] = v end
  local w = rec.w
  local samples, lost = rec.samples, rec.lost
  -- the kernel's count of what it dropped (PERF_FORMAT_LOST, Linux 6.0),
  -- which PERF_RECORD_LOST may not have told yet; in the file as perf
  -- record writes it: one PERF_RECORD_LOST_SAMPLES per event
  if w then samples, lost = w.samples, w.lost end
  local dropped, known = 0, false
  local ok, msg, errno
  for _, rb in ipairs(rec.rings) do
    local _, n = rb:lost()
    if n then known, dropped = true, dropped + n end
    if w and n and n > 0 then
      ok, msg, errno = w:lost_samples(rb:event():id(), n)
      if not ok then return fail(rec, msg, errno) end
    end
  end
  if known then lost = math.max(lost, dropped) end
  if w then
    local cmdline = opts.cmdline
    if not cmdline then
      cmdline = { "perf-lua", "record" }
      for _, a in ipairs(argv) do cmdline[#cmdline + 1] = a end
    end
    ok, msg, errno = w:close(cmdline)
    rec.w = nil
    if not ok then return fail(rec, msg, errno) end
    r.output = opts.output
  end
  close_all(rec.sets)
  r.samples, r.lost = samples, lost
  -- a signal that came once the command had ended stops nothing more,
  -- but it is told, and taken before the signals are unblocked
  take_pending(rec, waiter)
  waiter:close()
  if rec.interrupted then
    r.interrupted, r.interrupted_signo = core.signal_name(rec.interrupted), rec.interrupted
  end
  return r
end

--- Runs a command and samples it and its children on every CPU, as
-- `perf record`; with `output`, writes a perf.data file perf reads.
-- @tparam {string,...} argv the command (argv[1] looked up in PATH)
-- @param events an event string ("cpu-clock", "a,b"), or a list of events
-- (strings or attr tables)
-- @tparam[opt] table opts `freq` or `period` (default: 999 Hz for clocks
-- and hardware events, every hit for tracepoints and the other software
-- events), `callchain` (boolean), `sample_type` (extra fields), `output`
-- (a perf.data path), `inherit` (default true), `all_cpus`, `cpus`,
-- `pages` (ring pages per CPU, default as perf record: perf_event_mlock_kb's worth, 128), `stdin`/`stdout`/`stderr`,
-- `on_progress` (called with `{ samples =, lost =, bytes =, output = }`
-- each time the rings were read while the command runs, at least every
-- 200 ms; `bytes` is the file's size so far, with `output`), `cmdline`
-- (the header's cmdline, a list of strings, as perf keeps its own command
-- line there; default `{ "perf-lua", "record", argv... }`)
-- @treturn table `samples`, `lost`, `status` (exit code or signal name),
-- `signal`, `elapsed` (ns), `output`, `events`, `pid` (the command's);
-- `interrupted` (and `interrupted_signo`) names the SIGINT or SIGTERM that
-- stopped the recording: the command was then sent SIGTERM (SIGKILL at a
-- second signal) and what was recorded is kept; prints in one line
-- @return[2] nil, message, errno when the command or an event cannot start
-- @raise misuse: unknown options (with a did-you-mean), freq with period
-- @usage
-- local r = assert(perf.record({ "ls", "/" }, "syscalls:sys_enter_openat",
--   { stdout = "/dev/null", output = "/tmp/ls.data" }))
-- print(r)   --> perf.record: 34 samples of syscalls:sys_enter_openat (0 lost), exit 0, ...
-- @function record
function M.record(argv, events, opts)
  if type(argv) ~= "table" or type(argv[1]) ~= "string" then
    error("perf.record: argv must be a list of strings (the command)", 2)
  end
  opts = opts or {}
  check_opts(opts)
  local list = event_list(events)
  local child, msg, errno = core.spawn(argv, { stdin = opts.stdin, stdout = opts.stdout, stderr = opts.stderr })
  if not child then return nil, "perf.record: " .. msg, errno end
  local child_ <close> = child
  local pid = child:pid()
  local target = { pid = opts.all_cpus and -1 or pid }
  if opts.cpus then
    target.cpus = type(opts.cpus) == "string" and cpus.parse_list(opts.cpus) or opts.cpus
  end
  local rec, ok
  rec, msg, errno = open_sets(list, opts, target)
  if not rec then return nil, msg, errno end
  if opts.output then
    ok, msg, errno = open_output(rec, opts, pid)
    if not ok then return nil, msg, errno end
  end
  -- ^C and SIGTERM are taken from here on: they stop the recording
  local waiter
  waiter, msg, errno = core.waiter(pid)
  if not waiter then return fail(rec, msg, errno) end
  local waiter_ <close> = waiter
  if opts.all_cpus then
    for _, set in ipairs(rec.sets) do set:enable() end
  end
  ok, msg, errno = child:start()
  if not ok then return fail(rec, msg, errno) end
  ok, msg, errno = record_until_exit(rec, opts, child, waiter)
  if not ok then return nil, msg, errno end
  if opts.all_cpus then
    for _, set in ipairs(rec.sets) do set:disable() end
  end
  take_pending(rec, waiter)
  local res
  res, msg, errno = child:wait()
  if not res then return fail(rec, msg, errno) end
  ok, msg, errno = drain(rec)
  if not ok then return fail(rec, msg, errno) end
  return finish(rec, argv, opts, res, pid, waiter)
end

return M
