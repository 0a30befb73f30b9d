-- lib/clock.lua: the server's clock, read at most once per script and only where needed (an
-- uncontended acquire or release never reads it).
local clockUs
local function nowUs()
  if not clockUs then
    local t = redis.call('TIME')
    clockUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clockUs
end
local function nowMs()
  return math.floor(nowUs() / 1000)
end
