-- One bucket operation, atomically, on the Redis clock. This is io.tokenbucket.math.BucketMath step for step,
-- in microseconds: read the state, decide, write the new state with a TTL at time-to-full, answer. Redis runs a
-- script alone, so the read, the decision and the write need no lock and no retry, whatever the contention.
--
-- 'reserve' the one reservation path: a list of reservations, decided in the order given, all at one now, each on
--           the state the ones before it left (keys may repeat). ARGV[2..] holds each reservation in turn. On one
--           key: its tokens n (1 to the smallest capacity, checked by the caller), its longest acceptable wait in
--           microseconds (the caller caps it at 365 days) and its limits (below); its key is the next of KEYS. On
--           several keys (the freest candidate or candidate group, with every shared key): n, the longest wait,
--           'C', its number of keys k, the number of candidates c, optionally 'G' and each group's size, then the
--           limits of each of its keys; its keys are the next k of KEYS, the groups in turn (each its candidate
--           first), then the shared keys. Returns the five numbers below for each reservation in turn, then the
--           Redis clock's now again, read after their work (the first now again when there is one reservation).
--           Each key is read once and written once, however many reservations it has.
-- 'peek', 'refund', 'penalize', 'throttle', 'rate', 'remove'
--           on KEYS[1]: ARGV[2] tokens n (for 'refund' any number from 1; 1 for the others but 'peek'), ARGV[3]
--           penalize: the penalty in microseconds (capped at 365 days), otherwise -1, ARGV[4..] the key's limits;
--           'remove' keeps only the key's in-flight slots (they belong to exchanges still running)
-- 'release', 'renew'
--           on every key of KEYS, with ARGV as 'peek' has it and each key's limits: the slot of the lease their
--           'F' names is dropped, or renewed to expire lease_us from now (an expired one stays gone)
-- limits    optionally 'F' and four words: the in-flight limit N, the reservation's lease id, the lease time in
--           microseconds (a key holds at most N slots; a reservation takes one with its id, expiring after the lease
--           time unless renewed) and 1 when a refusal for want of a slot takes a ticket in the key's queue (below); then their number m (0 for a key of in-flight limit only), then m pairs of capacity
--           C and interval T (the microseconds one token takes to come back, rounded up); limits whose rate adapts (AdaptiveMath) are preceded by 'A' and seven numbers:
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
-- the next step), the instant of the last cut (microseconds of the Redis clock) and 1 while starting, else 0 (a
-- state written before the slow start has no fourth number: not starting). No 'r' is a key without rate state
-- (Adaptive.fresh: at the start, starting; the ceiling without a slow start), and a rate state equal to that one
-- is not written. Its TTL is the latest tat plus the memory: the key expires when AdaptiveMath.current would forget
-- the rate (the bucket full for the memory).
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

-- The steps below the reservation loop's short branch, built only when a call needs them: making ~15 closures
-- and tables is a large share of a small call's work in Redis (BENCHMARKS.md, section 2), and most calls do not
-- need them.
local function general()
  -- the limits of each key: optionally 'F' and its in-flight limit, then optionally 'A' and its adaptation, then m
  -- and m pairs of C and T, from ARGV[pos]; answers them and the position after them
  local function read_limits(pos)
    local inflight, adapt = nil, nil
    if ARGV[pos] == 'F' then
      inflight = { n = tonumber(ARGV[pos + 1]), id = ARGV[pos + 2], lease_us = tonumber(ARGV[pos + 3]),
                   ticket = ARGV[pos + 4] == '1' }
      pos = pos + 5
    end
    if ARGV[pos] == 'A' then
      adapt = { floor = tonumber(ARGV[pos + 1]), decrease = tonumber(ARGV[pos + 2]),
                increase = tonumber(ARGV[pos + 3]), hold_us = tonumber(ARGV[pos + 4]),
                memory_us = tonumber(ARGV[pos + 5]), step = tonumber(ARGV[pos + 6]),
                start = tonumber(ARGV[pos + 7]) }
      pos = pos + 8
    end
    local m = tonumber(ARGV[pos])
    pos = pos + 1
    local l = { adapt = adapt, inflight = inflight }
    for i = 1, m do
      l[i] = { capacity = tonumber(ARGV[pos]), interval_us = tonumber(ARGV[pos + 1]) }
      pos = pos + 2
    end
    return l, pos
  end

  -- a stored state, every number of it, bounded (a word that is no number: a full limit), its rate state after
  -- 'r' (nil: none; one that is not three numbers and an optional 0 or 1, or a factor out of range, counts as none)
  -- and its in-flight slots after 's': pairs of a lease id and its expiry in microseconds of the Redis clock, the
  -- expired ones (and any that is no such pair) dropped
  local function parse(stored)
    local tats_us, words = {}, {}
    local one = stored and tonumber(stored)
    if one then -- one number, the common state: no words to split
      tats_us[1] = bounded(one)
      return tats_us, nil, {}
    end
    if stored then
      for v in string.gmatch(stored, '%S+') do
        words[#words + 1] = v
      end
    end
    local i = 1
    while i <= #words and words[i] ~= 'r' and words[i] ~= 's' do
      local tat_us = tonumber(words[i])
      tats_us[#tats_us + 1] = tat_us and bounded(tat_us) or now_us
      i = i + 1
    end
    local rate = nil
    if words[i] == 'r' then
      local e = i + 1
      while e <= #words and words[e] ~= 's' do
        e = e + 1
      end
      local f, credit, cut_us = tonumber(words[i + 1]), tonumber(words[i + 2]), tonumber(words[i + 3])
      local starting = e - i == 5 and words[i + 4] or nil
      if f and credit and cut_us and f >= 1 and f <= PPM and f == math.floor(f) and credit >= 0
          and credit < 1e9 and credit == math.floor(credit) and cut_us == cut_us
          and math.abs(cut_us - now_us) < MAX_DEBT_US
          and (e - i == 4 or starting == '0' or starting == '1') and e - i <= 5 then
        rate = { f = f, credit = credit, cut_us = cut_us, starting = starting == '1' }
      end
      i = e
    end
    local slots = { queue = {} }
    local into = slots
    if words[i] == 's' then
      for j = i + 1, #words do
        if words[j] == 'q' then -- the waiters' tickets follow, in arrival order
          into = slots.queue
        elseif words[j + 1] ~= nil and words[j + 1] ~= 'q' and (j - i) % 2 == (into == slots and 1 or 0) then
          local exp_us = tonumber(words[j + 1])
          if exp_us and exp_us > now_us and exp_us < now_us + MAX_DEBT_US then
            into[#into + 1] = { id = words[j], exp_us = exp_us }
          end
        end
      end
    end
    return tats_us, rate, slots
  end

  -- BucketMath.decide's in-flight parts: whether a key of limits l holding slots is full, the fewest of its tokens
  -- and free slots, and its slots after a charge (one more, of the reservation's lease, when it has a limit)
  -- and in-flight keys on a shared store keep a queue of tickets of waiting reservations (slots.queue, in arrival
  -- order, each expiring TICKET_US after its last try): a key is full for a reservation when its held slots and the
  -- tickets ahead of its own (all of them, when it has none) reach the limit, so a freed slot goes to the oldest
  -- waiter of whichever instance, not to whoever asks first
  local TICKET_US = 500000
  local function ahead(l, slots)
    local queue, n = slots.queue or {}, 0
    for j = 1, #queue do
      if queue[j].id == l.inflight.id then
        return n
      end
      n = n + 1
    end
    return n
  end
  local function full(l, slots)
    return l.inflight ~= nil and #slots + ahead(l, slots) >= l.inflight.n
  end
  -- slots (and the queue) as a new table: without this reservation's ticket; taking its slot when take is true;
  -- with its ticket at its place in the queue (or last), renewed, when ticket is true
  local function copy(l, slots, take, ticket)
    local next = { queue = {} }
    for j = 1, #slots do
      next[j] = slots[j]
    end
    local placed = false
    for _, t in ipairs(slots.queue or {}) do
      if t.id ~= l.inflight.id then
        next.queue[#next.queue + 1] = t
      elseif ticket then
        next.queue[#next.queue + 1] = { id = t.id, exp_us = now_us + TICKET_US }
        placed = true
      end
    end
    if ticket and not placed then
      next.queue[#next.queue + 1] = { id = l.inflight.id, exp_us = now_us + TICKET_US }
    end
    if take then
      next[#next + 1] = { id = l.inflight.id, exp_us = now_us + l.inflight.lease_us }
    end
    return next
  end
  local function with_lease(l, slots)
    return l.inflight == nil and slots or copy(l, slots, true, false)
  end
  local function with_ticket(l, slots)
    return copy(l, slots, false, true)
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

  -- BucketMath.available: the fewest whole tokens of any limit, and with slots, at most the free slots (a key of
  -- no rate limit answers its free slots)
  local function available(tats_us, l, slots)
    local fewest = nil
    for i = 1, #l do
      local burst_us = l[i].capacity * l[i].interval_us
      local a = math.max(0, math.floor((burst_us - math.max(0, tats_us[i] - now_us)) / l[i].interval_us))
      if fewest == nil or a < fewest then
        fewest = a
      end
    end
    if l.inflight ~= nil and slots ~= nil then
      local f = math.max(0, l.inflight.n - #slots)
      if fewest == nil or f < fewest then
        fewest = f
      end
    end
    return fewest or 0
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
  local function store(key, tats_us, m, rate, adapt, slots)
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
    local queue = slots and slots.queue or {}
    -- a section of lease ids and expiries after its marker; the key lives until the last of them expires
    local function section(marker, leases)
      parts[#parts + 1] = marker
      for j = 1, #leases do
        parts[#parts + 1] = leases[j].id
        parts[#parts + 1] = string.format('%.0f', leases[j].exp_us)
        latest_us = math.max(latest_us, leases[j].exp_us)
      end
    end
    if slots ~= nil and (#slots > 0 or #queue > 0) then
      section('s', slots)
      if #queue > 0 then
        section('q', queue)
      end
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
    local s = { adapt = l.adapt, inflight = l.inflight }
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
  -- of the current factor (while starting, a doubling per two steps' worth)
  local function earn(rate, n, adapt)
    if rate == nil or rate.f >= PPM or holding(rate, adapt) then
      return rate
    end
    -- while starting AdaptiveMath.START_STEPS (2) steps' worth, rounded up once, at most Adaptive.MAX_STEP_TOKENS
    local periods = rate.starting and 2 or 1
    local threshold = math.min(1e9, math.max(1, math.ceil(periods * adapt.step * rate.f / PPM)))
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
    -- AdaptiveMath.increaseStep: the increase of the current factor, at least 1 ppm
    local step = math.max(1, math.floor(rate.f * adapt.increase / PPM))
    if steps > math.floor((PPM - rate.f) / step) then
      return CEILING
    end
    local f = rate.f + steps * step
    if f >= PPM then
      return CEILING
    end
    return { f = f, credit = credit - steps * threshold, cut_us = rate.cut_us, starting = false }
  end

  -- AdaptiveMath.cut: the factor times the decrease (while starting, the factor halved if it has doubled since the
  -- start, then times the decrease, which ends the start), at least the floor, held; answers rate itself while
  -- holding
  local function cut(rate, adapt)
    if holding(rate, adapt) then
      return rate
    end
    local halved = rate.starting and rate.f > adapt.start
    local f = math.floor((halved and math.floor(rate.f / 2) or rate.f) * adapt.decrease / PPM)
    return { f = math.max(adapt.floor, f), credit = 0, cut_us = now_us, starting = false }
  end

  -- A reservation on several keys (AdaptiveMath.reserveAll, BucketMath.reserveAll): the freest candidate group and
  -- every shared key, all charged or none. Its ARGV from pos: tokens n, the longest wait, 'C', its number of keys,
  -- the number of candidates c, optionally 'G' and the number of keys of each candidate's group (its candidate key
  -- and the keys charged with it; without 'G' one each), then the limits of each key in turn; its keys are
  -- keys[ki..]: each group in turn, its candidate key first, then the shared keys. Every key is decided at its
  -- current rate (AdaptiveMath.current, scaled), a group's wait is the longest of its keys' and the shared keys',
  -- its tokens the fewest of its keys'. Each key is charged at the common release instant now + wait
  -- (max(tat, now + wait) + n*T), not from its own base, so a key whose own wait is shorter is not handed out early;
  -- a key whose limits adapt earns credit for the tokens as a reservation of its own would (AdaptiveMath.earn).
  -- Appends the reply: the chosen candidate's position (1..c), the fewest tokens of the charged keys. Answers the
  -- positions in ARGV and KEYS after it.
  -- A reservation on one key that the short branch does not take is this with one group of one key and no
  -- 'C' header: its limits start at pos + 2.
  local function reserve_all(keys, ki, pos, n, max_wait_us, load, charge, out)
    local count, candidates, sizes, p = 1, 1, { 1 }, pos + 2
    if ARGV[pos + 2] == 'C' then
      count, candidates, p = tonumber(ARGV[pos + 3]), tonumber(ARGV[pos + 4]), pos + 5
      if ARGV[p] == 'G' then
        for c = 1, candidates do
          sizes[c] = tonumber(ARGV[p + c])
        end
        p = p + 1 + candidates
      else
        for c = 1, candidates do
          sizes[c] = 1
        end
      end
    end
    local key, l, sl, tats_us, rate, held = {}, {}, {}, {}, {}, {}
    for k = 1, count do
      key[k] = keys[ki + k - 1]
      l[k], p = read_limits(p)
      local stored_us, stored_rate
      stored_us, stored_rate, held[k] = load(key[k])
      tats_us[k] = align(stored_us, #l[k])
      rate[k] = current(stored_rate, tats_us[k], l[k])
      sl[k] = scaled(l[k], rate[k])
    end
    local first, grouped = {}, 0
    for c = 1, candidates do
      first[c] = grouped + 1
      grouped = grouped + sizes[c]
    end
    -- the longest own wait, the fewest tokens (and free slots) and whether a key is full, of keys from..to (0, nil
    -- and false when there are none)
    local function span(from, to)
      local wait_us, fewest_of, any_full = 0, nil, false
      for k = from, to do
        local _, w = reserve(tats_us[k], sl[k], n)
        wait_us = math.max(wait_us, w)
        local a = available(tats_us[k], sl[k], held[k])
        if fewest_of == nil or a < fewest_of then
          fewest_of = a
        end
        any_full = any_full or full(l[k], held[k])
      end
      return wait_us, fewest_of, any_full
    end
    local shared_wait_us, shared_available, shared_full = span(grouped + 1, count)
    -- the group whose wait with the shared keys' is shortest; of equals, the one with most tokens, then the first;
    -- a group with no key full before any with one
    local best, best_wait_us, best_available, best_full
    for c = 1, candidates do
      local w, a, f = span(first[c], first[c] + sizes[c] - 1)
      w = math.max(w, shared_wait_us)
      f = f or shared_full
      if best == nil or (best_full and not f)
          or (f == best_full and (w < best_wait_us or (w == best_wait_us and a > best_available))) then
        best, best_wait_us, best_available, best_full = c, w, a, f
      end
    end
    local fewest = best_available
    if shared_available ~= nil and shared_available < fewest then
      fewest = shared_available
    end
    local o = #out
    if best_full or best_wait_us > max_wait_us then
      out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = best_full and -1 or 0, best_wait_us, fewest, best,
          now_us
      -- it will wait: a ticket on each of its keys with an in-flight limit, full or not, all in this one step, so
      -- two waiters of the same keys stand in the same order on each (a ticket on the full keys alone let x stand
      -- first on a and y first on b, each refused for the other's ticket for ever); a key held for a waiter that
      -- waits on another is what this instance's own queue does (TokenBucketSlots)
      if best_full and max_wait_us > 0 then -- with candidates: on every candidate's keys, whichever frees first
        for k = 1, count do
          if l[k].inflight ~= nil and l[k].inflight.ticket then
            charge(key[k], tats_us[k], rate[k], l[k].adapt, with_ticket(l[k], held[k]))
          end
        end
      end
      return p, ki + count
    end
    -- BucketMath.reserveAt on the chosen group's keys and every shared key, each at its rate, earning credit
    local release_us = now_us + best_wait_us
    local from, to = first[best], first[best] + sizes[best] - 1
    fewest = nil
    for k = 1, count do
      if (k >= from and k <= to) or k > grouped then
        local next_us = {}
        for i = 1, #sl[k] do
          next_us[i] = math.max(tats_us[k][i], release_us) + n * sl[k][i].interval_us
        end
        local taken = with_lease(l[k], held[k])
        charge(key[k], next_us, earn(rate[k], n, l[k].adapt), l[k].adapt, taken)
        local a = available(next_us, sl[k], taken)
        if fewest == nil or a < fewest then
          fewest = a
        end
      elseif l[k].inflight ~= nil and ahead(l[k], held[k]) < #(held[k].queue or {}) then
        -- a candidate not chosen: its ticket there goes, the waiter waits no more
        charge(key[k], tats_us[k], rate[k], l[k].adapt, copy(l[k], held[k], false, false))
      end
    end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = 1, best_wait_us, fewest, best, now_us
    return p, ki + count
  end

  return { read_limits = read_limits, parse = parse, align = align, available = available, reserve = reserve,
           store = store, current = current, scaled = scaled, earn = earn, cut = cut, reserve_all = reserve_all,
           full = full, with_lease = with_lease, with_ticket = with_ticket }
end

-- 'reserve': BucketMath.decide for each reservation in turn; each key's state as the reservations before left it
-- (what a GET would read now) is read at its first reservation, and each changed key is written once at the end
if op == 'reserve' then
  local states, rates, adapts, held, written, out = {}, {}, {}, {}, {}, {}
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
        state = bounded(state)
      elseif not stored then
        state = false
      else
        g = g or general()
        state, rates[key], held[key] = g.parse(stored)
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
    if rate == nil and #tats_us == 1 and (slots == nil or (#slots == 0 and #(slots.queue or {}) == 0)) then
      states[key] = tats_us[1]
    else
      states[key] = tats_us
    end
    rates[key], adapts[key], held[key], written[key] = rate, adapt, slots, true
  end
  while ki <= #KEYS do
    members = members + 1
    local n, max_wait_us = tonumber(ARGV[pos]), tonumber(ARGV[pos + 1])
    local o = #out
    local key = KEYS[ki]
    local state = load(key)
    -- the short branch: one fixed limit on a state of at most one number without a rate state, BucketMath.decide
    -- for one key of one limit without the general steps' tables (BucketScriptBatchDifferentialTest and
    -- BucketScriptDifferentialTest run both against BucketMath: a limit count '01' takes the general steps)
    if ARGV[pos + 2] == '1' and type(state) ~= 'table' then
      ki = ki + 1
      local capacity, interval_us = tonumber(ARGV[pos + 3]), tonumber(ARGV[pos + 4])
      pos = pos + 5
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
        states[key], adapts[key], written[key] = next_us, nil, true
        out[o + 1] = 1
      end
      local a = math.floor((burst_us - (next_us - now_us)) / interval_us)
      out[o + 2], out[o + 3], out[o + 4], out[o + 5] = wait_us, a > 0 and a or 0, 1, now_us
    else
      g = g or general()
      pos, ki = g.reserve_all(KEYS, ki, pos, n, max_wait_us, load_tats, charge, out)
    end
  end
  for key in pairs(written) do
    local state = states[key]
    if type(state) == 'number' then
      -- store() of one tat without a rate state, which a reservation always leaves ahead of now: a SET
      redis.call('SET', key, string.format('%.0f', state), 'PX', math.ceil((state - now_us) / 1000))
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
  out[#out + 1] = done_us
  return out
end

local g = general()
local read_limits, parse, align, available, reserve, store, current, scaled, earn, cut, full =
    g.read_limits, g.parse, g.align, g.available, g.reserve, g.store, g.current, g.scaled, g.earn, g.cut, g.full
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
    redis.call('PUBLISH', ARGV[3], '1')
  end
  return { 1, 0, fewest, 1, now_us }
end

local tats_us, rate, slots = load(1)
local l = scaled(limits[1], rate)

if op == 'remove' then
  -- BucketMath.decide's REMOVE: the bucket full and no rate state; the slots of exchanges still running stay
  store(KEYS[1], {}, 0, nil, nil, slots)
  return { 1, 0, 0, 1, now_us }
end

if op == 'refund' then
  -- BucketMath.refund, never past full (tokens * T may be huge: the result is then now, exactly)
  for i = 1, #l do
    if tats_us[i] > now_us then
      tats_us[i] = math.max(now_us, tats_us[i] - tokens * l[i].interval_us)
    end
  end
  store(KEYS[1], tats_us, #l, rate, l.adapt, slots)
  return { 1, 0, available(tats_us, l, slots), 1, now_us }
end

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
    local after = cut(rate, l.adapt)
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

-- BucketMath.peek (after a penalty: the state it left, for one token); -1 when every slot is held
local _, wait_us = reserve(tats_us, l, tokens)
return { full(l, slots) and -1 or (wait_us == 0 and 1 or 0), wait_us, available(tats_us, l, slots), 1, now_us }
