-- n-body (the benchmarks game's task): the Jovian planets' orbits,
-- advanced by a simple symplectic integrator; floating-point arithmetic
-- over a few tables' fields.
local PI = math.pi
local SOLAR_MASS = 4 * PI * PI
local DAYS = 365.24

local function bodies()
  local function body(x, y, z, vx, vy, vz, mass)
    return { x = x, y = y, z = z, vx = vx * DAYS, vy = vy * DAYS, vz = vz * DAYS,
      mass = mass * SOLAR_MASS }
  end
  return {
    body(0, 0, 0, 0, 0, 0, 1),
    body(4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
      1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
      9.54791938424326609e-04),
    body(8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
      -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
      2.85885980666130812e-04),
    body(1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
      2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
      4.36624404335156298e-05),
    body(1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
      2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
      5.15138902046611451e-05),
  }
end

local function advance(b, dt)
  local n = #b
  for i = 1, n do
    local bi = b[i]
    local x, y, z, m = bi.x, bi.y, bi.z, bi.mass
    for j = i + 1, n do
      local bj = b[j]
      local dx, dy, dz = x - bj.x, y - bj.y, z - bj.z
      local d2 = dx * dx + dy * dy + dz * dz
      local mag = dt / (d2 * math.sqrt(d2))
      local mj, mi = bj.mass * mag, m * mag
      bi.vx, bi.vy, bi.vz = bi.vx - dx * mj, bi.vy - dy * mj, bi.vz - dz * mj
      bj.vx, bj.vy, bj.vz = bj.vx + dx * mi, bj.vy + dy * mi, bj.vz + dz * mi
    end
  end
  for i = 1, n do
    local bi = b[i]
    bi.x, bi.y, bi.z = bi.x + dt * bi.vx, bi.y + dt * bi.vy, bi.z + dt * bi.vz
  end
end

local function energy(b)
  local e, n = 0, #b
  for i = 1, n do
    local bi = b[i]
    e = e + 0.5 * bi.mass * (bi.vx * bi.vx + bi.vy * bi.vy + bi.vz * bi.vz)
    for j = i + 1, n do
      local bj = b[j]
      local dx, dy, dz = bi.x - bj.x, bi.y - bj.y, bi.z - bj.z
      e = e - bi.mass * bj.mass / math.sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end

return function(n)
  local b = bodies()
  local px, py, pz = 0, 0, 0
  for _, bi in ipairs(b) do
    px, py, pz = px + bi.vx * bi.mass, py + bi.vy * bi.mass, pz + bi.vz * bi.mass
  end
  b[1].vx, b[1].vy, b[1].vz = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS
  for _ = 1, n or 200000 do advance(b, 0.01) end
  return energy(b)
end
