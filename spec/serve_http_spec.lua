-- perf.serve_http: the strict, bounded HTTP/1.1 request parser and responses.
local http = require "perf.serving.serve_http"

local function get(target, extra)
  return ("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n"):format(target, extra or "")
end

local function refused(buf, limits)
  local req, status, why = http.parse(buf, limits)
  assert.is_nil(req)
  assert.is_number(status, "expected a refusal")
  return status, why
end

describe("perf.serve_http", function()
  it("parses a GET: path, query, headers, keep-alive, where it ends", function()
    local buf = get("/debug/pprof/profile?seconds=5&event=syscalls%3Asys_enter_openat&x", "User-Agent: t\r\n")
    local req = assert(http.parse(buf .. "GET /next"))
    assert.equal("/debug/pprof/profile", req.path)
    assert.same({ seconds = "5", event = "syscalls:sys_enter_openat", x = "" }, req.query)
    assert.equal("t", req.headers["user-agent"])
    assert.is_true(req.keep_alive)
    assert.equal(#buf, req.size)
    assert.is_false(assert(http.parse(get("/", "Connection: close\r\n"))).keep_alive)
    assert.is_false(assert(http.parse("GET / HTTP/1.0\r\n\r\n")).keep_alive)
    assert.is_true(assert(http.parse("\r\nGET / HTTP/1.0\nConnection: keep-alive\n\n")).keep_alive)
  end)

  it("waits for the rest of a head", function()
    local buf = get("/metrics")
    for n = 0, #buf - 1 do
      local req, status = http.parse(buf:sub(1, n))
      assert.is_nil(req)
      assert.is_nil(status, ("refused after %d bytes"):format(n))
    end
  end)

  it("serves GET only: 405", function()
    for _, m in ipairs { "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH" } do
      assert.equal(405, (refused(m .. " /metrics HTTP/1.1\r\nHost: x\r\n\r\n")))
    end
  end)

  it("refuses a request line past the limit (414) and a head past its limits (431)", function()
    local limits = { line = 100, head = 300, fields = 4 }
    assert.equal(414, (refused("GET /" .. ("a"):rep(200), limits)))          -- before its end came
    assert.equal(414, (refused(get("/" .. ("a"):rep(120)), limits)))
    assert.equal(431, (refused("GET / HTTP/1.1\r\nHost: x\r\nX: " .. ("b"):rep(400), limits)))
    local many = ("A: 1\r\n"):rep(5)
    local status, why = refused(get("/", many), limits)
    assert.equal(431, status)
    assert.equal("more than 4 header fields", why)
  end)

  it("refuses malformed requests with 400 (505 for another HTTP)", function()
    for _, buf in ipairs {
      "GARBAGE\r\n\r\n", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\n\r\n",
      "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
      "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET /?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\rY\r\n\r\n",
      "GET / HTTP/x\r\n\r\n", "\0\1\2\r\n\r\n",
    } do
      assert.equal(400, (refused(buf)), buf)
    end
    assert.equal(505, (refused("GET / HTTP/2.0\r\n\r\n")))
  end)

  it("writes responses with their length, and errors that close", function()
    assert.equal("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
      .. "Connection: keep-alive\r\n\r\nhi", http.response(200, "hi", { { "Content-Type", "text/plain" } }, true))
    local r = http.error_response(429, "busy", { { "Retry-After", "3" } })
    assert.matches("^HTTP/1%.1 429 Too Many Requests\r\n", r)
    assert.matches("\r\nRetry%-After: 3\r\n", r)
    assert.matches("\r\nConnection: close\r\n\r\n429 Too Many Requests: busy\n$", r)
  end)
end)
