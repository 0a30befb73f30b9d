/**
 * What Redis adds to Lua, and what Lua 5.4 needs to read like Redis's Lua 5.1, run once in each
 * new Lua state (src/testing/redis/scripting.ts). Its arguments: redis.call and redis.pcall (C
 * functions, so that the script's own frame stays on the stack for the error handler), sha1hex,
 * cjson's decoder (JSON.parse), cjson.null (a NULL light userdata, as in Redis), the server version and its number. It returns
 * the runner, the error handler and the value a killed script raises.
 *
 * Numbers: 5.1 has only doubles, printed with "%.14g". An integral value below 1e15 is kept as a
 * 5.4 integer (it prints the same digits), a larger one becomes a float (so it prints as 5.1 does,
 * "1.7320000001235e+15"); `tostring`, `string.format` and `tonumber` follow 5.1. Left different:
 * `..` of a float with an integral value ("3.0" where 5.1 prints "3"), and the wording of Lua's
 * own runtime errors.
 */
export const REDIS_LUA = String.raw`
local call, pcall1, sha1hex, decode, null, version, versionNum = ...
local G, type, tostring0, tonumber0, error, pcall0, select, rawget, rawset, setmetatable, pairs, getinfo =
  _G, type, tostring, tonumber, error, pcall, select, rawget, rawset, setmetatable, pairs, debug.getinfo
local fmt, floor, ceil, tointeger, pack, unpack, concat = string.format, math.floor, math.ceil,
  math.tointeger, table.pack, table.unpack, table.concat
for _, name in ipairs({'io', 'os', 'package', 'utf8', 'coroutine', 'debug', 'require', 'dofile', 'loadfile', 'load', 'warn'}) do G[name] = nil end

local function num51(n)
  local i = tointeger(n)
  if i and i < 1e15 and i > -1e15 then return i end
  return n + 0.0
end
tonumber = function(...) local n = tonumber0(...) return n and num51(n) end
tostring = function(v)
  if type(v) == 'number' then return fmt('%.14g', v) end
  if v == null then return 'userdata: (nil)' end
  return tostring0(v)
end
string.format = function(f, ...)
  if type(f) ~= 'string' then return fmt(f, ...) end
  local args, n, from = pack(...), 0, 1
  while true do
    local _, last, conv = f:find('%%[-+ #0]*%d*%.?%d*(.)', from)
    if not last then break end
    if conv ~= '%' then
      n = n + 1
      local v = args[n]
      if type(v) == 'number' and conv == 's' then args[n] = tostring(v)
      elseif math.type(v) == 'float' and conv:find('[dioxXc]') then args[n] = tointeger(v >= 0 and floor(v) or ceil(v)) or v end
    end
    from = last + 1
  end
  return fmt(f, unpack(args, 1, args.n))
end
G.unpack, table.getn, math.mod, math.pow = unpack, function(t) return #t end, math.fmod, function(a, b) return a ^ b end

local killed = {}
pcall = function(f, ...)
  local r = pack(pcall0(f, ...))
  if r[1] then return unpack(r, 1, r.n) end
  if r[2] == killed then error(killed, 0) end
  if type(r[2]) == 'table' and type(rawget(r[2], 'err')) == 'string' then return false, r[2].err end
  return false, r[2]
end

local function errtable(text)
  local code, msg = 'ERR', text
  if text:sub(1, 1) == '-' then
    local space = text:find(' ', 1, true)
    if space then code, msg = text:sub(2, space - 1), text:sub(space + 1) else msg = text:sub(2) end
  end
  return { err = code .. ' ' .. (msg:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')) }
end
local function oneString(f) return function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then return errtable('wrong number or type of arguments') end
  return f(s)
end end
local redis = {
  call = call, pcall = pcall1,
  error_reply = oneString(function(s) return errtable(s:sub(1, 1) == '-' and s or '-' .. s) end),
  status_reply = oneString(function(s) return { ok = s } end),
  sha1hex = function(...)
    if select('#', ...) ~= 1 then error(errtable('wrong number of arguments'), 0) end
    return sha1hex(tostring(...))
  end,
  log = function() end,
  setresp = function(v) if v ~= 2 then error('MemoryRedis scripts speak RESP2 only', 2) end end,
  replicate_commands = function() return true end, set_repl = function() end,
  breakpoint = function() return false end, debug = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = versionNum,
}

-- cjson as Redis builds it: numbers "%.14g", '/' escaped, arrays when every key is a positive integer.
local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
local function encodeString(s) return '"' .. s:gsub('[%c"\\/]', function(c) return escapes[c] or fmt('\\u%04x', c:byte()) end) .. '"' end
local function encode(v, depth)
  local t = type(v)
  if v == null then return 'null'
  elseif t == 'string' then return encodeString(v)
  elseif t == 'boolean' then return tostring0(v)
  elseif t == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then error('Cannot serialise number: must not be NaN or Inf', 0) end
    return fmt('%.14g', v)
  elseif t ~= 'table' then error('Cannot serialise ' .. t .. ': type not supported', 0) end
  if depth > 1000 then error('Cannot serialise, excessive nesting (1001)', 0) end
  local max, count = 0, 0
  for k in pairs(v) do
    if type(k) ~= 'number' or k < 1 or floor(k) ~= k then max = -1 break end
    if k > max then max = k end
    count = count + 1
  end
  local out = {}
  if max > 0 then
    if max > count * 2 and max > 10 then error('Cannot serialise table: excessively sparse array', 0) end
    for i = 1, max do out[i] = v[i] == nil and 'null' or encode(v[i], depth + 1) end
    return '[' .. concat(out, ',') .. ']'
  end
  for k, x in pairs(v) do
    if type(k) == 'number' then k = fmt('%.14g', k)
    elseif type(k) ~= 'string' then error('Cannot serialise table: table key must be a number or string', 0) end
    out[#out + 1] = encodeString(k) .. ':' .. encode(x, depth + 1)
  end
  return '{' .. concat(out, ',') .. '}'
end
local cjson = {
  -- Raised where the script called it, as a C library's errors are.
  encode = function(v) local ok, r = pcall0(encode, v, 1) if not ok then error(r, 2) end return r end,
  decode = function(s)
    local ok, r = pcall0(decode, type(s) == 'string' and s or error("bad argument #1 to 'decode' (string expected)", 2))
    if not ok then error(r, 2) end return r
  end,
  null = null,
}

local function readonly(t)
  return setmetatable({}, { __index = t, __newindex = function() error('Attempt to modify a readonly table', 2) end, __metatable = false })
end
G.redis, G.cjson = readonly(redis), readonly(cjson)
for _, name in ipairs({'string', 'table', 'math'}) do G[name] = readonly(G[name]) end
setmetatable(G, {
  __index = function(_, k) error(fmt("Script attempted to access nonexistent global variable '%s'", tostring0(k)), 2) end,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})

local function handler(e)
  if e == killed then return { err = 'ERR MemoryRedis stopped a script that ran too long (an endless loop?)' } end
  if type(e) ~= 'table' then e = { err = 'ERR ' .. tostring0(e) } end
  for level = 2, 100 do
    local info = getinfo(level, 'Sl')
    if not info then break end
    if info.source == '@user_script' then e.source, e.line = info.source, info.currentline break end
  end
  return e
end
-- KEYS and ARGV are globals, set for each run past the read-only guard, as Redis sets them.
local function run(f, keys, argv) rawset(G, 'KEYS', keys) rawset(G, 'ARGV', argv) return f() end
return run, handler, killed
`;
