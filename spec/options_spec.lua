-- perf.options: a helper's option table split into perf.open's target and
-- the attr fields; the target keys are the C core's own.
local options = require "perf.util.options"
local core = require "perf.core"

describe("perf.options", function()
  it("knows the target keys perf.core.open accepts, and no other", function()
    local n = 0
    for k in pairs(options.TARGET_KEYS) do
      n = n + 1
      -- a known key passes the key check (a bad value may fail later, not
      -- as an unknown field)
      local ok, ev = pcall(core.open, { type = "software", config = 1 }, { [k] = {} })
      if ok then
        if ev then ev:close() end
      else
        assert.no.matches("unknown target field", ev)
      end
    end
    assert.equal(#core.target_keys, n)
    local ok, err = pcall(core.open, { type = "software", config = 1 }, { pids = 0 })
    assert.is_false(ok)
    assert.matches("unknown target field 'pids' %(did you mean 'pid'%?%)", err)
    -- the contract's target fields
    for _, k in ipairs { "pid", "cpu", "group", "cgroup", "flags" } do
      assert.is_true(options.TARGET_KEYS[k], k)
    end
  end)

  it("splits target fields from attr fields, skipping the helper's own", function()
    local attr = { type = "breakpoint", sample_period = 1 }
    local target = options.split({ pid = 0, cpu = -1, mode = "w", len = 4,
      exclude_kernel = true, wakeup_events = 2 }, attr, { mode = true, len = true })
    assert.same({ pid = 0, cpu = -1 }, target)
    assert.same({ type = "breakpoint", sample_period = 1, exclude_kernel = true,
      wakeup_events = 2 }, attr)
  end)

  it("gives no target when the options name none", function()
    local attr = {}
    assert.is_nil(options.split({ disabled = false }, attr, {}))
    assert.same({ disabled = false }, attr)
    assert.is_nil(options.split({}, attr, {}))
  end)

  it("lets a sample_freq replace the helper's default sample_period", function()
    local attr = { sample_period = 1 }
    options.split({ sample_freq = 99 }, attr, {})
    assert.same({ sample_freq = 99 }, attr)
    -- a sample_period given by the user stays
    attr = { sample_period = 1 }
    options.split({ sample_period = 7 }, attr, {})
    assert.same({ sample_period = 7 }, attr)
  end)
end)
