-- Layer lua/perf/profiling/: perf.profile, the attach by pid, and the reports (flame graphs,
-- pprof, diffs); it requires perf.core and the layers below it (util, event, counting) only.

-- perf.flamegraph: a profile as an interactive SVG flame graph, and as
-- speedscope's JSON file format.
--
--   local fg = require "perf.flamegraph"
--   local svg = fg.svg(folded_text, { title = "cpu-clock" })
--   local svg = fg.svg_tree(root, opts)   -- a call tree (a profile's own)
--   local json = fg.speedscope(prof)
--
-- The SVG is self-contained (inline style and script, no network): each
-- frame is a <g class="frame"> holding a <title> (name, samples, share),
-- a <rect> and a <text>. Hovering shows the frame and its share in the
-- details line; clicking zooms to it (its ancestors span the width, what
-- is outside it is hidden); clicking the root or "Reset zoom" zooms out.
-- Opening the file with "#zoom=N" zooms to frame N on load.
--
-- speedscope: https://www.speedscope.app/file-format-schema.json, one
-- "sampled" profile whose samples are stacks of frame indices, root first,
-- weighted by sample counts (unit "none": counts of the event) or by the
-- profile's nanoseconds or bytes.

local stack_tree = require "perf.profiling.stack_tree"

local M = {}

local WIDTH, ROW, PAD, TOP, BOTTOM = 1200, 16, 10, 48, 30
local CHAR = 7                          -- px per character of the 12px font

local function xml(s)
  return (s:gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
    ['"'] = "&quot;", ["'"] = "&#39;" }))
end

-- A label cut to fit w pixels ("" when not even 3 characters fit).
local function fit(label, w)
  local n = (w - 6) // CHAR
  if n < 3 then return "" end
  if #label <= n then return label end
  return label:sub(1, n - 2) .. ".."
end

-- Folded text ("a;b;c N" lines) to a tree: { name, value, self, children
-- (list, by name) }. For the text a user hands in: a profile's own
-- outputs render from its tree (perf.profiling.stack_tree).
function M.tree(folded)
  local root = stack_tree.new_root()
  for line in folded:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    n = math.tointeger(tonumber(n))
    if stack and n then
      local labels = {}
      for name in stack:gmatch("[^;]+") do labels[#labels + 1] = name end
      stack_tree.add(root, labels, n)
    end
  end
  return stack_tree.finish(root)
end

-- A warm colour for Lua frames (by name), yellow for C functions, aqua
-- for native frames, grey for the root; stable from run to run.
local function colour(name, depth)
  if depth == 0 then return "rgb(200,200,200)" end
  local h = 0
  for i = 1, #name do h = (h * 31 + name:byte(i)) % 1000003 end
  local v = (h % 1000) / 1000
  if name:match(" %[C%]$") then
    return ("rgb(%d,%d,%d)"):format(200 + math.floor(40 * v), 200 + math.floor(40 * v), 60)
  elseif name:match("%(.-:%-?%d+%)$") then
    return ("rgb(%d,%d,%d)"):format(225 + math.floor(30 * v), 80 + math.floor(120 * v), 40 + math.floor(40 * v))
  end
  return ("rgb(%d,%d,%d)"):format(70 + math.floor(50 * v), 170 + math.floor(40 * v), 190 + math.floor(40 * v))
end

local SCRIPT = [[
(function () {
  var svg = document.documentElement, W = %d, PAD = %d, CHAR = %d;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.frame"));
  var details = document.getElementById("details");
  function num(g, k) { return parseFloat(g.getAttribute("data-" + k)); }
  function fit(label, w) {
    var n = Math.floor((w - 6) / CHAR);
    if (n < 3) return "";
    return label.length <= n ? label : label.slice(0, n - 2) + "..";
  }
  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    r.setAttribute("x", x.toFixed(2)); r.setAttribute("width", Math.max(w, 0).toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = fit(g.getAttribute("data-name"), w);
  }
  function zoom(target) {
    var x0 = num(target, "x"), w0 = num(target, "w"), d0 = num(target, "depth");
    var scale = (W - 2 * PAD) / w0;
    frames.forEach(function (g) {
      var x = num(g, "x"), w = num(g, "w"), d = num(g, "depth");
      if (d < d0 && x <= x0 && x + w >= x0 + w0) {          // an ancestor
        g.style.display = ""; g.classList.add("parent"); place(g, PAD, W - 2 * PAD);
      } else if (d >= d0 && x >= x0 && x + w <= x0 + w0) {  // inside
        g.style.display = ""; g.classList.remove("parent");
        place(g, PAD + (x - x0) * scale, w * scale);
      } else {
        g.style.display = "none";
      }
    });
    svg.setAttribute("data-zoom", target.getAttribute("id"));
  }
  frames.forEach(function (g) {
    g.addEventListener("mouseover", function () {
      details.textContent = g.getAttribute("data-info");
    });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
    g.addEventListener("click", function () { zoom(g); });
  });
  document.getElementById("reset").addEventListener("click", function () { zoom(frames[0]); });
  var m = /zoom=(\d+)/.exec(location.hash || "");
  zoom(m && document.getElementById("f" + m[1]) || frames[0]);
  svg.setAttribute("data-ready", frames.length);
})();
]]

-- fg.svg(folded [, opts]) -> the SVG text of folded text. opts.title,
-- opts.subtitle; opts.unit names the counts ("samples");
-- opts.colour(path, node, depth) and opts.info(path, node, share) may give
-- a frame's fill and its hover text (nil: the default), path being the
-- folded stack down to the frame ("a;b;c", "" for the root): a
-- differential flame graph colours by them.
function M.svg(folded, opts)
  return M.svg_tree(M.tree(folded), opts)
end

-- fg.svg_tree(root [, opts]) -> the SVG text of a call tree (as M.tree
-- and perf.profiling.stack_tree make it); opts as for M.svg.
function M.svg_tree(root, opts)
  opts = opts or {}
  local total = math.max(root.value, 1)
  local depth = 0
  local rows = {}
  local id = 0
  local scale = (WIDTH - 2 * PAD) / total
  local function walk(node, x, d, path)
    if d > depth then depth = d end
    rows[#rows + 1] = { node = node, x = x, d = d, id = id, path = path }
    id = id + 1
    local cx = x
    for _, c in ipairs(node.children) do
      walk(c, cx, d + 1, d == 0 and c.name or path .. ";" .. c.name)
      cx = cx + c.value
    end
  end
  walk(root, 0, 0, "")
  local height = TOP + (depth + 1) * ROW + BOTTOM
  local out = {}
  local function add(s) out[#out + 1] = s end
  add('<?xml version="1.0" standalone="no"?>\n')
  add(('<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'xmlns="http://www.w3.org/2000/svg">\n'):format(WIDTH, height, WIDTH, height))
  add('<style>\n'
    .. 'text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n'
    .. 'g.frame { cursor: pointer; }\n'
    .. 'g.frame:hover rect { stroke: #000; stroke-width: 0.5; }\n'
    .. 'g.parent rect { opacity: 0.6; }\n'
    .. '#title { font-size: 17px; }\n'
    .. '#reset { fill: #0645ad; cursor: pointer; }\n'
    .. '</style>\n')
  add(('<rect x="0" y="0" width="%d" height="%d" fill="#f8f8f0"/>\n'):format(WIDTH, height))
  add(('<text id="title" x="%d" y="24" text-anchor="middle">%s</text>\n')
    :format(WIDTH // 2, xml(opts.title or "Flame graph")))
  if opts.subtitle then
    add(('<text id="subtitle" x="%d" y="40" text-anchor="middle" fill="#555">%s</text>\n')
      :format(WIDTH // 2, xml(opts.subtitle)))
  end
  add(('<text id="reset" x="%d" y="24">Reset zoom</text>\n'):format(PAD))
  add(('<text id="details" x="%d" y="%d"> </text>\n'):format(PAD, height - 10))
  for _, r in ipairs(rows) do
    local n = r.node
    local x, w = PAD + r.x * scale, n.value * scale
    local y = height - BOTTOM - (r.d + 1) * ROW
    local share = 100 * n.value / total
    local info = opts.info and opts.info(r.path, n, share)
      or ("%s (%d %s, %.2f%%)"):format(n.name, n.value, opts.unit or "samples", share)
    add(('<g class="frame" id="f%d" data-name="%s" data-info="%s" data-x="%d" data-w="%d" data-depth="%d">'
      .. '<title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" rx="2" fill="%s"/>'
      .. '<text x="%.2f" y="%d">%s</text></g>\n')
      :format(r.id, xml(n.name), xml(info), r.x, n.value, r.d, xml(info), x, y, w, ROW - 1,
        opts.colour and opts.colour(r.path, n, r.d) or colour(n.name, r.d), x + 3, y + 12,
        xml(fit(n.name, w))))
  end
  add('<script type="text/ecmascript"><![CDATA[\n')
  add(SCRIPT:format(WIDTH, PAD, CHAR))
  add(']]></script>\n</svg>\n')
  return table.concat(out)
end

-- ---- speedscope ----

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
    return named[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

-- fg.speedscope(stacks, opts) -> JSON text. stacks: list of { frames =
-- { {name =, file =, line =}, ... root first }, count = }; opts.name,
-- opts.unit (speedscope's: "nanoseconds", "bytes", ...; default "none",
-- counts of an event).
function M.speedscope(stacks, opts)
  opts = opts or {}
  local frames, index = {}, {}
  local samples, weights, total = {}, {}, 0
  for _, s in ipairs(stacks) do
    local ids = {}
    for i, f in ipairs(s.frames) do
      local key = ("%s\0%s\0%s"):format(f.name, f.file or "", f.line or "")
      local k = index[key]
      if not k then
        frames[#frames + 1] = f
        k = #frames - 1
        index[key] = k
      end
      ids[i] = k
    end
    samples[#samples + 1] = "[" .. table.concat(ids, ",") .. "]"
    weights[#weights + 1] = tostring(s.count)
    total = total + s.count
  end
  local fs = {}
  for i, f in ipairs(frames) do
    local parts = { '"name":' .. json_string(f.name) }
    if f.file then parts[#parts + 1] = '"file":' .. json_string(f.file) end
    if math.type(f.line) == "integer" and f.line >= 0 then parts[#parts + 1] = '"line":' .. f.line end
    fs[i] = "{" .. table.concat(parts, ",") .. "}"
  end
  local name = opts.name or "profile"
  return table.concat {
    '{"$schema":"https://www.speedscope.app/file-format-schema.json",\n',
    '"exporter":"perf for Lua",\n',
    '"name":', json_string(name), ',\n',
    '"activeProfileIndex":0,\n',
    '"shared":{"frames":[\n', table.concat(fs, ",\n"), '\n]},\n',
    '"profiles":[{"type":"sampled","name":', json_string(name), ',"unit":', json_string(opts.unit or "none"), ',',
    '"startValue":0,"endValue":', tostring(total), ',\n',
    '"samples":[', table.concat(samples, ","), '],\n',
    '"weights":[', table.concat(weights, ","), ']}]}\n',
  }
end

return M
