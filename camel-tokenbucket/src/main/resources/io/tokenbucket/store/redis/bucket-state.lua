-- Part of bucket.lua, pasted into its general() where it says --#include bucket-state.lua (Redis scripts
-- have no require; BucketScript joins the parts into the one script Redis runs): how a key's state is read from
-- its limits' ARGV and its stored value, its in-flight slots and tickets, and written back.

  -- the limits of each key: optionally 'F' and its in-flight limit, then optionally 'A' and its adaptation, then m
  -- and m pairs of C and T, from ARGV[pos]; answers them and the position after them
  local function read_limits(pos)
    local inflight, adapt = nil, nil
    if ARGV[pos] == 'F' then
      inflight = { n = tonumber(ARGV[pos + 1]), id = ARGV[pos + 2], lease_us = tonumber(ARGV[pos + 3]),
                   ticket_us = tonumber(ARGV[pos + 4]) }
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
  -- 'r' (nil: none; one that is not three numbers, an optional 0 or 1, after it an optional factor or 0 and after
  -- that optional tokens counted (0 to AdaptiveMath.MAX_GRANTED), or a factor out of range, counts as none)
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
      local starting = e - i >= 5 and words[i + 4] or nil
      local max, granted = 0, 0
      if e - i >= 6 then
        max = tonumber(words[i + 5])
      end
      if e - i == 7 then
        granted = tonumber(words[i + 6])
      end
      if f and credit and cut_us and f >= 1 and f <= PPM and f == math.floor(f) and credit >= 0
          and credit < 1e9 and credit == math.floor(credit) and cut_us == cut_us
          and math.abs(cut_us - now_us) < MAX_DEBT_US
          and (e - i == 4 or starting == '0' or starting == '1') and e - i <= 7
          and max and max >= 0 and max <= PPM and max == math.floor(max)
          and granted and granted >= 0 and granted <= 1e15 and granted == math.floor(granted) then
        rate = { f = f, credit = credit, cut_us = cut_us, starting = starting == '1', max = max, granted = granted }
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
  -- and free slots, and its slots after a charge (one more, of the reservation's lease, when it has a limit).
  -- slots.queue holds the waiters' tickets (Waiter), in arrival order, each expiring ticket_us after the try that
  -- placed or kept it (expired ones are dropped on reading, as leases are)
  -- Waiter.ahead: the tickets ahead of this reservation's own, all of them when it holds none
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
  -- Waiter.full: the held slots and the tickets ahead reach the limit
  local function full(l, slots)
    return l.inflight ~= nil and #slots + ahead(l, slots) >= l.inflight.n
  end
  -- slots (and the queue) as a new table: Waiter.queued, this reservation's ticket out, or kept at its place (or
  -- last) and renewed when ticket is true; and its slot taken when take is true
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
        next.queue[#next.queue + 1] = { id = t.id, exp_us = now_us + l.inflight.ticket_us }
        placed = true
      end
    end
    if ticket and not placed then
      next.queue[#next.queue + 1] = { id = l.inflight.id, exp_us = now_us + l.inflight.ticket_us }
    end
    if take then
      next[#next + 1] = { id = l.inflight.id, exp_us = now_us + l.inflight.lease_us }
    end
    return next
  end

  -- Adaptive.fresh: the rate state of a key without one, which is never written
  local function fresh(adapt)
    return { f = adapt.start, credit = 0, cut_us = 0, starting = adapt.start < PPM, max = 0, granted = 0 }
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
    if rate and adapt and not (rate.f == adapt.start and rate.credit == 0 and rate.cut_us == 0 -- Adaptive.isFresh
        and rate.starting == (adapt.start < PPM) and rate.max == 0 and rate.granted == 0) then
      parts[m + 1] = 'r'
      parts[m + 2] = string.format('%.0f', rate.f)
      parts[m + 3] = string.format('%.0f', rate.credit)
      parts[m + 4] = string.format('%.0f', rate.cut_us)
      parts[m + 5] = rate.starting and '1' or '0'
      if rate.max > 0 or rate.granted > 0 then -- the factor of the last cut (AdaptiveMath.climb), none as none
        parts[m + 6] = string.format('%.0f', rate.max)
      end
      if rate.granted > 0 then -- the tokens granted since the last cut (AdaptiveMath.cut), none written as none
        parts[m + 7] = string.format('%.0f', rate.granted)
      end
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
