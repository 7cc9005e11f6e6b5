-- examples/wordfreq.lua: a small Lua program to profile.
--
--   lua5.4 examples/wordfreq.lua [words]
--
-- Makes a text of pseudo-random words, counts them, writes the counts to
-- temporary files and prints the most frequent. Its time goes to making
-- words, counting and sorting; its file opens come from one function.
local N = math.tointeger(tonumber(arg and arg[1] or "")) or 400000

local function make_text(n)
  local syllables = { "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi" }
  local words, seed = {}, 42
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    local w = syllables[seed % 8 + 1] .. syllables[(seed >> 8) % 8 + 1]
    if seed % 3 == 0 then w = w .. syllables[(seed >> 16) % 8 + 1] end
    words[i] = w
  end
  return table.concat(words, " ")
end

local function count_words(text)
  local counts = {}
  for w in text:gmatch("%a+") do counts[w] = (counts[w] or 0) + 1 end
  return counts
end

local function sorted(counts)
  local list = {}
  for w, n in pairs(counts) do list[#list + 1] = { word = w, n = n } end
  table.sort(list, function(a, b) return a.n > b.n or (a.n == b.n and a.word < b.word) end)
  return list
end

local function save(list)
  local name = os.tmpname()
  for _, e in ipairs(list) do
    local f = assert(io.open(name, "a"))
    f:write(e.word, " ", e.n, "\n")
    f:close()
  end
  os.remove(name)
end

local text = make_text(N)
local list = sorted(count_words(text))
save(list)
for i = 1, 3 do print(list[i].word, list[i].n) end
