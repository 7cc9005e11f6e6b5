-- fannkuch-redux (the benchmarks game's task): every permutation of 1..n
-- in turn, each flipped (its prefix reversed) until 1 comes first; the
-- most flips and a checksum. Integer array work in tight loops.
return function(n)
  n = n or 9
  local perm, count, p = {}, {}, {}
  for i = 1, n do p[i] = i end
  local maxflips, checksum, sign = 0, 0, 1
  while true do
    for i = 1, n do perm[i] = p[i] end
    local flips, first = 0, perm[1]
    while first ~= 1 do
      local i, j = 1, first
      while i < j do perm[i], perm[j] = perm[j], perm[i]; i, j = i + 1, j - 1 end
      flips = flips + 1
      first = perm[1]
    end
    if flips > maxflips then maxflips = flips end
    checksum = checksum + sign * flips
    -- the next permutation, in the order the task prescribes
    if sign == 1 then
      p[1], p[2] = p[2], p[1]
      sign = -1
    else
      p[2], p[3] = p[3], p[2]
      sign = 1
      for k = 3, n do
        local c = (count[k] or 0)
        if c < k - 1 then count[k] = c + 1 break end
        count[k] = 0
        if k == n then return checksum, maxflips end
        local t = p[1]
        for i = 1, k do p[i] = p[i + 1] end
        p[k + 1] = t
      end
    end
  end
end
