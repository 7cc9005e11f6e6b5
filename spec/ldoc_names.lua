-- An LDoc output filter (run by LDoc's own interpreter, so plain Lua 5.1):
-- one line per documented module and item, read by spec/docs_spec.lua:
--   module <TAB> item name <TAB> kind <TAB> flags <TAB> undocumented params
-- flags: "s" a summary, "u" an example (@usage or a code block), "r" results (@return).
local M = {}

local function flags(t)
  local f = ""
  if t.summary and t.summary:match("%S") then f = f .. "s" end
  -- an example: @usage, or a code block (indented) in the description
  if (t.usage and #t.usage > 0) or (t.description or ""):match("\n    +%S") then f = f .. "u" end
  if t.ret and #t.ret > 0 then f = f .. "r" end
  return f
end

function M.names(docs)
  for _, m in ipairs(docs) do
    print(table.concat({ m.name, "", m.type, flags(m), "" }, "\t"))
    for _, item in ipairs(m.items) do
      local bare = {}
      for _, p in ipairs(item.params or {}) do
        local d = item.params.map and item.params.map[p]
        if not d or not tostring(d):match("%S") then bare[#bare + 1] = p end
      end
      print(table.concat({ m.name, item.name, item.type, flags(item), table.concat(bare, " ") }, "\t"))
    end
  end
end

return M
