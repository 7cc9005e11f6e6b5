-- busted output handler: the usual terminal report, then a last line
-- "N passed, N failed" (errors count as failures) for CI to read.
return function(options)
  local busted = require "busted"
  local inner = require "busted.outputHandlers.utfTerminal"(options)
  local subscribe = inner.subscribe
  function inner:subscribe(opts)
    subscribe(self, opts)
    busted.subscribe({ "suite", "end" }, function()
      if inner.pendingsCount > 0 then
        io.write(("%d pending (skipped, with their reasons above)\n"):format(inner.pendingsCount))
      end
      io.write(("%d passed, %d failed\n"):format(inner.successesCount,
        inner.failuresCount + inner.errorsCount))
      io.flush()
      return nil, true
    end)
  end
  return inner
end
