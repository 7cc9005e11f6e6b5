-- Layer lua/perf/util/: plain helpers (small files, did-you-mean, option tables, gzip, ELF and
-- kernel symbols); it requires perf.core only.

-- perf.fs: reading the small files of sysfs, tracefs and procfs.
--
-- Lua has no readdir; the C core provides one (perf.core.listdir) when it
-- is built, and `ls` is the fallback so these modules also work alone.

-- optional: without the C core (a module used alone), `ls` lists directories
local has_core, core = pcall(require, "perf.core")

local M = {}

-- The whole content of a file, or nil when it cannot be read.
function M.read(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- The content of a file without surrounding white space, or nil.
function M.read_trimmed(path)
  local s = M.read(path)
  return s and (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local native = (has_core and type(core) == "table" and type(core.listdir) == "function") and core.listdir or nil

-- The names in a directory (without "." and ".."), sorted, or with
-- `unsorted` in the order the directory gives them (perf's order for
-- tracefs); an empty list when it does not exist.
function M.listdir(path, unsorted)
  local out = {}
  if native then
    out = native(path) or {}
  else
    local p = io.popen("ls -1AU '" .. path:gsub("'", "'\\''") .. "' 2>/dev/null")
    if p then
      for line in p:lines() do out[#out + 1] = line end
      p:close()
    end
  end
  if not unsorted then table.sort(out) end
  return out
end

-- Whether `path` exists (a file or a directory: both open for reading).
function M.exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

local machine_name

-- The machine's architecture ("x86_64", "aarch64", ...), as uname -m says.
function M.machine()
  if not machine_name then
    machine_name = M.read_trimmed("/proc/sys/kernel/arch")
    if not machine_name then
      local p = io.popen("uname -m 2>/dev/null")
      machine_name = p and p:read("l")
      if p then p:close() end
    end
    machine_name = machine_name or "unknown"
  end
  return machine_name
end

-- A name for a new file beside `path` (the same directory, so renaming
-- it to `path` stays on one file system) that does not exist yet.
function M.temporary_name(path)
  for _ = 1, 100 do
    local name = ("%s.tmp%06x"):format(path, math.random(0, 0xffffff))
    if not M.exists(name) then return name end
  end
  return path .. ".tmp"
end

-- A message about `tmp` (the name write_atomic used) told about `path`.
local function about(msg, tmp, path)
  return (tostring(msg):gsub(tmp:gsub("%p", "%%%0"), (path:gsub("%%", "%%%%"))))
end

-- Writes `text` to the file `path` whole or not at all: into a new file
-- beside it, renamed over `path` once written and closed (a full disk or
-- a file size limit fail the write or the close); on any failure the new
-- file is removed and `path` is left as it was. true, or nil, message,
-- errno.
function M.write_atomic(path, text)
  local tmp = M.temporary_name(path)
  local f, msg, errno = io.open(tmp, "wb")
  if not f then return nil, about(msg, tmp, path), errno end
  local ok
  ok, msg, errno = f:write(text)
  if ok then
    ok, msg, errno = f:close()
  else
    f:close()
  end
  if ok then ok, msg, errno = os.rename(tmp, path) end
  if not ok then
    os.remove(tmp)
    msg = about(msg, tmp, path)
    if not msg:find(path, 1, true) then msg = path .. ": " .. msg end
    return nil, msg, errno
  end
  return true
end

-- Whether a file can be made at `path` (its directory exists and takes
-- new files): true, or nil, message, errno. Nothing is left behind.
function M.can_create(path)
  local tmp = M.temporary_name(path)
  local f, msg, errno = io.open(tmp, "wb")
  if not f then return nil, about(msg, tmp, path), errno end
  f:close()
  os.remove(tmp)
  return true
end

-- Whether `path` is a directory.
function M.isdir(path)
  local f = io.open(path .. "/.", "r")
  if f then f:close() return true end
  return false
end

return M
