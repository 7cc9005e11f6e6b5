-- perf.flamegraph: the SVG flame graph (checked in headless Chromium) and
-- speedscope's file format.

local fg = require "perf.profiling.flamegraph"
local json = require "dkjson"          -- comes with busted
local H = require "helpers"

local FOLDED = table.concat({
  "main (a.lua:1);work (a.lua:5);spin (a.lua:9) 60",
  "main (a.lua:1);work (a.lua:6);io.open [C] 5",
  "main (a.lua:1);rest (a.lua:12) 30",
  "main (a.lua:1);rest (a.lua:13);memcpy 5",
}, "\n") .. "\n"

local function frames_of(svg)
  local t = {}
  for attrs in svg:gmatch('<g class="frame"([^>]*)>') do
    t[#t + 1] = {
      id = attrs:match('id="([^"]*)"'),
      name = attrs:match('data%-name="([^"]*)"'),
      info = attrs:match('data%-info="([^"]*)"'),
    }
  end
  return t
end

describe("perf.flamegraph", function()
  it("builds the call tree of folded stacks, children by name", function()
    local root = fg.tree(FOLDED)
    assert.equal(100, root.value)
    assert.equal(1, #root.children)
    local main = root.children[1]
    assert.same({ "main (a.lua:1)", 100 }, { main.name, main.value })
    assert.same({ "rest (a.lua:12)", "rest (a.lua:13)", "work (a.lua:5)", "work (a.lua:6)" },
      (function() local t = {} for i, c in ipairs(main.children) do t[i] = c.name end return t end)())
    assert.equal(60, main.children[3].value)
  end)

  it("writes one frame per node with its name and share, self-contained", function()
    local svg = fg.svg(FOLDED, { title = "cpu-clock & <friends>" })
    local frames = frames_of(svg)
    assert.equal(1 + 1 + 4 + 3, #frames)           -- all, main, 4 children, 3 leaves
    assert.same({ "f0", "all", "all (100 samples, 100.00%)" }, { frames[1].id, frames[1].name, frames[1].info })
    local found = {}
    for _, f in ipairs(frames) do found[f.name] = f.info end
    assert.equal("spin (a.lua:9) (60 samples, 60.00%)", found["spin (a.lua:9)"])
    assert.equal("io.open [C] (5 samples, 5.00%)", found["io.open [C]"])
    H.assert_has("cpu-clock &amp; &lt;friends&gt;", svg)
    assert.is_nil(svg:find("https?://[^\"]*%.js"))     -- nothing fetched
    assert.is_nil(svg:find("<script[^>]*src="))
    assert.matches("^<%?xml", svg)
  end)

  it("writes speedscope's file format: a sampled profile, stacks root first", function()
    local stacks = {
      { frames = { { name = "main", file = "a.lua", line = 1 }, { name = "spin", file = "a.lua", line = 9 } }, count = 7 },
      { frames = { { name = "main", file = "a.lua", line = 1 }, { name = "memcpy" } }, count = 3 },
    }
    local doc = assert(json.decode(fg.speedscope(stacks, { name = "cpu-clock \"x\"" })))
    assert.equal("https://www.speedscope.app/file-format-schema.json", doc["$schema"])
    assert.same({ { name = "main", file = "a.lua", line = 1 }, { name = "spin", file = "a.lua", line = 9 },
      { name = "memcpy" } }, doc.shared.frames)
    local p = doc.profiles[1]
    assert.same({ "sampled", 'cpu-clock "x"', "none", 0, 10 }, { p.type, p.name, p.unit, p.startValue, p.endValue })
    assert.same({ { 0, 1 }, { 0, 2 } }, p.samples)
    assert.same({ 7, 3 }, p.weights)
    assert.equal(0, doc.activeProfileIndex)
  end)
end)

-- A real browser renders the SVG: the script ran over every frame, a
-- frame given in the URL is zoomed to, and the screenshot shows a picture.
local with_browser = H.chromium and it or pending
local browse, png_info = H.browse, H.png_info

describe("the flame graph in a browser", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local path = dir .. "/fg.svg"
  local f = assert(io.open(path, "w"))
  f:write(fg.svg(FOLDED, { title = "test" }))
  f:close()
  local frames = frames_of(fg.svg(FOLDED))

  with_browser("runs the script over every frame, fitting the labels", function()
    local dom = browse("--dump-dom", "file://" .. path)
    assert.matches('data%-ready="' .. #frames .. '"', dom)
    assert.matches('data%-zoom="f0"', dom)                 -- the whole graph
    for _, fr in ipairs(frames) do
      H.assert_has('id="' .. fr.id .. '"', dom)
      H.assert_has("<title>" .. fr.info:gsub("<", "&lt;") .. "</title>", dom)
    end
    assert.matches(">spin %(a%.lua:9%)</text>", dom)
  end)

  with_browser("zooms to a frame: its ancestors span the width, the rest is hidden", function()
    local id
    for _, fr in ipairs(frames) do if fr.name == "rest (a.lua:12)" then id = fr.id end end
    local dom = browse("--dump-dom", "file://" .. path .. "#zoom=" .. id:sub(2))
    assert.matches('data%-zoom="' .. id .. '"', dom)
    local function g(name)
      return dom:match('<g class="frame[^"]*"[^>]-data%-name="' .. name:gsub("%p", "%%%0") .. '"[^>]*>.-</g>')
    end
    local rest = assert(g("rest (a.lua:12)"))
    assert.matches('<rect x="10.00" y="%d+" width="1180.00"', rest)
    assert.matches('class="frame parent"', g("main (a.lua:1)"))
    assert.matches('width="1180.00"', g("main (a.lua:1)"))
    assert.matches("display: none", g("spin (a.lua:9)"))
    assert.matches("display: none", g("rest (a.lua:13)"))
  end)

  with_browser("renders a picture, not a blank page", function()
    local png = dir .. "/fg.png"
    browse("--screenshot=" .. png .. " --window-size=1200,800", "file://" .. path)
    local w, h, size = png_info(png)
    assert.same({ 1200, 800 }, { w, h })
    local blank = dir .. "/blank.svg"
    f = assert(io.open(blank, "w"))
    f:write('<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="158">'
      .. '<rect width="1200" height="158" fill="#f8f8f0"/></svg>')
    f:close()
    local blank_png = dir .. "/blank.png"
    browse("--screenshot=" .. blank_png .. " --window-size=1200,800", "file://" .. blank)
    local _, _, blank_size = png_info(blank_png)
    assert.is_true(size > 3 * blank_size, ("flame graph %d bytes, blank page %d"):format(size, blank_size))
  end)

  teardown(function() os.execute("rm -rf " .. dir) end)
end)
