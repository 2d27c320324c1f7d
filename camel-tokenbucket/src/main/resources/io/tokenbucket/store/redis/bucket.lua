-- One bucket operation, atomically, on the Redis clock. This is io.tokenbucket.math.BucketMath step for step,
-- in microseconds: read the state, decide, write the new state with a TTL at time-to-full, answer. Redis runs a
-- script alone, so the read, the decision and the write need no lock and no retry, whatever the contention.
--
-- KEYS      the bucket keys: one, or for 'reserve' several candidates (the freest is chosen: tokens soonest,
--           then most tokens, then first)
--           each holds its bucket's state: one tat per limit (the instant that limit is full again, in
--           microseconds of the Redis clock), separated by spaces; no key is a full bucket
-- ARGV[1]   the operation: 'reserve', 'peek', 'refund', 'penalize', 'throttle', 'rate', 'batch' or 'all'
--           (below)
-- ARGV[2]   tokens n, from 1 to the smallest capacity (checked by the caller); for 'refund' any number from 1
-- ARGV[3]   reserve: the longest acceptable wait in microseconds (the caller caps it at 365 days); penalize: the
--           penalty in microseconds (capped the same way); otherwise -1
-- ARGV[4..] the limits of each key in turn: their number m, then m pairs of capacity C and interval T
--           (the microseconds one token takes to come back, rounded up); limits whose rate adapts (AdaptiveMath)
--           are preceded by 'A' and seven numbers: floor, decrease and increase in parts per million, hold and
--           memory in microseconds, the tokens of one increase step at the ceiling, and the start in parts per
--           million (where a key without rate state starts; 1000000: at the ceiling, no slow start)
-- returns   { granted (1 or 0), wait in microseconds, whole tokens remaining, the chosen key's position,
--           the Redis clock's now in microseconds (the wait counts from it) }
--           'throttle' and 'rate' (adaptive limits only; tokens 1) return { cut (1 or 0), then the peek of one
--           token's wait, remaining, position and now, then the current factor in parts per million, then 1 while
--           the key is in its slow start, else 0 }
--
-- An adaptive key's state is its tats followed by 'r' and its rate state: factor (ppm), credit (tokens towards
-- the next step), the instant of the last cut (microseconds of the Redis clock) and 1 while starting, else 0 (a
-- state written before the slow start has no fourth number: not starting). No 'r' is a key without rate state
-- (Adaptive.fresh: at the start, starting; the ceiling without a slow start), and a rate state equal to that one
-- is not written. Its TTL is the latest tat plus the memory: the key expires when AdaptiveMath.current would forget
-- the rate (the bucket full for the memory).
--
-- 'all'     one reservation on the freest candidate (or candidate group) and every shared key together (below,
--           before the other general operations): ARGV[4] is the number of candidates c, optionally 'G' and each
--           group's size, KEYS the groups in turn (each its candidate first), the rest shared
--
-- 'batch'   several reservations in one call, each as its own 'reserve' on one key, in the order given, all at
--           one now: KEYS[i] is reservation i's key (keys may repeat: each reservation on a key sees the state the
--           one before it left), ARGV[2..] holds for each reservation in turn its tokens, its longest acceptable
--           wait in microseconds, its number of limits m and their m pairs of C and T. Returns the five numbers
--           above for each reservation in turn, then the Redis clock's now again, read after their work. Each key is read once and written once, however many
--           reservations it has: what makes a reservation in a batch cheaper than one call of its own.
--
-- Every number stays below 2^53, so Lua's doubles hold them exactly: the caller keeps bursts (C*T) under 2^51 and
-- waits and penalties under a year, and a stored state is read no further ahead than MAX_DEBT_US (below). Numbers
-- are written with %.0f because tostring() would round a 16-digit number to 14 digits.

local op = ARGV[1]

-- the Redis clock, not the callers': every Camel instance shares one timeline, so their skew cannot over-admit
local time = redis.call('TIME')
local now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])

-- BucketMath.debt: a state further ahead than 2^52 microseconds (142 years) was not written by this script
-- (someone SET the key, or a clock went far back); it counts as that far ahead, so it admits nothing and no sum
-- loses precision. NaN and infinity, which tonumber() also reads, count the same.
local MAX_DEBT_US = 4503599627370496
-- RedisBucketStore.MAX_BURST_MICROS: the largest burst of a limit, 2^51 microseconds; Adaptive.PPM
local MAX_BURST_US = 2251799813685248
local PPM = 1000000
local function bounded(tat_us)
  if tat_us ~= tat_us or tat_us > now_us + MAX_DEBT_US then
    return now_us + MAX_DEBT_US
  end
  return tat_us
end

-- The fast path: 'reserve' on one key with one limit, whose state is absent or one number; the call every
-- exchange of a single-limit endpoint makes. It is BucketMath.reserve(tat, now, tokens, limit, maxWait), the
-- same steps as the general path below (load, reserve, available, store) without its tables, closures and
-- gmatch. It is kept because it costs Redis about a third less time per call: 6.7 against 10.3 microseconds
-- (usec_per_call of EVALSHA in INFO commandstats, 200,000 calls each, Redis 6.2, ARGV[4] '1' against '01',
-- which the general path reads as the same one limit; a run by hand whose raw output was not kept). BucketScriptDifferentialTest runs both paths against
-- BucketMath. Anything else (several keys or limits, a state of several numbers, another operation) goes on to
-- the general path.
if op == 'reserve' and ARGV[4] == '1' and #KEYS == 1 then
  local stored = redis.call('GET', KEYS[1])
  local tat_us = now_us
  if stored then
    tat_us = tonumber(stored) -- nil for a state of several numbers: left to the general path
  end
  if tat_us then
    tat_us = bounded(tat_us)
    local capacity, interval_us = tonumber(ARGV[5]), tonumber(ARGV[6])
    local burst_us = capacity * interval_us
    local next_us = (tat_us > now_us and tat_us or now_us) + tonumber(ARGV[2]) * interval_us
    local wait_us = next_us - burst_us - now_us
    if wait_us < 0 then
      wait_us = 0
    end
    local max_wait_us = tonumber(ARGV[3])
    if max_wait_us >= 0 and wait_us > max_wait_us then
      if tat_us < now_us then
        tat_us = now_us
      end
      local a = math.floor((burst_us - (tat_us - now_us)) / interval_us)
      return { 0, wait_us, a > 0 and a or 0, 1, now_us }
    end
    -- store(): next_us > now_us (tokens and interval are at least 1), so always a SET, never a DEL
    redis.call('SET', KEYS[1], string.format('%.0f', next_us), 'PX', math.ceil((next_us - now_us) / 1000))
    local a = math.floor((burst_us - (next_us - now_us)) / interval_us)
    return { 1, wait_us, a > 0 and a or 0, 1, now_us }
  end
end

local tokens = tonumber(ARGV[2])
local arg_us = tonumber(ARGV[3])

-- the limits of each key: m, then m pairs of C and T, from ARGV[pos]; answers them and the position after them
local function read_limits(pos)
  local adapt = nil
  if ARGV[pos] == 'A' then
    adapt = { floor = tonumber(ARGV[pos + 1]), decrease = tonumber(ARGV[pos + 2]),
              increase = tonumber(ARGV[pos + 3]), hold_us = tonumber(ARGV[pos + 4]),
              memory_us = tonumber(ARGV[pos + 5]), step = tonumber(ARGV[pos + 6]),
              start = tonumber(ARGV[pos + 7]) }
    pos = pos + 8
  end
  local m = tonumber(ARGV[pos])
  pos = pos + 1
  local l = { adapt = adapt }
  for i = 1, m do
    l[i] = { capacity = tonumber(ARGV[pos]), interval_us = tonumber(ARGV[pos + 1]) }
    pos = pos + 2
  end
  return l, pos
end

-- a stored state, every number of it, bounded (a word that is no number: a full limit), and its rate state after
-- 'r' (nil: none; one that is not three numbers and an optional 0 or 1, or a factor out of range, counts as none)
local function parse(stored)
  local tats_us, words = {}, {}
  local one = stored and tonumber(stored)
  if one then -- one number, the common state: no words to split
    tats_us[1] = bounded(one)
    return tats_us, nil
  end
  if stored then
    for v in string.gmatch(stored, '%S+') do
      words[#words + 1] = v
    end
  end
  local i = 1
  while i <= #words and words[i] ~= 'r' do
    local tat_us = tonumber(words[i])
    tats_us[#tats_us + 1] = tat_us and bounded(tat_us) or now_us
    i = i + 1
  end
  local rate = nil
  if words[i] == 'r' then
    local f, credit, cut_us = tonumber(words[i + 1]), tonumber(words[i + 2]), tonumber(words[i + 3])
    local starting = words[i + 4]
    if f and credit and cut_us and f >= 1 and f <= PPM and f == math.floor(f) and credit >= 0
        and credit < 1e9 and credit == math.floor(credit) and cut_us == cut_us
        and math.abs(cut_us - now_us) < MAX_DEBT_US
        and (starting == nil or starting == '0' or starting == '1') and words[i + 5] == nil then
      rate = { f = f, credit = credit, cut_us = cut_us, starting = starting == '1' }
    end
  end
  return tats_us, rate
end

-- BucketMath.align: the stored states by position, a missing one is a full limit (the key's limits may have
-- changed since the state was written)
local function align(stored_us, m)
  local tats_us = {}
  for i = 1, math.max(m, #stored_us) do
    tats_us[i] = stored_us[i] or now_us
  end
  return tats_us
end

-- BucketMath.available: the fewest whole tokens of any limit
local function available(tats_us, l)
  local fewest = nil
  for i = 1, #l do
    local burst_us = l[i].capacity * l[i].interval_us
    local a = math.max(0, math.floor((burst_us - math.max(0, tats_us[i] - now_us)) / l[i].interval_us))
    if fewest == nil or a < fewest then
      fewest = a
    end
  end
  return fewest
end

-- BucketMath.decide on one key without the decision: the latest wait W of its limits (step 3), and the next
-- states with every limit charged at the release instant now + W (step 5)
local function reserve(tats_us, l, n)
  local next_us, wait_us = {}, 0
  for i = 1, #l do
    wait_us = math.max(wait_us, math.max(tats_us[i], now_us) + (n - l[i].capacity) * l[i].interval_us - now_us)
  end
  for i = 1, #l do
    next_us[i] = math.max(tats_us[i], now_us + wait_us) + n * l[i].interval_us
  end
  return next_us, wait_us
end

-- Adaptive.fresh: the rate state of a key without one, which is never written
local function fresh(adapt)
  return { f = adapt.start, credit = 0, cut_us = 0, starting = adapt.start < PPM }
end

-- Adaptive.isFresh
local function is_fresh(rate, adapt)
  return rate.f == adapt.start and rate.credit == 0 and rate.cut_us == 0 and rate.starting == (adapt.start < PPM)
end

-- the state, with a TTL at the moment every limit is full again, so an idle key costs nothing; a full bucket is
-- no key (BucketMath.isFull). An adaptive rate state other than the fresh one (rate, with its limits' adaptation
-- adapt) is written after the tats and keeps the key until the latest tat plus the memory (AdaptiveMath.current).
local function store(key, tats_us, m, rate, adapt)
  local parts, latest_us, latest_tat_us = {}, now_us, nil
  for i = 1, m do
    parts[i] = string.format('%.0f', tats_us[i])
    latest_us = math.max(latest_us, tats_us[i])
    latest_tat_us = latest_tat_us and math.max(latest_tat_us, tats_us[i]) or tats_us[i]
  end
  if rate and adapt and not is_fresh(rate, adapt) then
    parts[m + 1] = 'r'
    parts[m + 2] = string.format('%.0f', rate.f)
    parts[m + 3] = string.format('%.0f', rate.credit)
    parts[m + 4] = string.format('%.0f', rate.cut_us)
    parts[m + 5] = rate.starting and '1' or '0'
    latest_us = latest_tat_us + adapt.memory_us
  end
  if latest_us <= now_us then
    redis.call('DEL', key)
  else
    redis.call('SET', key, table.concat(parts, ' '), 'PX', math.ceil((latest_us - now_us) / 1000))
  end
end

-- AdaptiveMath, step for step; a rate is nil for fixed limits, which have none

-- AdaptiveMath.current: the stored rate, or the fresh one when there is none or the bucket has been full for the
-- memory (now - the latest tat); a starting one raised to the start (the ceiling's when there is no slow start),
-- another to the floor, when written with a lower one
local function current(rate, tats_us, l)
  local adapt = l.adapt
  if adapt == nil then
    return nil
  end
  local idle_us = nil
  for i = 1, #l do -- the limits' tats (align keeps any further ones stored, which BucketMath.align drops)
    local d = now_us - tats_us[i]
    if idle_us == nil or d < idle_us then
      idle_us = d
    end
  end
  if rate == nil or idle_us >= adapt.memory_us then
    return fresh(adapt)
  end
  if rate.starting then
    if adapt.start >= PPM then
      return fresh(adapt)
    end
    if rate.f < adapt.start then
      return { f = adapt.start, credit = rate.credit, cut_us = rate.cut_us, starting = true }
    end
    return rate
  end
  if rate.f >= PPM then
    return { f = PPM, credit = 0, cut_us = 0, starting = false }
  end
  if rate.f < adapt.floor then
    return { f = adapt.floor, credit = rate.credit, cut_us = rate.cut_us, starting = false }
  end
  return rate
end

-- AdaptiveMath.scaledInterval: ceil(T * PPM / f), saturating at MAX_BURST_US / C
local function scaled_interval(t, c, f)
  if f >= PPM then
    return t
  end
  local cap = math.floor(MAX_BURST_US / c)
  local q = math.floor(t / f)
  local r = t - q * f
  if q > math.floor(cap / PPM) then
    return cap
  end
  return math.min(q * PPM + math.ceil(r * PPM / f), cap)
end

-- AdaptiveMath.scaled: the limits at the rate's factor
local function scaled(l, rate)
  if rate == nil or rate.f >= PPM then
    return l
  end
  local s = { adapt = l.adapt }
  for i = 1, #l do
    s[i] = { capacity = l[i].capacity, interval_us = scaled_interval(l[i].interval_us, l[i].capacity, rate.f) }
  end
  return s
end

-- AdaptiveMath.holding: never while starting nor at the ceiling
local function holding(rate, adapt)
  return not rate.starting and rate.f < PPM and now_us - rate.cut_us < adapt.hold_us
end

-- the ceiling past (or without) a slow start: RateState.CEILING
local CEILING = { f = PPM, credit = 0, cut_us = 0, starting = false }

-- AdaptiveMath.earn: credit for n granted tokens, a step per ceil(step * f / PPM) of them, which adds the increase
-- (doubles the factor while starting)
local function earn(rate, n, adapt)
  if rate == nil or rate.f >= PPM or holding(rate, adapt) then
    return rate
  end
  local threshold = math.max(1, math.ceil(adapt.step * rate.f / PPM))
  local credit = rate.credit + n
  local steps = math.floor(credit / threshold)
  if steps == 0 then
    return { f = rate.f, credit = credit, cut_us = rate.cut_us, starting = rate.starting }
  end
  if rate.starting then
    local f, s = rate.f, 0
    while s < steps and f < PPM do -- at most 20 doublings from 1 ppm to the ceiling
      f = math.min(PPM, 2 * f)
      s = s + 1
    end
    return { f = f, credit = f >= PPM and 0 or credit - steps * threshold, cut_us = rate.cut_us, starting = true }
  end
  if steps > math.floor((PPM - rate.f) / adapt.increase) then
    return CEILING
  end
  local f = rate.f + steps * adapt.increase
  if f >= PPM then
    return CEILING
  end
  return { f = f, credit = credit - steps * threshold, cut_us = rate.cut_us, starting = false }
end

-- AdaptiveMath.cut: the factor times the decrease (halved while starting, which ends the start), at least the
-- floor, held; answers rate itself while holding
local function cut(rate, adapt)
  if holding(rate, adapt) then
    return rate
  end
  local f = rate.starting and math.floor(rate.f / 2) or math.floor(rate.f * adapt.decrease / PPM)
  return { f = math.max(adapt.floor, f), credit = 0, cut_us = now_us, starting = false }
end

if op == 'batch' then
  -- each key's state as the reservations before left it (what a GET would read now), and the keys to write
  local states, rates, adapts, written, out = {}, {}, {}, {}, {}
  local pos = 2
  for r = 1, #KEYS do
    local key = KEYS[r]
    local n, max_wait_us = tonumber(ARGV[pos]), tonumber(ARGV[pos + 1])
    local stored_us = states[key]
    if stored_us == nil then
      stored_us, rates[key] = parse(redis.call('GET', key))
      states[key] = stored_us
    end
    local o = #out
    -- the fast path's arithmetic, for one fixed limit on a state of at most one number without a rate state: the
    -- general steps below without their tables (BucketScriptBatchDifferentialTest runs both against BucketMath)
    if ARGV[pos + 2] == '1' and #stored_us <= 1 and rates[key] == nil then
      local capacity, interval_us = tonumber(ARGV[pos + 3]), tonumber(ARGV[pos + 4])
      pos = pos + 5
      local tat_us = stored_us[1] or now_us
      if tat_us < now_us then
        tat_us = now_us
      end
      local burst_us = capacity * interval_us
      local next_us = tat_us + n * interval_us
      local wait_us = next_us - burst_us - now_us
      if wait_us < 0 then
        wait_us = 0
      end
      if wait_us > max_wait_us then
        next_us = tat_us
        out[o + 1] = 0
      else
        states[key] = { next_us }
        adapts[key] = nil
        if not written[key] then
          written[key] = true
          written[#written + 1] = key
        end
        out[o + 1] = 1
      end
      local a = math.floor((burst_us - (next_us - now_us)) / interval_us)
      out[o + 2], out[o + 3], out[o + 4], out[o + 5] = wait_us, a > 0 and a or 0, 1, now_us
    else
      local l
      l, pos = read_limits(pos + 2)
      local tats_us = align(stored_us, #l)
      local rate = current(rates[key], tats_us, l)
      local next_us, wait_us = reserve(tats_us, scaled(l, rate), n)
      if wait_us > max_wait_us then
        out[o + 1], out[o + 2], out[o + 3] = 0, wait_us, available(tats_us, scaled(l, rate))
      else
        -- what store() would write: the first m numbers (a reserve always owes time, so never a DEL)
        states[key] = next_us
        rates[key] = earn(rate, n, l.adapt)
        adapts[key] = l.adapt
        if not written[key] then
          written[key] = true
          written[#written + 1] = key
        end
        out[o + 1], out[o + 2], out[o + 3] = 1, wait_us, available(next_us, scaled(l, rate))
      end
      out[o + 4], out[o + 5] = 1, now_us
    end
  end
  for i = 1, #written do
    local key = written[i]
    local tats_us = states[key]
    if #tats_us == 1 and rates[key] == nil then
      -- store() of one tat without a rate state, which a reservation always leaves ahead of now: a SET
      redis.call('SET', key, string.format('%.0f', tats_us[1]), 'PX', math.ceil((tats_us[1] - now_us) / 1000))
    else
      store(key, tats_us, #tats_us, rates[key], adapts[key])
    end
  end
  -- the Redis clock again, after the members' work: the caller learns where this clock stands from it (the first
  -- now is older than the reply by all that work)
  local done = redis.call('TIME')
  out[#out + 1] = tonumber(done[1]) * 1000000 + tonumber(done[2])
  return out
end

-- 'all' (AdaptiveMath.reserveAll, BucketMath.reserveAll): one reservation on the freest candidate group and on
-- every shared key, all charged or none. ARGV[4] is the number of candidates c; then, optionally, 'G' and the number
-- of keys of each candidate's group (its candidate key and the keys charged with it; without 'G' one each); then the
-- limits of every key in KEYS order. KEYS holds each group in turn, its candidate key first, then the shared keys.
-- Every key is decided at its current rate (AdaptiveMath.current, scaled), a group's wait is the longest of its keys'
-- and the shared keys', its tokens the fewest of its keys'. Each key is charged at the common release instant
-- now + wait (max(tat, now + wait) + n*T), not from its own base, so a key whose own wait is shorter is not handed
-- out early; a key whose limits adapt earns credit for the tokens as a reservation of its own would
-- (AdaptiveMath.earn). The reply's position is the chosen candidate's (1..c), its remaining the fewest of the
-- charged keys.
if op == 'all' then
  local candidates = tonumber(ARGV[4])
  local sizes, p = {}, 5
  if ARGV[5] == 'G' then
    for c = 1, candidates do
      sizes[c] = tonumber(ARGV[5 + c])
    end
    p = 6 + candidates
  else
    for c = 1, candidates do
      sizes[c] = 1
    end
  end
  local l, sl, tats_us, rates = {}, {}, {}, {}
  for k = 1, #KEYS do
    l[k], p = read_limits(p)
    local stored_us, rate = parse(redis.call('GET', KEYS[k]))
    tats_us[k] = align(stored_us, #l[k])
    rates[k] = current(rate, tats_us[k], l[k])
    sl[k] = scaled(l[k], rates[k])
  end
  local first, grouped = {}, 0
  for c = 1, candidates do
    first[c] = grouped + 1
    grouped = grouped + sizes[c]
  end
  -- the longest own wait and the fewest tokens of keys from..to (0 and nil when there are none)
  local function span(from, to)
    local wait_us, fewest_of = 0, nil
    for k = from, to do
      local _, w = reserve(tats_us[k], sl[k], tokens)
      wait_us = math.max(wait_us, w)
      local a = available(tats_us[k], sl[k])
      if fewest_of == nil or a < fewest_of then
        fewest_of = a
      end
    end
    return wait_us, fewest_of
  end
  local shared_wait_us, shared_available = span(grouped + 1, #KEYS)
  -- the group whose wait with the shared keys' is shortest; of equals, the one with most tokens, then the first
  local best, best_wait_us, best_available
  for c = 1, candidates do
    local w, a = span(first[c], first[c] + sizes[c] - 1)
    w = math.max(w, shared_wait_us)
    if best == nil or w < best_wait_us or (w == best_wait_us and a > best_available) then
      best, best_wait_us, best_available = c, w, a
    end
  end
  local fewest = best_available
  if shared_available ~= nil and shared_available < fewest then
    fewest = shared_available
  end
  if best_wait_us > arg_us then
    return { 0, best_wait_us, fewest, best, now_us }
  end
  -- BucketMath.reserveAt on the chosen group's keys and every shared key, each at its rate, earning credit
  local release_us = now_us + best_wait_us
  local from, to = first[best], first[best] + sizes[best] - 1
  fewest = nil
  for k = 1, #KEYS do
    if (k >= from and k <= to) or k > grouped then
      local next_us = {}
      for i = 1, #sl[k] do
        next_us[i] = math.max(tats_us[k][i], release_us) + tokens * sl[k][i].interval_us
      end
      store(KEYS[k], next_us, #l[k], earn(rates[k], tokens, l[k].adapt), l[k].adapt)
      local a = available(next_us, sl[k])
      if fewest == nil or a < fewest then
        fewest = a
      end
    end
  end
  return { 1, best_wait_us, fewest, best, now_us }
end

local limits = {}
local pos = 4
for k = 1, #KEYS do
  limits[k], pos = read_limits(pos)
end

-- a key's states, aligned to its limits, and its current rate (nil: the ceiling)
local function load(k)
  local stored_us, rate = parse(redis.call('GET', KEYS[k]))
  local tats_us = align(stored_us, #limits[k])
  return tats_us, current(rate, tats_us, limits[k])
end

if op == 'reserve' then
  -- the candidate whose tokens come soonest; of equals, the one with most tokens, then the first
  local best, best_tats_us, best_next_us, best_wait_us, best_available, best_rate
  for k = 1, #KEYS do
    local tats_us, rate = load(k)
    local l = scaled(limits[k], rate)
    local next_us, wait_us = reserve(tats_us, l, tokens)
    local a = available(tats_us, l)
    if best == nil or wait_us < best_wait_us or (wait_us == best_wait_us and a > best_available) then
      best, best_tats_us, best_next_us, best_wait_us, best_available, best_rate = k, tats_us, next_us, wait_us, a,
          rate
    end
  end
  local l = scaled(limits[best], best_rate)
  if arg_us >= 0 and best_wait_us > arg_us then
    return { 0, best_wait_us, available(best_tats_us, l), best, now_us }
  end
  store(KEYS[best], best_next_us, #l, earn(best_rate, tokens, l.adapt), l.adapt)
  return { 1, best_wait_us, available(best_next_us, l), best, now_us }
end

local tats_us, rate = load(1)
local l = scaled(limits[1], rate)

if op == 'refund' then
  -- BucketMath.refund, never past full (tokens * T may be huge: the result is then now, exactly)
  for i = 1, #l do
    if tats_us[i] > now_us then
      tats_us[i] = math.max(now_us, tats_us[i] - tokens * l[i].interval_us)
    end
  end
  store(KEYS[1], tats_us, #l, rate, l.adapt)
  return { 1, 0, available(tats_us, l), 1, now_us }
end

if op == 'penalize' then
  -- BucketMath.penalize: no token before now + penalty, then refilling from empty
  for i = 1, #l do
    tats_us[i] = math.max(tats_us[i], now_us + arg_us + l[i].capacity * l[i].interval_us - l[i].interval_us)
  end
  store(KEYS[1], tats_us, #l, rate, l.adapt)
elseif op == 'throttle' or op == 'rate' then
  if l.adapt == nil then
    return redis.error_reply('bucket.lua: ' .. op .. ' needs adaptive limits')
  end
  local was_cut = 0
  if op == 'throttle' then
    local after = cut(rate, l.adapt)
    if after ~= rate then
      -- AdaptiveMath.emptied: each limit empty at the new rate, a longer debt kept
      rate, l, was_cut = after, scaled(limits[1], after), 1
      for i = 1, #l do
        tats_us[i] = math.max(tats_us[i], now_us + l[i].capacity * l[i].interval_us)
      end
      store(KEYS[1], tats_us, #l, rate, l.adapt)
    end
  end
  local _, wait_us = reserve(tats_us, l, 1)
  return { was_cut, wait_us, available(tats_us, l), 1, now_us, rate.f, rate.starting and 1 or 0 }
elseif op ~= 'peek' then
  return redis.error_reply('bucket.lua: unknown operation ' .. tostring(op))
end

-- BucketMath.peek (after a penalty: the state it left, for one token)
local _, wait_us = reserve(tats_us, l, tokens)
return { wait_us == 0 and 1 or 0, wait_us, available(tats_us, l), 1, now_us }
