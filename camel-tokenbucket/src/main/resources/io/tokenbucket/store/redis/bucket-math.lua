-- Part of bucket.lua, pasted into its general() where it says --#include bucket-math.lua (after
-- bucket-state.lua, whose functions it uses): BucketMath and AdaptiveMath step for step, and the one general
-- reservation, reserve_all.

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

  -- AdaptiveMath, step for step; a rate is nil for fixed limits, which have none

  -- the ceiling past (or without) a slow start: RateState.CEILING
  local CEILING = { f = PPM, credit = 0, cut_us = 0, starting = false, max = 0, granted = 0 }
  -- AdaptiveMath.MAX_GRANTED: the most tokens counted since the last cut
  local MAX_GRANTED = 1e15

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
        return { f = adapt.start, credit = rate.credit, cut_us = rate.cut_us, starting = true, max = 0, granted = 0 }
      end
      return rate
    end
    if rate.f >= PPM then
      return CEILING
    end
    if rate.f < adapt.floor then
      return { f = adapt.floor, credit = rate.credit, cut_us = rate.cut_us, starting = false, max = rate.max,
               granted = rate.granted }
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

  -- AdaptiveMath.earn: credit for n granted tokens, a step per ceil(step * f / PPM) of them, which adds the increase
  -- of the current factor (while starting, a doubling per two steps' worth); past the start the tokens counted since
  -- the last cut (at most MAX_GRANTED), during its hold too
  local function earn(rate, n, adapt)
    if rate == nil or rate.f >= PPM then
      return rate
    end
    local granted = rate.granted
    if not rate.starting then
      granted = n >= MAX_GRANTED - granted and MAX_GRANTED or granted + n -- below 2^53: n is at most 2^51
    end
    if holding(rate, adapt) then
      return { f = rate.f, credit = rate.credit, cut_us = rate.cut_us, starting = false, max = rate.max,
               granted = granted }
    end
    -- while starting AdaptiveMath.START_STEPS (2) steps' worth, rounded up once, at most Adaptive.MAX_STEP_TOKENS
    local periods = rate.starting and 2 or 1
    local threshold = math.min(1e9, math.max(1, math.ceil(periods * adapt.step * rate.f / PPM)))
    local credit = rate.credit + n
    local steps = math.floor(credit / threshold)
    if steps == 0 then
      return { f = rate.f, credit = credit, cut_us = rate.cut_us, starting = rate.starting, max = rate.max,
               granted = granted }
    end
    if rate.starting then
      local f, s = rate.f, 0
      while s < steps and f < PPM do -- at most 20 doublings from 1 ppm to the ceiling
        f = math.min(PPM, 2 * f)
        s = s + 1
      end
      return { f = f, credit = f >= PPM and 0 or credit - steps * threshold, cut_us = rate.cut_us, starting = true,
               max = rate.max, granted = granted }
    end
    -- AdaptiveMath.climb: AdaptiveMath.increaseStep (the increase of the current factor, at least 1 ppm); with a
    -- remembered cut at m, all the way to 0.9 m (AdaptiveMath.PLATEAU_PPM) below it, a quarter of the step from
    -- there to m (AdaptiveMath.HOLD_SHARE), at least a quarter of the way past m beyond it
    local base = math.max(1, math.floor(rate.f * adapt.increase / PPM))
    local step, up_to, m = base, PPM, rate.max
    if m > 0 then
      local plateau = math.floor(m * 900000 / PPM)
      if rate.f < plateau then
        step, up_to = plateau - rate.f, plateau
      elseif rate.f < m then
        step, up_to = math.max(1, math.floor(base / 4)), m
      else
        step = math.max(base, math.floor((rate.f - m) / 4))
      end
    end
    local f = up_to
    if steps < math.ceil((up_to - rate.f) / step) then
      f = rate.f + steps * step
    end
    if f >= PPM then
      return CEILING
    end
    return { f = f, credit = credit - steps * threshold, cut_us = rate.cut_us, starting = false, max = m,
             granted = granted }
  end

  -- AdaptiveMath.measuredPpm: the rate of tokens in elapsed_us as ppm of one token per interval_us, at most PPM;
  -- tokens * interval_us (below elapsed_us) and elapsed_us halved until the time is below 2^32, each exactly
  local function measured_ppm(tokens, interval_us, elapsed_us)
    if tokens >= math.ceil(elapsed_us / interval_us) then -- exact: elapsed_us < 2^52, interval_us <= 2^51
      return PPM
    end
    local sent, e = tokens * interval_us, elapsed_us
    while e >= 4294967296 do
      sent, e = math.floor(sent / 2), math.floor(e / 2)
    end
    return math.floor(sent * PPM / e)
  end

  -- AdaptiveMath.sustainedInterval: the longest configured interval, 0 for none
  local function sustained_interval(l)
    local longest = 0
    for i = 1, #l do
      longest = math.max(longest, l[i].interval_us)
    end
    return longest
  end

  -- AdaptiveMath.cut: the factor times the decrease, at least the floor, held, the factor it came at remembered;
  -- below AdaptiveMath.DEEPER_BELOW_PPM (0.95) of the remembered factor, from the factor times the decrease, which
  -- it remembers; while starting, the factor
  -- halved if it has doubled since the start, then times the decrease, which ends the start, remembering
  -- AdaptiveMath.START_MEMORY_PPM (0.67) of the factor it came at; past the start, below the ceiling, with more than
  -- AdaptiveMath.MEASURE_TOKENS (4) tokens since the last cut, measured: to 0.9 (MEASURED_SHARE_PPM) of the lower of
  -- the factor and the rate sent since (of the limit of interval_us), remembering 1.1 of it (MEASURED_MEMORY_PPM);
  -- answers rate itself while holding
  local function cut(rate, adapt, interval_us)
    if holding(rate, adapt) then
      return rate
    end
    local elapsed_us = now_us - rate.cut_us
    if not rate.starting and rate.f < PPM and rate.granted > 4 and interval_us > 0 and elapsed_us > 0 then
      local m = math.max(1, math.min(rate.f, measured_ppm(rate.granted - 1, interval_us, elapsed_us)))
      return { f = math.max(adapt.floor, math.floor(m * 900000 / PPM)), credit = 0, cut_us = now_us,
               starting = false, max = math.min(PPM, math.floor(m * 1100000 / PPM)), granted = 0 }
    end
    local from, m = rate.f, rate.f
    if rate.starting and rate.f > adapt.start then
      from, m = math.floor(rate.f / 2), math.floor(rate.f * 670000 / PPM)
    elseif not rate.starting and rate.f < math.floor(rate.max * 950000 / PPM) then
      from = math.floor(rate.f * adapt.decrease / PPM)
      m = from
    end
    return { f = math.max(adapt.floor, math.floor(from * adapt.decrease / PPM)), credit = 0, cut_us = now_us,
             starting = false, max = m, granted = 0 }
  end

  -- A reservation on several keys (BucketMath.decide's RESERVE, steps 1, 3 to 5): the freest candidate group and
  -- every shared key, all charged or none. Its ARGV from pos: tokens n, the longest wait, 'C', its number of keys,
  -- the number of candidates c, optionally 'G' and the number of keys of each candidate's group (its candidate key
  -- and the keys charged with it; without 'G' one each), then the limits of each key in turn; its keys are
  -- keys[ki..]: each group in turn, its candidate key first, then the shared keys. Every key is decided at its
  -- current rate (AdaptiveMath.current, scaled), a group's wait is the longest of its keys' and the shared keys',
  -- its tokens the fewest of its keys'. Each key is charged at the common release instant now + wait
  -- (max(tat, now + wait) + n*T), not from its own base, so a key whose own wait is shorter is not handed out early;
  -- a key whose limits adapt earns credit for the tokens as a reservation of its own would (AdaptiveMath.earn).
  -- Appends its reply as reserve gives it: granted, the wait, the fewest tokens of the charged keys, then the chosen
  -- candidate's position (1..c) when c > 1. Answers the positions in ARGV and KEYS after it.
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
      out[o + 1], out[o + 2], out[o + 3] = best_full and -1 or 0, best_wait_us, fewest
      if candidates > 1 then
        out[o + 4] = best
      end
      -- it will wait: a ticket on each of its keys with an in-flight limit, full or not, all in this one step, so
      -- two waiters of the same keys stand in the same order on each (a ticket on the full keys alone let x stand
      -- first on a and y first on b, each refused for the other's ticket for ever); a key held for a waiter that
      -- waits on another is what this instance's own queue does (TokenBucketSlots)
      if best_full and max_wait_us > 0 then -- with candidates: on every candidate's keys, whichever frees first
        for k = 1, count do
          if l[k].inflight ~= nil and l[k].inflight.ticket_us > 0 then
            charge(key[k], tats_us[k], rate[k], l[k].adapt, copy(l[k], held[k], false, true))
          end
        end
      end
      return p, ki + count
    end
    -- BucketMath.decide's step 5 on the chosen group's keys and every shared key, each at its rate, earning credit
    local release_us = now_us + best_wait_us
    local from, to = first[best], first[best] + sizes[best] - 1
    fewest = nil
    for k = 1, count do
      if (k >= from and k <= to) or k > grouped then
        local next_us = {}
        for i = 1, #sl[k] do
          next_us[i] = math.max(tats_us[k][i], release_us) + n * sl[k][i].interval_us
        end
        local taken = l[k].inflight == nil and held[k] or copy(l[k], held[k], true, false)
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
    out[o + 1], out[o + 2], out[o + 3] = 1, best_wait_us, fewest
    if candidates > 1 then
      out[o + 4] = best
    end
    return p, ki + count
  end
