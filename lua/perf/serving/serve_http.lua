-- Layer lua/perf/serving/: the Prometheus exporter and the HTTP server; it requires perf.core
-- and the layers below it (util, event, counting, profiling, recording) only.

-- perf.serve_http: the little HTTP/1.1 perf.serve speaks (RFC 9112),
-- strict and bounded, plain Lua over byte strings (no sockets here).
--
--   local req, status, why = M.parse(buf, limits)
--     req == nil, status == nil: the head is not complete yet
--     req: { method, target, path, query = {k = v}, version, headers =
--            {lower-case name = value}, size (bytes of the head), keep_alive }
--     nil, status, why: refuse with that status (400, 405, 414, 431, 505)
--   local text = M.response(status, body, headers, keep_alive)
--
-- Only GET, no body: a GET with Content-Length > 0 or Transfer-Encoding is
-- refused, as are a request line past limits.line (414) and a head past
-- limits.head bytes or limits.fields fields (431).
local M = {}

M.LIMITS = { line = 8192, head = 16384, fields = 64 }

M.REASONS = {
  [200] = "OK", [400] = "Bad Request", [404] = "Not Found", [405] = "Method Not Allowed",
  [408] = "Request Timeout", [414] = "URI Too Long", [429] = "Too Many Requests",
  [431] = "Request Header Fields Too Large", [500] = "Internal Server Error",
  [501] = "Not Implemented", [503] = "Service Unavailable", [505] = "HTTP Version Not Supported",
}

-- "%41b+c" -> "Ab c" (a query's form encoding); nil on a bad escape
local function unescape(s)
  if s:find("%%[^%x]") or s:find("%%%x?$") then return nil end
  return (s:gsub("+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- "a=1&b=x" -> { a = "1", b = "x" } (the first of a repeated key), or nil
function M.query(s)
  local q = {}
  for pair in (s or ""):gmatch("[^&]+") do
    local k, v = pair:match("^([^=]*)=?(.*)$")
    k, v = unescape(k), unescape(v)
    if not k or not v then return nil end
    if q[k] == nil then q[k] = v end
  end
  return q
end

local TOKEN = "^[!#$%%&'*+%-.^_`|~%w]+$"    -- RFC 9110's tchar

-- The request line: method, target, version; or nil, status, why.
local function request_line(line)
  local method, target, version = line:match("^(%S+) (%S+) (%S+)$")
  if not method then return nil, 400, "malformed request line" end
  if not method:match(TOKEN) then return nil, 400, "malformed method" end
  local major = version:match("^HTTP/(%d)%.%d$")
  if not major then return nil, 400, "malformed HTTP version" end
  if major ~= "1" then return nil, 505, "only HTTP/1.0 and HTTP/1.1 are served" end
  if target:sub(1, 1) ~= "/" then return nil, 400, "the target must be a path (origin-form)" end
  return method, target, version
end

-- The header fields of `lines` (after the request line) into a table;
-- or nil, status, why.
local function fields(lines, first, limits)
  local headers, n = {}, 0
  for i = first, #lines do
    local line = lines[i]
    n = n + 1
    if n > limits.fields then return nil, 431, ("more than %d header fields"):format(limits.fields) end
    local name, value = line:match("^([^:%s]+):[ \t]*(.-)[ \t]*$")
    if not name or not name:match(TOKEN) then return nil, 400, "malformed header field" end
    if value:find("[%z\1-\8\10-\31\127]") then return nil, 400, "control character in a header value" end
    name = name:lower()
    if headers[name] and (name == "host" or name == "content-length") then
      return nil, 400, "repeated " .. name .. " header"
    end
    headers[name] = headers[name] and headers[name] .. ", " .. value or value
  end
  return headers
end

-- The head's lines (CRLF, or a lone LF as RFC 9112 2.2 allows), or nil
-- with a status when it is over a limit; `stop` is where the head ends.
local function split_head(buf, stop, limits)
  local lines, pos = {}, 1
  while pos <= stop do
    local nl = buf:find("\n", pos, true)
    local line = buf:sub(pos, nl - 1):gsub("\r$", "")
    if line:find("\r", 1, true) then return nil, 400, "a bare CR in the head" end
    if #lines == 0 and #line > limits.line then
      return nil, 414, ("request line longer than %d bytes"):format(limits.line)
    end
    lines[#lines + 1] = line
    pos = nl + 1
  end
  lines[#lines] = nil                         -- the empty line that ends the head
  return lines
end

--- parse(buf, limits) -> request | nil (more to read) | nil, status, why
function M.parse(buf, limits)
  limits = limits or M.LIMITS
  local skip = #buf:match("^[\r\n]*")         -- empty lines before a request (9112 2.2)
  buf = buf:sub(skip + 1)
  local first = buf:find("\n", 1, true)
  if not first and #buf > limits.line then
    return nil, 414, ("request line longer than %d bytes"):format(limits.line)
  end
  local _, stop = buf:find("\r?\n\r?\n")
  if not stop then
    if #buf > limits.head then return nil, 431, ("request head longer than %d bytes"):format(limits.head) end
    if first and first - 1 > limits.line then
      return nil, 414, ("request line longer than %d bytes"):format(limits.line)
    end
    return nil
  end
  if stop > limits.head then return nil, 431, ("request head longer than %d bytes"):format(limits.head) end
  local lines, status, why = split_head(buf, stop, limits)
  if not lines then return nil, status, why end
  local method, target, version = request_line(lines[1] or "")
  if not method then return nil, target, version end
  local headers
  headers, status, why = fields(lines, 2, limits)
  if not headers then return nil, status, why end
  if method ~= "GET" then return nil, 405, "only GET is served" end
  if version == "HTTP/1.1" and not headers.host then return nil, 400, "HTTP/1.1 needs a Host header" end
  if headers["transfer-encoding"] or (headers["content-length"] and headers["content-length"] ~= "0") then
    return nil, 400, "a GET has no body here"
  end
  local path, qs = target:match("^([^?#]*)%??([^#]*)")
  local query = M.query(qs)
  if not query then return nil, 400, "malformed query string" end
  local conn = (headers.connection or ""):lower()
  local keep = version == "HTTP/1.1" and not conn:find("close", 1, true)
    or version == "HTTP/1.0" and conn:find("keep-alive", 1, true) ~= nil
  return { method = method, target = target, path = path, query = query, version = version,
    headers = headers, size = skip + stop, keep_alive = keep }, nil, nil
end

--- response(status, body, headers, keep_alive) -> the bytes to send
function M.response(status, body, headers, keep_alive)
  local out = { ("HTTP/1.1 %d %s\r\n"):format(status, M.REASONS[status] or "Unknown") }
  for _, h in ipairs(headers or {}) do out[#out + 1] = h[1] .. ": " .. h[2] .. "\r\n" end
  out[#out + 1] = ("Content-Length: %d\r\nConnection: %s\r\n\r\n")
    :format(#body, keep_alive and "keep-alive" or "close")
  out[#out + 1] = body
  return table.concat(out)
end

--- error_response(status, why, extra_headers) -> bytes (text, connection closed)
function M.error_response(status, why, extra)
  local headers = { { "Content-Type", "text/plain; charset=utf-8" } }
  for _, h in ipairs(extra or {}) do headers[#headers + 1] = h end
  return M.response(status, ("%d %s: %s\n"):format(status, M.REASONS[status] or "", why), headers, false)
end

return M
