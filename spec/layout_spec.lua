-- topics/layout.md is the floor map of the tree: every file of the mapped
-- places has its line there, and every path the map names exists.
--
-- Mapped: every file under csrc/, lua/, bin/, bench/, fuzz/, examples/,
-- .ci/ and rockspec/, the Makefile, and in spec/ everything but the
-- spec/*_spec.lua files (the map gives those one line, a glob). Generated
-- files are not mapped: what .gitignore names (build*/, perf/, docs/,
-- *.so, the fuzzers' corpora). The tree's files come from git (tracked,
-- and new ones git does not ignore) or, outside a git checkout, from
-- find(1) with .gitignore's patterns applied.
--
-- A file's line is a list item that starts with its path and a colon:
-- "- `csrc/attr.c`: what it holds". One naming a directory ("/" at the
-- end) under spec/fixtures/ maps every file below it (the files of a fake
-- sysfs tree are data). A path mentioned anywhere else maps nothing, but
-- it must exist too: a backquoted token without spaces that is the
-- Makefile, a top-level dotfile (`.busted`), or starts with one of the
-- directories above or topics/ or doc/. One with "*" is a glob that must
-- match a file; one with "<" is a placeholder, not checked.

local MAP = "topics/layout.md"

local MAPPED_DIRS = { "csrc/", "lua/", "bin/", "bench/", "fuzz/", "examples/", ".ci/", "rockspec/", "spec/" }
local NAMED_DIRS = { "topics/", "doc/" }

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

local function any_prefix(path, list)
  for _, p in ipairs(list) do
    if starts(path, p) then return true end
  end
  return false
end

local function is_mapped(path)
  if path == "Makefile" then return true end
  if not any_prefix(path, MAPPED_DIRS) then return false end
  return not path:match("^spec/[^/]*_spec%.lua$")
end

-- A glob of .gitignore or of the map as a Lua pattern (no anchors):
-- `*` and `?` stay inside one path component.
local function glob_pattern(glob)
  return (glob:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", "[^/]*"):gsub("%?", "[^/]"))
end

-- .gitignore's lines as matchers of a path relative to the top.
local function ignore_rules()
  local rules = {}
  local f = io.open(".gitignore")
  if not f then return rules end
  for line in f:lines() do
    line = line:gsub("%s+$", "")
    if line ~= "" and not starts(line, "#") then
      local dir_only = line:sub(-1) == "/"
      if dir_only then line = line:sub(1, -2) end
      local anchored = line:find("/", 1, true) ~= nil
      line = line:gsub("^/", "")
      local p = glob_pattern(line)
      rules[#rules + 1] = function(path)
        local heads = anchored and { "^" } or { "^", "/" }
        for _, head in ipairs(heads) do
          if path:find(head .. p .. "/") then return true end
          if not dir_only and path:find(head .. p .. "$") then return true end
        end
        return false
      end
    end
  end
  f:close()
  return rules
end

local function lines_of(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  local ok = p:close()
  local list = {}
  for line in out:gmatch("[^\n]+") do list[#list + 1] = line end
  return ok and list or nil
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function have_git()
  return (lines_of("git rev-parse --is-inside-work-tree 2>/dev/null") or {})[1] == "true"
end

-- The tree's files (paths relative to the top), sorted.
local function from_git()
  local list = assert(lines_of("git ls-files --cached --others --exclude-standard 2>/dev/null"),
    "git ls-files failed")
  local files, seen = {}, {}
  for _, path in ipairs(list) do
    if not seen[path] and exists(path) then   -- not deleted from the work tree
      seen[path] = true
      files[#files + 1] = path
    end
  end
  table.sort(files)
  return files
end

local function from_find()
  local list = assert(lines_of("find . -path ./.git -prune -o -type f -print"), "find failed")
  local rules = ignore_rules()
  local files = {}
  for _, path in ipairs(list) do
    path = path:gsub("^%./", "")
    local ignored = path == ".git"
    for _, rule in ipairs(rules) do
      if ignored then break end
      ignored = rule(path)
    end
    if not ignored then files[#files + 1] = path end
  end
  table.sort(files)
  return files
end

local function tree_files()
  if have_git() then return from_git() end
  return from_find()
end

local function is_path(token)
  if token:find("%s") or token:find("[<>]") then return false end
  return token == "Makefile" or token:match("^%.%a+$") ~= nil
    or any_prefix(token, MAPPED_DIRS) or any_prefix(token, NAMED_DIRS)
end

-- The map's lines: entries = { path = line number } (the paths that have
-- a line of their own), named = { path = line number } (every path it
-- names), twice = { "path (lines a and b)" }.
local function read_map()
  local f = assert(io.open(MAP))
  local entries, named, twice, n = {}, {}, {}, 0
  for line in f:lines() do
    n = n + 1
    local entry = line:match("^%- `([^`]+)`:%s*%S")
    if entry and is_path(entry) then
      if entries[entry] then
        twice[#twice + 1] = ("%s (lines %d and %d)"):format(entry, entries[entry], n)
      end
      entries[entry] = entries[entry] or n
    end
    for token in line:gmatch("`([^`]+)`") do
      if is_path(token) then named[token] = named[token] or n end
    end
  end
  f:close()
  return entries, named, twice
end

local function listing(names)
  table.sort(names)
  return "\n  " .. table.concat(names, "\n  ")
end

describe("the floor map, topics/layout.md", function()
  local files, is_file = tree_files(), {}
  for _, path in ipairs(files) do is_file[path] = true end
  local entries, named, twice = read_map()

  it("is checked against a listing of the whole tree", function()
    for _, path in ipairs { "Makefile", "csrc/core.c", "lua/perf/init.lua", "spec/helpers.lua", MAP } do
      assert.is_true(is_file[path], path .. " is not in the listing of the tree")
    end
  end)

  it("has a line for every file", function()
    local missing = {}
    for _, path in ipairs(files) do
      if is_mapped(path) and not entries[path] then
        local covered = false
        for dir in pairs(entries) do
          if dir:sub(-1) == "/" and starts(dir, "spec/fixtures/") and starts(path, dir) then
            covered = true
            break
          end
        end
        if not covered then missing[#missing + 1] = path end
      end
    end
    assert.is_true(#missing == 0, MAP .. " has no line for these files:" .. listing(missing))
  end)

  it("gives each file one line", function()
    assert.is_true(#twice == 0, MAP .. " has two lines for:" .. listing(twice))
  end)

  it("names only files and directories that exist", function()
    local dangling = {}
    for path, line in pairs(named) do
      local found
      if path:find("*", 1, true) then
        local p = "^" .. glob_pattern(path) .. "$"
        for _, file in ipairs(files) do
          if file:find(p) then found = true break end
        end
      elseif path:sub(-1) == "/" then
        for _, file in ipairs(files) do
          if starts(file, path) then found = true break end
        end
      else
        found = is_file[path]
      end
      if not found then dangling[#dangling + 1] = ("%s (line %d)"):format(path, line) end
    end
    assert.is_true(#dangling == 0, MAP .. " names what does not exist:" .. listing(dangling))
  end)

  it("gets the same files from find as from git", function()
    if not have_git() then
      pending("not a git checkout: the listing is find's already")
      return
    end
    local by_find, by_git = {}, {}
    for _, path in ipairs(from_find()) do by_find[path] = true end
    for _, path in ipairs(files) do by_git[path] = true end
    local only = {}
    for path in pairs(by_find) do
      if not by_git[path] then only[#only + 1] = "find only: " .. path end
    end
    for path in pairs(by_git) do
      if not by_find[path] then only[#only + 1] = "git only: " .. path end
    end
    assert.is_true(#only == 0, "the two listings differ:" .. listing(only))
  end)
end)
