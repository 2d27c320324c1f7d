-- One bucket operation, atomically, on the Redis clock. This is io.tokenbucket.math.BucketMath step for step,
-- in microseconds: read the state, decide, write the new state with a TTL at time-to-full, answer.
--
-- KEYS      the bucket keys: one, or for 'reserve' several candidates (the freest is chosen: tokens soonest,
--           then most tokens, then first)
--           each holds its bucket's state: one tat per limit (the instant that limit is full again, in
--           microseconds), separated by spaces; no key is a full bucket
-- ARGV[1]   the operation: 'reserve', 'peek', 'refund' or 'penalize'
-- ARGV[2]   tokens n, from 1 to the smallest capacity (checked by the caller); for 'refund' any number from 1
-- ARGV[3]   reserve: the longest acceptable wait in microseconds (the caller caps it at 365 days); penalize: the
--           penalty (capped the same way)
-- ARGV[4..] the limits of each key in turn: their number m, then m pairs of capacity C and interval T
--           (the microseconds one token takes to come back, rounded up)
-- returns   { granted (1 or 0), wait in microseconds, whole tokens remaining, the chosen key's position,
--           the Redis clock's now in microseconds (the wait counts from it) }
--
-- Every number stays below 2^53, so Lua's doubles hold them exactly: the caller keeps bursts (C*T) under 2^51 and
-- waits and penalties under a year, and a stored state is read no further ahead than MAX_DEBT (below). Numbers are
-- written with %.0f because tostring() would round a 16-digit number to 14 digits.

local op = ARGV[1]

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

-- BucketMath.debt: a state further ahead than 2^52 microseconds (142 years) was not written by this script
-- (someone SET the key, or a clock went far back); it counts as that far ahead, so it admits nothing and no sum
-- loses precision. NaN and infinity, which tonumber() also reads, count the same.
local MAX_DEBT = 4503599627370496
local function bounded(tat)
  if tat ~= tat or tat > now + MAX_DEBT then
    return now + MAX_DEBT
  end
  return tat
end

-- The common case first: 'reserve' on one key with one limit, whose state is absent or one number. This is
-- BucketMath.reserve(tat, now, tokens, limit, maxWait), the same steps as the general path below (load, reserve,
-- available, store) without its tables, closures and gmatch, which cost Redis about a third of its time per call.
-- Anything else (several keys or limits, a state of several numbers, another operation) goes on to the general
-- path.
if op == 'reserve' and ARGV[4] == '1' and #KEYS == 1 then
  local stored = redis.call('GET', KEYS[1])
  local tat = now
  if stored then
    tat = tonumber(stored) -- nil for a state of several numbers: left to the general path
  end
  if tat then
    tat = bounded(tat)
    local capacity, interval = tonumber(ARGV[5]), tonumber(ARGV[6])
    local burst = capacity * interval
    local nxt = (tat > now and tat or now) + tonumber(ARGV[2]) * interval
    local wait = nxt - burst - now
    if wait < 0 then
      wait = 0
    end
    local maxwait = tonumber(ARGV[3])
    if maxwait >= 0 and wait > maxwait then
      if tat < now then
        tat = now
      end
      local a = math.floor((burst - (tat - now)) / interval)
      return { 0, wait, a > 0 and a or 0, 1, now }
    end
    -- store(): nxt > now (tokens and interval are at least 1), so always a SET, never a DEL
    redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000))
    local a = math.floor((burst - (nxt - now)) / interval)
    return { 1, wait, a > 0 and a or 0, 1, now }
  end
end

local tokens = tonumber(ARGV[2])
local arg = tonumber(ARGV[3])

local limits = {}
local pos = 4
for k = 1, #KEYS do
  local m = tonumber(ARGV[pos])
  pos = pos + 1
  local l = {}
  for i = 1, m do
    l[i] = { capacity = tonumber(ARGV[pos]), interval = tonumber(ARGV[pos + 1]) }
    pos = pos + 2
  end
  limits[k] = l
end

-- BucketMath.align: the stored states by position, a missing one is a full limit
local function load(k)
  local tats = {}
  local stored = redis.call('GET', KEYS[k])
  if stored then
    for v in string.gmatch(stored, '%S+') do
      local tat = tonumber(v)
      tats[#tats + 1] = tat and bounded(tat) or now -- a word that is no number: a full limit
    end
  end
  for i = 1, #limits[k] do
    if tats[i] == nil then
      tats[i] = now
    end
  end
  return tats
end

-- BucketMath.available: the fewest whole tokens of any limit
local function available(tats, l)
  local fewest = nil
  for i = 1, #l do
    local burst = l[i].capacity * l[i].interval
    local a = math.max(0, math.floor((burst - math.max(0, tats[i] - now)) / l[i].interval))
    if fewest == nil or a < fewest then
      fewest = a
    end
  end
  return fewest
end

-- BucketMath.reserve without the decision: the next states and the latest wait
local function reserve(tats, l)
  local next, wait = {}, 0
  for i = 1, #l do
    next[i] = math.max(tats[i], now) + tokens * l[i].interval
    wait = math.max(wait, next[i] - l[i].capacity * l[i].interval - now)
  end
  return next, wait
end

-- the state, with a TTL at the moment every limit is full again; a full bucket is no key (BucketMath.isFull)
local function store(k, tats, m)
  local parts, latest = {}, now
  for i = 1, m do
    parts[i] = string.format('%.0f', tats[i])
    latest = math.max(latest, tats[i])
  end
  if latest <= now then
    redis.call('DEL', KEYS[k])
  else
    redis.call('SET', KEYS[k], table.concat(parts, ' '), 'PX', math.ceil((latest - now) / 1000))
  end
end

if op == 'reserve' then
  -- the candidate whose tokens come soonest; of equals, the one with most tokens, then the first
  local best, best_tats, best_next, best_wait, best_available
  for k = 1, #KEYS do
    local tats = load(k)
    local next, wait = reserve(tats, limits[k])
    local a = available(tats, limits[k])
    if best == nil or wait < best_wait or (wait == best_wait and a > best_available) then
      best, best_tats, best_next, best_wait, best_available = k, tats, next, wait, a
    end
  end
  if arg >= 0 and best_wait > arg then
    return { 0, best_wait, available(best_tats, limits[best]), best, now }
  end
  store(best, best_next, #limits[best])
  return { 1, best_wait, available(best_next, limits[best]), best, now }
end

local l = limits[1]
local tats = load(1)

if op == 'refund' then
  -- BucketMath.refund, never past full (tokens * T may be huge: the result is then now, exactly)
  for i = 1, #l do
    if tats[i] > now then
      tats[i] = math.max(now, tats[i] - tokens * l[i].interval)
    end
  end
  store(1, tats, #l)
  return { 1, 0, available(tats, l), 1, now }
end

if op == 'penalize' then
  -- BucketMath.penalize: no token before now + penalty, then refilling from empty
  for i = 1, #l do
    tats[i] = math.max(tats[i], now + arg + l[i].capacity * l[i].interval - l[i].interval)
  end
  store(1, tats, #l)
elseif op ~= 'peek' then
  return redis.error_reply('bucket.lua: unknown operation ' .. tostring(op))
end

-- BucketMath.peek
local _, wait = reserve(tats, l)
return { wait == 0 and 1 or 0, wait, available(tats, l), 1, now }
