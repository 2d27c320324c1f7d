-- One bucket operation, atomically, on the Redis clock. This is io.tokenbucket.math.BucketMath step for step,
-- in microseconds: read the state, decide, write the new state with a TTL at time-to-full, answer. Redis runs a
-- script alone, so the read, the decision and the write need no lock and no retry, whatever the contention.
-- Its steps are in bucket-state.lua and bucket-math.lua, joined in where it says --#include (BucketScript).
--
-- 'reserve' the one reservation path: a list of reservations, decided in the order given, all at one now, each on
--           the state the ones before it left (keys may repeat). ARGV[2..] holds each reservation in turn. On one
--           key: its tokens n (1 to the smallest capacity, checked by the caller), its longest acceptable wait in
--           microseconds (the caller caps it at 365 days) and its limits (below); its key is the next of KEYS. On
--           several keys (the freest candidate or candidate group, with every shared key): n, the longest wait,
--           'C', its number of keys k, the number of candidates c, optionally 'G' and each group's size, then the
--           limits of each of its keys; its keys are the next k of KEYS, the groups in turn (each its candidate
--           first), then the shared keys. A reservation whose words are those of the one before (its keys aside)
--           may be sent as the one word '=' instead. Returns for each reservation in turn granted, wait and
--           remaining (below), then the chosen candidate's position when it had more than one candidate; then the
--           Redis clock's now (every wait counts from it), then that clock again, read after their work (now again
--           when there is one reservation). Each number of a reply costs Redis as much as a few Lua steps, so none
--           is sent that the caller knows. Each key is read once and written once, however many reservations it has.
-- 'peek', 'penalize', 'throttle', 'rate'
--           on KEYS[1]: ARGV[2] tokens n (1 but for 'peek'), ARGV[3] penalize: the penalty in microseconds (capped
--           at 365 days), otherwise -1, ARGV[4..] the key's limits
-- 'refund', 'remove'
--           on every key of KEYS, with ARGV as 'peek' has it (n any number from 1) and each key's limits; 'remove'
--           keeps only each key's in-flight slots and tickets (they belong to exchanges still running or waiting)
-- 'probe'   on KEYS[1] (or none), ARGV as 'peek' has it with no limits (0): sends what the others send (below)
-- 'release', 'renew'
--           on every key of KEYS, with ARGV as 'peek' has it and each key's limits: the slot of the lease their
--           'F' names is dropped, or renewed to expire lease_us from now (an expired one stays gone)
-- limits    optionally 'F' and four words: the in-flight limit N, the reservation's lease id, the lease time in
--           microseconds (a key holds at most N slots; a reservation takes one with its id, expiring after the lease
--           time unless renewed) and the ticket time in microseconds (0: a refusal for want of a slot takes no ticket
--           in the key's queue, below); then their number m (0 for a key of in-flight limit only), then m pairs of
--           capacity C and interval T (the microseconds one token takes to come back, rounded up); limits whose rate
--           adapts (AdaptiveMath) are preceded by 'A' and seven numbers:
--           floor, decrease and increase in parts per million, hold and memory in microseconds, the tokens of one
--           increase step at the ceiling, and the start in parts per million (where a key without rate state
--           starts; 1000000: at the ceiling, no slow start)
-- a state   each key holds its bucket's state: one tat per limit (the instant that limit is full again, in
--           microseconds of the Redis clock), separated by spaces, then its rate state (below) and its in-flight
--           slots: 's' and pairs of lease id and expiry (microseconds of the Redis clock), then 'q' and the waiters'
--           tickets, pairs of lease id and expiry in arrival order; no key is a full bucket without slots or tickets
-- returns   { granted (1, or 0 when refused, -1 when refused for want of an in-flight slot), wait in microseconds,
--           whole tokens remaining (at most the free slots), the chosen candidate's position,
--           the Redis clock's now in microseconds (the wait counts from it) }
--           'throttle' and 'rate' (adaptive limits only; tokens 1) return { cut (1 or 0), then the peek of one
--           token's wait, remaining, position and now, then the current factor in parts per million, then 1 while
--           the key is in its slow start, else 0 }
--
-- An adaptive key's state is its tats followed by 'r' and its rate state: factor (ppm), credit (tokens towards
-- the next step), the instant of the last cut (microseconds of the Redis clock), 1 while starting, else 0 (a
-- state written before the slow start has no fourth number: not starting), the factor the last cut past the
-- slow start came at (ppm; none written when there is none nor tokens counted), and the tokens granted since the
-- last cut (none written for none). No 'r' is a key without rate state
-- (Adaptive.fresh: at the start, starting; the ceiling without a slow start), and a rate state equal to that one
-- is not written. Its TTL is the latest tat plus the memory: the key expires when AdaptiveMath.current would forget
-- the rate (the bucket full for the memory).
--
-- Every number stays below 2^53, so Lua's doubles hold them exactly: the caller keeps bursts (C*T) under 2^51 and
-- waits and penalties under a year, and a stored state is read no further ahead than MAX_DEBT_US (below). Numbers
-- are written with %.0f (or %d, which is cheaper, where the number is whole) because tostring() would round a
-- 16-digit number to 14 digits.

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

-- The steps below the reservation loop's short branch, built only when a call needs them: making ~15 closures
-- and tables is a large share of a small call's work in Redis (BENCHMARKS.md, section 2), and most calls do not
-- need them.
local function general()
--#include bucket-state.lua
--#include bucket-math.lua

  return { read_limits = read_limits, parse = parse, align = align, available = available, reserve = reserve,
           store = store, current = current, scaled = scaled, cut = cut, reserve_all = reserve_all, full = full,
           sustained_interval = sustained_interval }
end

-- 'reserve': BucketMath.decide for each reservation in turn; each key's state as the reservations before left it
-- (what a GET would read now) is read at its first reservation, and each changed key is written once at the end
if op == 'reserve' then
  local states, rates, adapts, held, written, out = {}, {}, {}, {}, {}, {}
  -- true for a key whose state is a table: a lookup here is cheaper than a call of type() per reservation
  local tabled = {}
  local g = nil
  local pos, ki, members = 2, 1, 0
  -- a key's state as the reservations before left it, read from Redis at its first reservation: false (no key, a
  -- full bucket), one number (one tat without a rate state, the common state, kept without a table: a table per
  -- reservation is Redis work the commonest call does not need) or the table of its tats, with its rate state in rates
  local function load(key)
    local state = states[key]
    if state == nil then
      local stored = redis.call('GET', key)
      state = stored and tonumber(stored)
      if state then
        if state ~= state or state > now_us + MAX_DEBT_US then -- bounded(), without a call
          state = now_us + MAX_DEBT_US
        end
      elseif not stored then
        state = false
      else
        g = g or general()
        state, rates[key], held[key] = g.parse(stored)
        tabled[key] = true
      end
      states[key] = state
    end
    return state
  end
  -- the same as a table of tats, the rate state and the in-flight slots
  local function load_tats(key)
    local state = load(key)
    if not state then
      return {}, nil, {}
    elseif type(state) == 'number' then
      return { state }, nil, {}
    end
    return state, rates[key], held[key] or {}
  end
  -- a key's next state, kept for the reservations after it and written at the end (one tat without a rate state as
  -- a number)
  local function charge(key, tats_us, rate, adapt, slots)
    -- (a state at or before now is a full bucket, deleted by store(): a waiter's ticket withdrawn from a full key)
    if rate == nil and #tats_us == 1 and tats_us[1] > now_us
        and (slots == nil or (#slots == 0 and #(slots.queue or {}) == 0)) then
      states[key], tabled[key] = tats_us[1], false
    else
      states[key], tabled[key] = tats_us, true
    end
    rates[key], adapts[key], held[key], written[key] = rate, adapt, slots, true
  end
  -- the words of the reservation before start at prev; its numbers are kept (parsing a number is a large share of
  -- a short reservation's work): n and the longest wait always, capacity and interval when it took the short branch
  local prev, short = pos, false
  local n, max_wait_us, capacity, interval_us
  while ki <= #KEYS do
    members = members + 1
    -- '=': this reservation's words are those of the one before (the caller sends it for an equal one)
    local repeated = ARGV[pos] == '='
    local at = repeated and prev or pos
    if not repeated then
      n, max_wait_us = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
    end
    prev = at
    local o = #out
    local key = KEYS[ki]
    local state = states[key]
    if state == nil then
      state = load(key)
    end
    -- the short branch: one fixed limit on a state of at most one number without a rate state, BucketMath.decide
    -- for one key of one limit without the general steps' tables (BucketScriptBatchDifferentialTest and
    -- BucketScriptDifferentialTest run both against BucketMath: a limit count '01' takes the general steps)
    if ARGV[at + 2] == '1' and not tabled[key] then
      ki = ki + 1
      if not (repeated and short) then
        capacity, interval_us = tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4])
      end
      short = true
      pos = repeated and pos + 1 or at + 5
      local tat_us = state or now_us
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
        -- a number is written as one tat alone (no rate state, no slots): whatever adapts[key] holds is not read
        states[key], written[key] = next_us, true
        out[o + 1] = 1
      end
      -- math.floor without a call: x - x % 1 is floor(x), exactly, for the whole-number range of doubles
      local a = (burst_us - (next_us - now_us)) / interval_us
      a = a - a % 1
      out[o + 2], out[o + 3] = wait_us, a > 0 and a or 0
    else
      g = g or general()
      short = false
      local after
      after, ki = g.reserve_all(KEYS, ki, at, n, max_wait_us, load_tats, charge, out)
      pos = repeated and pos + 1 or after
    end
  end
  for key in pairs(written) do
    local state = states[key]
    if not tabled[key] then
      -- store() of one tat without a rate state, which a reservation always leaves ahead of now: a SET (the tat is
      -- whole; the TTL is formatted by Redis, exactly: it is far below 2^53)
      local ms = (state - now_us) / 1000
      local px = ms - ms % 1
      if px < ms then -- math.ceil without a call
        px = px + 1
      end
      redis.call('SET', key, string.format('%d', state), 'PX', px)
    else
      g = g or general()
      g.store(key, state, #state, rates[key], adapts[key], held[key])
    end
  end
  -- the Redis clock again, after the members' work: the caller learns where this clock stands from it (the first
  -- now is older than the reply by all that work); one reservation's work is a few microseconds, so its now
  -- stands for it and saves a call
  local done_us = now_us
  if members > 1 then
    local done = redis.call('TIME')
    done_us = tonumber(done[1]) * 1000000 + tonumber(done[2])
  end
  local o = #out
  out[o + 1], out[o + 2] = now_us, done_us
  return out
end

local g = general()
local read_limits, parse, align, available, reserve, store, current, scaled, cut, full, sustained_interval =
    g.read_limits, g.parse, g.align, g.available, g.reserve, g.store, g.current, g.scaled, g.cut, g.full,
    g.sustained_interval
local tokens = tonumber(ARGV[2])
local arg_us = tonumber(ARGV[3])

local limits = {}
local pos = 4
for k = 1, #KEYS do
  limits[k], pos = read_limits(pos)
end

-- a key's states, aligned to its limits, its current rate (nil: the ceiling) and its in-flight slots
local function load(k)
  local stored_us, rate, slots = parse(redis.call('GET', KEYS[k]))
  local tats_us = align(stored_us, #limits[k])
  return tats_us, current(rate, tats_us, limits[k]), slots
end

if op == 'release' or op == 'renew' then
  -- on every key, the slot of the lease its 'F' names: released (dropped), or renewed (expiring lease_us from now;
  -- a slot already expired is not brought back); the rest of each state as it was. A release of a key with waiters'
  -- tickets publishes to the channel ARGV[3] names, so that every instance tries its waiters at once
  local fewest, waited = nil, false
  for k = 1, #KEYS do
    local l_k = limits[k]
    local tats_k, rate_k, slots_k = load(k)
    if l_k.inflight ~= nil then
      local kept = { queue = {} }
      for _, t in ipairs(slots_k.queue or {}) do -- a release also withdraws the lease's ticket (it waits no more)
        if op == 'renew' or t.id ~= l_k.inflight.id then
          kept.queue[#kept.queue + 1] = t
        end
      end
      for j = 1, #slots_k do
        local slot = slots_k[j]
        if slot.id ~= l_k.inflight.id then
          kept[#kept + 1] = slot
        elseif op == 'renew' then
          kept[#kept + 1] = { id = slot.id, exp_us = now_us + l_k.inflight.lease_us }
        end
      end
      slots_k = kept
      waited = waited or #kept.queue > 0
      store(KEYS[k], tats_k, #l_k, rate_k, l_k.adapt, slots_k)
    end
    local a = available(tats_k, scaled(l_k, rate_k), slots_k)
    if fewest == nil or a < fewest then
      fewest = a
    end
  end
  if op == 'release' and waited and ARGV[3] ~= '-1' then
    -- by pcall, so that a refusal names the command (Redis 6.2 does not); the slots are released all the same
    local r = redis.pcall('PUBLISH', ARGV[3], '1')
    if type(r) == 'table' and r.err then
      return redis.error_reply(r.err .. ' (PUBLISH of a release in bucket.lua)')
    end
  end
  return { 1, 0, fewest, 1, now_us }
end

if op == 'probe' then
  -- what the other operations send, so that a permission they lack shows before they need it (RedisBucketStore.probe):
  -- on KEYS[1], a key of the limiter's namespace (so an ACL of the limiter's own keys covers it), GET, SET and DEL
  -- (the script runs alone: no client ever sees the key); a bucket that key holds is written back as it was, value
  -- and TTL, and not deleted. With ARGV[3] other than -1, the PUBLISH of a release to that channel, a message its
  -- subscribers ignore. No key: TIME alone, whether Redis answers (a shared connection's readiness). Each by pcall, so
  -- that the error names the command refused (Redis 6.2 words an ACL refusal in a script without naming it); a SET
  -- whose DEL is refused leaves a key that expires within a second
  local refused = nil
  local function try(command, ...)
    if refused == nil then
      local r = redis.pcall(command, ...)
      if type(r) == 'table' and r.err then
        refused = r.err .. ' (' .. command .. ' in the probe of bucket.lua)'
        return nil
      end
      return r
    end
  end
  if #KEYS > 0 then
    local held = try('GET', KEYS[1])
    if held then
      try('SET', KEYS[1], held, 'KEEPTTL')
    else
      try('SET', KEYS[1], '0', 'PX', 1000)
      try('DEL', KEYS[1])
    end
  end
  if ARGV[3] ~= '-1' then
    try('PUBLISH', ARGV[3], 'probe')
  end
  if refused ~= nil then
    return redis.error_reply(refused)
  end
  return { 1, 0, 0, 1, now_us }
end

if op == 'refund' or op == 'remove' then
  -- BucketMath.decide's REFUND and REMOVE on every key: a refund moves each limit back by n of its intervals, never
  -- past full (n * T may be huge: the result is then now, exactly), and answers the fewest tokens of any key; a
  -- remove leaves each bucket full, without rate state
  local fewest = nil
  for k = 1, #KEYS do
    local tats_k, rate_k, slots_k = load(k)
    if op == 'remove' then
      store(KEYS[k], {}, 0, nil, nil, slots_k)
    else
      local l_k = scaled(limits[k], rate_k)
      for i = 1, #l_k do
        if tats_k[i] > now_us then
          tats_k[i] = math.max(now_us, tats_k[i] - tokens * l_k[i].interval_us)
        end
      end
      store(KEYS[k], tats_k, #l_k, rate_k, l_k.adapt, slots_k)
      local a = available(tats_k, l_k, slots_k)
      if fewest == nil or a < fewest then
        fewest = a
      end
    end
  end
  return { 1, 0, fewest or 0, 1, now_us }
end

local tats_us, rate, slots = load(1)
local l = scaled(limits[1], rate)

if op == 'penalize' then
  -- BucketMath.penalize: no token before now + penalty, then refilling from empty
  for i = 1, #l do
    tats_us[i] = math.max(tats_us[i], now_us + arg_us + l[i].capacity * l[i].interval_us - l[i].interval_us)
  end
  store(KEYS[1], tats_us, #l, rate, l.adapt, slots)
elseif op == 'throttle' or op == 'rate' then
  if l.adapt == nil then
    return redis.error_reply('bucket.lua: ' .. op .. ' needs adaptive limits')
  end
  local was_cut = 0
  if op == 'throttle' then
    local after = cut(rate, l.adapt, sustained_interval(limits[1]))
    if after ~= rate then
      -- AdaptiveMath.emptied: each limit empty at the new rate, a longer debt kept
      rate, l, was_cut = after, scaled(limits[1], after), 1
      for i = 1, #l do
        tats_us[i] = math.max(tats_us[i], now_us + l[i].capacity * l[i].interval_us)
      end
      store(KEYS[1], tats_us, #l, rate, l.adapt, slots)
    end
  end
  local _, wait_us = reserve(tats_us, l, 1)
  return { was_cut, wait_us, available(tats_us, l, slots), 1, now_us, rate.f, rate.starting and 1 or 0 }
elseif op ~= 'peek' then
  return redis.error_reply('bucket.lua: unknown operation ' .. tostring(op))
end

-- BucketMath.decide's PEEK (after a penalty: the state it left, for one token); -1 when every slot is held
local _, wait_us = reserve(tats_us, l, tokens)
return { full(l, slots) and -1 or (wait_us == 0 and 1 or 0), wait_us, available(tats_us, l, slots), 1, now_us }
