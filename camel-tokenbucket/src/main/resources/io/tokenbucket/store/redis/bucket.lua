-- One bucket operation, atomically, on the Redis clock. This is io.tokenbucket.math.BucketMath line for line,
-- in microseconds: read the state, decide, write the new state with a TTL at time-to-full, answer.
--
-- KEYS[1]  the bucket key; its value is the bucket's tat (the instant it will be full again), in microseconds
-- ARGV[1]  the operation: 'reserve', 'peek' or 'refund'
-- ARGV[2]  capacity C, in tokens
-- ARGV[3]  interval T, the microseconds one token takes to come back (rounded up)
-- ARGV[4]  tokens n, from 1 to C (checked by the caller)
-- ARGV[5]  reserve only: the longest acceptable wait in microseconds, or -1 for no limit
-- returns  { granted (1 or 0), wait in microseconds, whole tokens remaining }
--
-- Every number stays below 2^53, so Lua's doubles hold them exactly; they are written with %.0f because
-- tostring() would round a 16-digit number to 14 digits.

local key = KEYS[1]
local op = ARGV[1]
local capacity = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local burst = capacity * interval
-- no state is a full bucket (BucketMath.isFull): an expired key is exactly that
local tat = tonumber(redis.call('GET', key)) or now

-- BucketMath.available
local function available(at)
  local debt = math.max(0, at - now)
  return math.max(0, math.floor((burst - debt) / interval))
end

local function store(new_tat)
  if new_tat <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
  end
end

-- BucketMath.refund
if op == 'refund' then
  if tat > now then
    tat = math.max(now, tat - math.min(tokens, capacity) * interval)
    store(tat)
  end
  return { 1, 0, available(tat) }
end

-- BucketMath.reserve
local new_tat = math.max(tat, now) + tokens * interval
local wait = math.max(0, new_tat - burst - now)

-- BucketMath.peek
if op == 'peek' then
  return { wait == 0 and 1 or 0, wait, available(tat) }
end

if max_wait >= 0 and wait > max_wait then
  return { 0, wait, available(tat) }
end
store(new_tat)
return { 1, wait, available(new_tat) }
