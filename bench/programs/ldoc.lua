-- ldoc (installed: /usr/bin/ldoc) building this project's reference from
-- config.ld into a temporary directory: a real program nobody here wrote
-- (Penlight, string patterns, many small functions, file output).
-- ldoc is a script: it reads the global `arg`, prints, and may os.exit;
-- those are swapped for the run.
-- luacheck: globals arg print os
return function()
  local out = os.tmpname()
  os.remove(out)
  local saved_arg, saved_exit, saved_print = arg, os.exit, print
  arg = { [0] = "/usr/bin/ldoc", "-q", "-d", out, "." }
  -- ldoc's modules stay loaded between runs otherwise: each run loads them
  local loaded = {}
  for k in pairs(package.loaded) do loaded[k] = true end
  os.exit = function(code) error(("ldoc exited with %s"):format(tostring(code)), 0) end
  print = function() end
  local ok, err = pcall(dofile, "/usr/bin/ldoc")
  arg, os.exit, print = saved_arg, saved_exit, saved_print
  for k in pairs(package.loaded) do if not loaded[k] then package.loaded[k] = nil end end
  os.execute("rm -rf " .. out)
  assert(ok, err)
  return 0
end
