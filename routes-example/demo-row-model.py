#!/usr/bin/env python3
"""A model of routes-example/demo-row.sh's rows, in seconds instead of a real-time run: the 6 (proxy, host)
pairs, 3 addresses x 2 hosts, each host's 3 run together from 0 s as in the demo (their first requests within
25 ms), each saturated behind its adaptive bucket (AdaptiveMath step for step: slow start, cut, hold, the memory of
the last cut, the rate measured between two cuts, the climb) against nginx's limit_req per address (DemoTarget.LimitReq). Bookings up to 100 ms
ahead (example.pairMaxWait), a few ms of jitter before the target, a 429's signal 3 ms (plus up to `delay` s) after
it. It leaves out the host and proxy limits (the rows set them out of the way), the JVM's stalls and the machine's
load: it shows what the algorithm does, not what a loaded machine adds. Prints the row's figures as demo-row.sh
does (429s in all, after 10 s, used, time), per seed.

  routes-example/demo-row-model.py LIMIT BURST FACTOR [increase=0.012] [start=0.2] [decrease=0.9] [seeds=3]
                                   [run=20 (seconds of pages at the limit)] [rule=before (the cut before its memory
                                   of a slow start's cut and its deeper cut below the last one)] [hold=0.2 (s)]
                                   [delay=0 (s, a reply's signal late by up to this)] [settle=0 (s: a candidate
                                   rule, not in AdaptiveMath: a signal this soon after the last cut is not cut deeper)]
                                   [memory=0.67 (the share a slow start's cut remembers)] [accepted= (candidates, not
                                   in AdaptiveMath: remember memory x the pair's rate of 2xx answers since the start,
                                   `since`, or over the last `window=1` s, `last`, instead of memory x the factor)]
                                   [between=0.9 (a cut past the slow start, below the ceiling, with more than
                                   `minsent=4` requests sent since the last cut measures the limit as (requests sent
                                   since then - `less=1`) over the time, the host's bucket full at both 429s, and goes
                                   to between x the lower of that and the rate, remembering `over=1.1` x it, at most
                                   the ceiling; 0: no measure)] [fast=1 (below the plateau a step goes all the way;
                                   0: half the way)] [trace=1 (print every cut)]
                                   [share=1 (a slow start's cut is adopted by the host's pairs still in theirs, a
                                   measure (between=) by those with none)] [together=1 (a cut of one pair cuts the
                                   host's others)] [stagger= (s: the host's k-th pair's slow start waits k x this, at
                                   the start rate, or until it adopts a cut; 100: one scout per host)] [wait= (s: a
                                   slow start's cut adopted holds its rate, no climb, until a measure, at most this)]
                                   [weak= (the host's pair `weakpair=0` has this share of the hidden limit)]
The defaults are AdaptiveMath as built; the options that say "not in AdaptiveMath" are candidates.
"""
import random
import sys

PPM = 1_000_000
PLATEAU, HOLD_SHARE, START_STEPS = 900_000, 4, 2
DEEPER_BELOW = 950_000


def ceil_div(a, b):
    return -((-a) // b)


class Rate:
    def __init__(self, f, credit, cut, starting, mx):
        self.f, self.credit, self.cut, self.starting, self.mx = f, credit, cut, starting, mx


class Tuning:
    def __init__(self, floor=50_000, decrease=900_000, increase=12_000, hold=0.2, start=200_000, before=False,
                 settle=0.0, memory=670_000, accepted='', window=1.0, between=900_000, over=1_100_000, less=1,
                 minsent=4, fast=True, trace=False, share=False, together=False, stagger=0.0, wait=0.0, weak=0.0, weak_pair=0):
        # candidates, not in AdaptiveMath: what one of a host's pairs learns, its other pairs use (host())
        self.share, self.together, self.stagger, self.wait = share, together, stagger, wait
        self.weak, self.weak_pair = weak, weak_pair  # one address's limit a share of the others'
        # a later cut to between x the rate sent since the last one (or the rate), remembering over x it
        self.between, self.over, self.less, self.minsent = between, over, less, minsent
        self.fast, self.trace = fast, trace  # below the plateau a step all the way; print every cut
        self.memory, self.accepted, self.window = memory, accepted, window  # a slow start's cut remembers
        self.floor, self.decrease, self.increase, self.hold, self.start = floor, decrease, increase, hold, start
        self.settle = settle  # a signal within this long of the last cut is not cut deeper
        self.before = before  # the cut as it was before memory and DEEPER_BELOW


def holding(r, now, a):
    return not r.starting and r.f < PPM and now - r.cut < a.hold


def cut(r, now, a, accepted=None, sent=None):  # AdaptiveMath.cut; accepted: a factor, or None
    if holding(r, now, a):
        return r
    if a.between and not r.starting and r.f < PPM and sent is not None:
        # the host's bucket was full at the last 429 and is full again at this one: what passed in between, over
        # the time, is at most its limit (equal to it when its bucket never emptied in between)
        m = min(r.f, sent)  # both factors
        return Rate(max(a.floor, m * a.between // PPM), 0, now, False, min(PPM, m * a.over // PPM))
    if a.before:
        halved = r.starting and r.f > a.start
        f = (r.f // 2 if halved else r.f) * a.decrease // PPM
        return Rate(max(a.floor, f), 0, now, False, 0 if r.starting else r.f)
    frm, m = r.f, r.f
    if r.starting and r.f > a.start:
        frm, m = r.f // 2, min(r.f, (r.f if accepted is None else accepted) * a.memory // PPM)
    elif not r.starting and r.f < r.mx * DEEPER_BELOW // PPM and now - r.cut >= a.settle:
        frm = m = r.f * a.decrease // PPM
    return Rate(max(a.floor, frm * a.decrease // PPM), 0, now, False, m)


def climb(r, steps, a):  # AdaptiveMath.climb
    f, m = r.f, r.mx
    base = max(1, f * a.increase // PPM)
    step, up_to = base, PPM
    if m > 0:
        plateau = m * PLATEAU // PPM
        if f < plateau:
            step, up_to = max(base, (plateau - f) // (1 if a.fast else 2)), plateau
        elif f < m:
            step, up_to = max(1, base // HOLD_SHARE), m
        else:
            step = max(base, (f - m) // HOLD_SHARE)
    return up_to if steps >= ceil_div(up_to - f, step) else f + steps * step


def earn(r, tokens, step_tokens, now, a):  # AdaptiveMath.earn
    if r.f >= PPM or holding(r, now, a):
        return r
    threshold = min(10**9, max(1, ceil_div((START_STEPS if r.starting else 1) * step_tokens * r.f, PPM)))
    credit = r.credit + tokens
    steps = credit // threshold
    if steps == 0:
        return Rate(r.f, credit, r.cut, r.starting, r.mx)
    if r.starting:
        f = r.f
        for _ in range(steps):
            f = min(PPM, 2 * f)
        return Rate(f, 0 if f >= PPM else credit % threshold, r.cut, True, r.mx)
    f = climb(r, steps, a)
    return Rate(PPM, 0, 0, False, 0) if f >= PPM else Rate(f, credit % threshold, r.cut, False, r.mx)


class LimitReq:  # DemoTarget.LimitReq: nginx's limit_req in thousandths of a request
    def __init__(self, rate, burst):
        self.rate, self.burst, self.excess, self.last = rate * 1000, burst * 1000, None, 0

    def admit(self, t):
        ms = int(t * 1000)
        if self.excess is None:
            self.excess, self.last = 0, ms
            return True
        e = max(0, self.excess - self.rate * max(0, ms - self.last) // 1000 + 1000)
        if e > self.burst:
            return False
        self.excess, self.last = e, ms
        return True


class Pair:
    """One (proxy, host) pair: its bucket a GCRA at the rate's factor of the ceiling, its address's limit_req."""

    def __init__(self, host, index, limit, burst, ceiling, capacity, a, rng, horizon=0.1, latency=0.003,
                 jitter=0.004, delay=0.0):
        self.host, self.index, self.a, self.rng = host, index, a, rng
        self.interval, self.step_tokens, self.capacity = 1.0 / ceiling, round(ceiling), capacity
        self.ceiling, self.horizon, self.latency, self.jitter, self.delay = ceiling, horizon, latency, jitter, delay
        self.r = Rate(a.start, 0, -1e9, a.start < PPM, 0)
        self.tat, self.t, self.target, self.hits, self.signals = 0.0, 0.0, LimitReq(limit, burst), [], []
        self.cut_at, self.sent = 0.0, 0  # the last 429 that cut (the host's bucket full then) and the requests since
        self.full = True  # whether cut_at was a 429 of this pair's own (a shared value adopted is none)
        self.measured = False  # whether this pair has a measure between two 429s of its own or adopted
        self.frozen_until = index * a.stagger  # its slow start waits (at the start rate) until then or a hint
        self.waiting_until = 0.0  # with `wait`: a first cut adopted holds the rate until a measure comes (or then)

    def next_event(self):
        return min(self.t, self.signals[0]) if self.signals else self.t

    def set_rate(self, after, at, own):
        """A new rate at `at`: a lower one empties the bucket (AdaptiveMath.emptied); own: cut by its own 429."""
        if after.f < self.r.f or own:
            self.tat = at + max(self.tat - at, self.capacity * self.interval * PPM / after.f)
        if own:
            self.cut_at, self.sent, self.full = at, 0, True
        self.r = after
        self.frozen_until = self.waiting_until = 0.0

    def signal(self):
        at = self.signals.pop(0)
        r, a = self.r, self.a
        accepted = None
        if r.starting and a.accepted:
            since = at - a.window if a.accepted == 'last' else 0.0
            answered = sum(1 for (sent, status) in self.hits
                           if status == 200 and since <= sent + self.latency <= at)
            accepted = round(answered / (at - max(since, 0.0)) / self.ceiling * PPM)
        rate_sent = None
        if self.full and at > self.cut_at and self.sent > a.minsent:
            rate_sent = int(max(0, self.sent - a.less) / (at - self.cut_at) / self.ceiling * PPM)
        after = cut(r, at, a, accepted, rate_sent)
        if after is r:
            return
        kind = 'first' if r.starting else 'between' if a.between and rate_sent is not None and r.f < PPM else 'later'
        if a.trace:
            print(f"  host {self.host} pair {self.index} cut ({kind}) at {at:6.2f} s: {r.f / PPM * self.ceiling:5.2f}/s"
                  f" -> {after.f / PPM * self.ceiling:5.2f}/s, remembers {after.mx / PPM * self.ceiling:5.2f}/s"
                  f" (sent since {self.cut_at:5.2f} s: {self.sent / max(1e-9, at - self.cut_at):5.2f}/s)")
        self.set_rate(after, at, True)
        if kind == 'between':
            self.measured = True
        return kind, after, at

    def step(self):
        """Books the next request, or moves to the time it can be booked."""
        t, a = self.t, self.a
        scaled = self.interval * PPM / self.r.f
        release = max(self.tat - (self.capacity - 1) * scaled, t)
        if release - t > self.horizon + 1e-9:
            self.t = release - self.horizon
            return
        self.tat = max(self.tat, release) + scaled
        if not (self.r.starting and t < self.frozen_until) and t >= self.waiting_until:
            self.r = earn(self.r, 1, self.step_tokens, t, a)
        self.sent += 1
        arrives = release + self.rng.random() * self.jitter
        ok = self.target.admit(arrives)
        self.hits.append((arrives, 200 if ok else 429))
        if not ok:
            self.signals.append(arrives + self.latency + self.rng.random() * self.delay)
            self.signals.sort()


def host(h, limits, burst, ceiling, capacity, seconds, a, rng, delay=0.0):
    """The host's pairs (one per proxy address, `limits` the hidden limit each address gets) run together: with
    `share`, a pair's slow start's cut is adopted by the host's pairs still in theirs, and a pair's measure between
    two 429s by those with none; with `together`, every cut of one pair cuts the others (each from its own rate)."""
    pairs = [Pair(h, i, limit, burst, ceiling, capacity, a, rng, delay=delay) for i, limit in enumerate(limits)]
    while True:
        p = min(pairs, key=Pair.next_event)
        now = p.next_event()
        if now >= seconds:
            break
        if not (p.signals and p.signals[0] <= p.t):
            p.step()
            continue
        told = p.signal()
        if not told:
            continue
        kind, after, at = told
        for q in pairs:
            if q is p:
                continue
            if a.together:
                q_after = cut(q.r, at, a)
                if q_after is not q.r:
                    q.set_rate(q_after, at, False)
                    q.full = False
            elif a.share and (kind == 'first' and q.r.starting or kind == 'between' and not q.measured):
                q.set_rate(Rate(after.f, 0, at, False, after.mx), at, False)
                q.full = False
                q.measured = kind == 'between'
                if kind == 'first' and a.wait:
                    q.waiting_until = at + a.wait
    return [hit for q in pairs for hit in q.hits]


def row(limit, burst, factor, a, seed, run=20, delay=0.0):
    rng = random.Random(seed)
    limits = [limit] * 3
    if a.weak:
        limits[a.weak_pair] = max(1, round(limit * a.weak))
    hits = sorted(hit for h in range(2)
                  for hit in host(h, limits, burst, limit * factor, 1 if limit < 10 else 2, 2 * run, a, rng,
                                  delay=delay))
    fleet = 2 * sum(limits)
    pages, ok = fleet * run, 0
    for i, (t, status) in enumerate(hits):
        ok += status == 200
        if ok == pages:
            hits = hits[:i + 1]
            break
    end = hits[-1][0]
    full = int(end)
    start = 10 if full > 10 else full // 2
    steady = [h for h in hits if start <= int(h[0]) < full]
    used = sum(1 for h in steady if h[1] == 200) / (max(1, full - start) * fleet)
    return (100 * sum(1 for h in hits if h[1] == 429) / len(hits),
            100 * sum(1 for h in steady if h[1] == 429) / max(1, len(steady)), 100 * used, end / 20)


if __name__ == '__main__':
    args = sys.argv[1:]
    limit, burst, factor = int(args[0]), int(args[1]), float(args[2])
    opts = dict(kv.split('=') for kv in args[3:])
    a = Tuning(increase=round(float(opts.get('increase', 0.012)) * PPM),
               start=round(float(opts.get('start', 0.2)) * PPM), decrease=round(float(opts.get('decrease', 0.9)) * PPM),
               before=opts.get('rule') == 'before', hold=float(opts.get('hold', 0.2)),
               settle=float(opts.get('settle', 0)), memory=round(float(opts.get('memory', 0.67)) * PPM),
               accepted=opts.get('accepted', ''), window=float(opts.get('window', 1)),
               between=round(float(opts.get('between', 0.9)) * PPM), over=round(float(opts.get('over', 1.1)) * PPM),
               less=int(opts.get('less', 1)), minsent=int(opts.get('minsent', 4)), fast=opts.get('fast', '1') == '1',
               trace=opts.get('trace') == '1', share=opts.get('share') == '1', together=opts.get('together') == '1',
               stagger=float(opts.get('stagger', 0)), weak=float(opts.get('weak', 0)),
               weak_pair=int(opts.get('weakpair', 0)), wait=float(opts.get('wait', 0)))
    for seed in range(int(opts.get('seeds', 3))):
        every, after, used, time = row(limit, burst, factor, a, seed, int(opts.get('run', 20)),
                                      float(opts.get('delay', 0)))
        print(f"{limit}/s burst {burst}, ceiling {factor}x: 429s {every:.1f} %, after 10 s {after:.1f} %, used"
              f" {used:.0f} %, time {time:.2f}")
