-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

-- perf.options: the option tables of helpers such as perf.watch and
-- perf.uprobe hold target fields (pid, cpu, group, cgroup, flags), the
-- helper's own keys, and attr fields that refine the event.
local M = {}

-- The keys of perf.core.open's target, as a set.
M.TARGET_KEYS = {}
for _, k in ipairs(require("perf.core").target_keys) do M.TARGET_KEYS[k] = true end

--- split(opts, attr, own) -> target | nil
-- Copies the attr fields of `opts` into `attr` (a sample_freq replaces the
-- helper's default sample_period), skips the keys in the set `own`, and
-- returns the target fields as a table, or nil when there are none.
function M.split(opts, attr, own)
  local target
  for k, v in pairs(opts) do
    if M.TARGET_KEYS[k] then
      target = target or {}
      target[k] = v
    elseif not own[k] then
      attr[k] = v
      if k == "sample_freq" then attr.sample_period = nil end
    end
  end
  return target
end

return M
