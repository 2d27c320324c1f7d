package io.tokenbucket.math;

/**
 * An adaptive rate: additive increase, multiplicative decrease (AIMD), as TCP's congestion avoidance and Netflix's
 * concurrency-limits {@code AIMDLimit} adapt a window, here adapting a bucket's refill between a floor and the
 * configured rate (the ceiling).
 *
 * <p><b>The model.</b> A bucket with an {@link Adaptive} has, besides its {@code tat}s, a {@link RateState}: a
 * factor {@code f} in parts per million of the configured rate, from {@code floor} to 1. Every decision on the
 * bucket uses its limits {@link #scaled} by {@code f}: each limit keeps its capacity and refills at {@code f} times
 * its configured rate, its interval {@code T / f} rounded up. What changes {@code f}:
 * <ul>
 * <li><b>A cut</b> ({@link #cut}), on a {@code throttled} signal (the target answered 429 or 503):
 *     {@code f = max(floor, f × decrease)}, and the bucket is emptied at the new rate ({@link #emptied}): the
 *     next token comes one new interval later, so no burst follows a signal that says "too much". Reservations
 *     already booked beyond that keep their slots.</li>
 * <li><b>The rate measured between two signals.</b> At a signal the target's allowance is used up; at the next
 *     one it is used up again, so what was sent in between, over that time, is its limit (less if the key sent
 *     less than it could). A cut past the slow start after more than {@link #MEASURE_TOKENS} tokens granted since
 *     the last cut ({@link RateState#granted()}) measures {@code r = (granted - 1) / (now - cutAt)} as a factor of
 *     the configured rate (of the limit that binds a sustained rate, {@link #sustainedInterval}) and goes to
 *     {@code max(floor, 0.9 × min(f, r))} ({@link #MEASURED_SHARE_PPM}), remembering {@code 1.1 × min(f, r)}
 *     ({@link #MEASURED_MEMORY_PPM}, at most the ceiling) instead of the factor it came at.</li>
 * <li><b>The hold.</b> Many exchanges are in flight when the target starts refusing, and each brings its own 429
 *     back; they all report the one overload. As TCP cuts at most once per round trip, a cut within {@code hold}
 *     of the last cut is ignored, and no increase is earned during the hold either (what was admitted then was
 *     admitted into the overload).</li>
 * <li><b>An increase</b> ({@link #earn}) is earned by success, counted without a round trip of its own: every
 *     granted token is a credit, and a refill amount's worth of tokens at the current rate
 *     ({@code ceil(stepTokens × f)}, at least 1) earns one step, {@code f = min(1, f + increase × f)}
 *     ({@link #increaseStep}): the increase is a share of the current rate, not of the ceiling, so a key probes
 *     above the rate it found at the same pace whether its ceiling is twice that rate or ten times. Under
 *     sustained demand that is one step per refill period, whatever the current rate. A grant is counted as a
 *     success because a failure would come back as a {@code throttled} signal.</li>
 * <li><b>The memory of the last cut</b> ({@link RateState#maxPpm()}, TCP CUBIC's {@code W_max}): a cut
 *     remembers the factor {@code m} it came at, where the target's limit was met (a slow start's cut less: see
 *     below; a measured cut 1.1 of its measure). Below
 *     {@code 0.9 m} ({@link #PLATEAU_PPM}) one step goes all the way there (back fast after a cut deeper
 *     than that); from there to {@code m} a step is a quarter of the increase (it holds just below the limit it
 *     found, where a target's burst refills); beyond {@code m} a step is at least a quarter of the way past it,
 *     so it probes slowly at first and then faster (the limit moved up). A target whose burst hides a rate above
 *     its limit draws its 429 above the limit, and {@code 0.9} of that can still be above it: a cut below
 *     {@code 0.95 m} ({@link #DEEPER_BELOW_PPM}) is taken from the factor times the decrease and remembers that (as
 *     is a 429 the rate did not cause, such as requests a stall released together), so one more signal gets below
 *     the limit; a cut from higher moves {@code m} to where it came.</li>
 * </ul>
 * <b>Slow start.</b> A key without rate state is at {@link Adaptive#fresh()}: factor {@code start}
 * ({@link Adaptive#startPpm()}), <em>starting</em>. While starting there is no hold, and each {@link #START_STEPS}
 * steps (earned as above: two refill periods at the current rate) double the factor instead, up to the ceiling:
 * TCP's slow start, which finds a limit far below the ceiling in a few doublings instead of spending many refusals
 * at the ceiling. Two periods, not one: a target's burst (nginx's {@code limit_req burst}) of a period's worth at
 * its limit hides a rate twice the limit for one period, so a doubling per period would go on to four times the
 * limit before the first signal, and the halving would land at twice it. The first cut while starting halves the
 * factor (back to the last rate that drew no signal, as TCP's {@code ssthresh = cwnd / 2}; not while it is still
 * at the start, where no rate has passed yet: a start at the target's limit, refused once by a chance bunching of
 * requests, is cut by the decrease alone, not to half the limit) and then multiplies it by the decrease as any cut
 * does (at least the floor), ends the start and begins the hold; from then on the rules
 * above. The decrease matters there: the signal says the target's own allowance (its burst) is used up, and a rate
 * at the last one that drew no signal, which may be the target's limit itself, never lets it refill, so the next
 * requests that arrive a little early are refused too. That cut remembers {@link #START_MEMORY_PPM} of the factor
 * the signal came at (the limit lies between half of it and it): the climb goes in one step to 1.21 times the halved
 * factor, so a limit up to there is used at once and one below it draws its signal early, where the next cut
 * measures it.
 * Reaching the ceiling by doubling does not end the start. With {@code start = 1} (the default) a key starts at the ceiling, not starting: AIMD alone.
 *
 * <p><b>Forgetting.</b> A rate state lapses back to {@link Adaptive#fresh()} ({@link #current}) when the bucket has
 * been full for {@code memory}: {@code now - max(tat) >= memory} (a bucket whose {@code tat <= now} has been full
 * since {@code tat}). Only a really idle key forgets: a busy key that is briefly full keeps what it learned. A
 * state equal to the fresh one is not kept, so idle keys still cost nothing (a Redis key with a rate state expires
 * at {@code max(tat) + memory}, the local sweep drops it then). A rate that increases stays within the ceiling,
 * and the state is never rescaled, so the bucket never holds more tokens than at the configured rate: every bound
 * of the configured limits still holds.
 *
 * <p>{@link BucketMath#decide} applies these parts to every key whose limits adapt. All functions are pure, on
 * ticks and plain numbers; every product is below 2^53 (or saturated before it), so
 * {@code bucket.lua} mirrors them exactly in doubles. Factors are whole parts per million.
 */
public final class AdaptiveMath {

    private static final long PPM = Adaptive.PPM;

    /**
     * While starting, the steps' worth of credit one doubling takes: 2, so a key runs at each rate for two refill
     * periods (at most {@link Adaptive#MAX_STEP_TOKENS} tokens) before it doubles.
     */
    public static final long START_STEPS = 2;

    /**
     * With a remembered cut, what share of {@link #increaseStep} a step takes from just below it to it, and what
     * share of the way beyond it a step takes at least: 4 ({@link #climb}).
     */
    public static final long HOLD_SHARE = 4;

    /**
     * With a remembered cut at {@code m}, where the climb back stops being fast and holds: {@code 0.9 m}, in parts
     * per million of {@code m} ({@link #climb}).
     */
    public static final long PLATEAU_PPM = 900_000;

    /**
     * What a slow start's cut remembers, in parts per million of the factor it came at: 0.67. Its doubling drew the
     * signal, so the limit lies between half that factor (the last one that drew none) and it; the climb goes in one
     * step to {@link #PLATEAU_PPM} of this, 1.21 times the last factor that drew none ({@link #climb}), so a limit up
     * to there is used at once and one below it draws its signal early, where the next cut measures it.
     */
    public static final long START_MEMORY_PPM = 670_000;

    /**
     * A cut measures the rate sent since the last cut when more than this many tokens were granted since then: 4
     * ({@link #cut}). Fewer say too little: the measure is off by up to one token over the time.
     */
    public static final long MEASURE_TOKENS = 4;

    /** Where a measured cut puts the factor: 0.9 of the measure (or of the factor, if lower), in parts per million. */
    public static final long MEASURED_SHARE_PPM = 900_000;

    /** What a measured cut remembers: 1.1 of the measure (or of the factor, if lower), in parts per million. */
    public static final long MEASURED_MEMORY_PPM = 1_100_000;

    /**
     * The most tokens a rate state counts since its last cut ({@link RateState#granted()}): 10^15; more count as
     * this many. It keeps the count and a grant added to it below 2^53 for the script.
     */
    public static final long MAX_GRANTED = 1_000_000_000_000_000L;

    /**
     * A cut below this share of the remembered factor {@code m} goes one decrease deeper: 0.95, half the way from
     * where the last cut put the factor ({@code 0.9 m}, the slow part of the climb) back to {@code m}. A signal that
     * soon says the last cut did not get below the limit; one later, a limit that moved ({@link #cut}).
     */
    public static final long DEEPER_BELOW_PPM = 950_000;

    private AdaptiveMath() {
    }

    /**
     * The rate state to decide with at {@code nowTicks}: {@code stored}, or {@link Adaptive#fresh()} when there is
     * none or when the bucket has been full for {@link Adaptive#memoryTicks()} ({@link #idleTicks}). A stored
     * factor below the floor (written with a lower one) is raised to the floor; a starting one below the start
     * (written with a lower one) is raised to the start, and with no slow start configured ({@code start = 1}) a
     * starting state is the ceiling's: a key that has seen no cut starts where the configuration says.
     *
     * @param stored   the stored state, or null for none
     * @param tatTicks the bucket's states, one per limit
     */
    public static RateState current(RateState stored, long[] tatTicks, long nowTicks, Adaptive adaptive) {
        if (stored == null || idleTicks(tatTicks, nowTicks) >= adaptive.memoryTicks()) {
            return adaptive.fresh();
        }
        if (stored.starting()) {
            if (adaptive.startPpm() >= PPM) {
                return RateState.CEILING;
            }
            // the start is at least the floor, so this raises a starting state to both
            return stored.factorPpm() < adaptive.startPpm()
                    ? new RateState(adaptive.startPpm(), stored.credit(), stored.cutAtTicks(), true) : stored;
        }
        if (stored.isCeiling()) {
            return RateState.CEILING;
        }
        if (stored.factorPpm() < adaptive.floorPpm()) {
            // written under a lower adaptiveFloor (an instance not yet changed on the same Redis): this key's
            // limits never go below their floor; its credit is below the threshold at the higher factor too
            return new RateState(adaptive.floorPpm(), stored.credit(), stored.cutAtTicks(), false, stored.maxPpm(),
                    stored.granted());
        }
        return stored;
    }

    /**
     * How long the bucket has been full at {@code nowTicks}: {@code now - max(tat)}, by wrapping difference (the
     * smallest of {@code now - tat} over the limits); negative while it owes time.
     */
    public static long idleTicks(long[] tatTicks, long nowTicks) {
        long idle = Long.MAX_VALUE;
        for (long tat : tatTicks) {
            idle = Math.min(idle, nowTicks - tat);
        }
        return idle;
    }

    /**
     * The interval of one token at factor {@code factorPpm}: {@code ceil(intervalTicks × PPM / factorPpm)}, but never
     * more than {@code maxBurstTicks / capacity} (a slower one saturates there), so the scaled burst stays in range.
     *
     * @param intervalTicks the configured interval, with {@code capacity × intervalTicks <= maxBurstTicks}
     * @param factorPpm     1 to {@link Adaptive#PPM}
     */
    public static long scaledInterval(long intervalTicks, long capacity, long factorPpm, long maxBurstTicks) {
        if (factorPpm >= PPM) {
            return intervalTicks;
        }
        long cap = maxBurstTicks / capacity;
        long q = intervalTicks / factorPpm;
        long r = intervalTicks % factorPpm;
        if (q > cap / PPM) {
            return cap;
        }
        // q × PPM <= cap, and the rest adds at most PPM: no overflow; r × PPM < 10^12
        long s = q * PPM + Limit.ceilDiv(r * PPM, factorPpm);
        return Math.min(s, cap);
    }

    /** {@code limits} at factor {@code factorPpm}: each limit's interval {@link #scaledInterval scaled}. */
    public static Limits scaled(Limits limits, long factorPpm) {
        if (factorPpm >= PPM) {
            return limits;
        }
        Limit[] scaled = new Limit[limits.size()];
        for (int i = 0; i < scaled.length; i++) {
            Limit l = limits.get(i);
            scaled[i] = l.withInterval(scaledInterval(l.interval(), l.capacity(), factorPpm, Limit.MAX_BURST_TICKS));
        }
        Limits at = Limits.of(scaled).withAdaptive(limits.adaptive());
        return limits.inFlight() > 0 ? at.withInFlight(limits.inFlight()) : at; // the slots do not adapt
    }

    /** True while a cut holds: less than the hold time ago, never while starting (no cut yet) nor at the ceiling. */
    public static boolean holding(RateState rate, long nowTicks, Adaptive adaptive) {
        return !rate.starting() && !rate.isCeiling() && nowTicks - rate.cutAtTicks() < adaptive.holdTicks();
    }

    /**
     * A {@code throttled} signal at {@code nowTicks}: the factor times the decrease, never below the floor, a hold
     * from now, no credit, no tokens counted, the factor it came at remembered ({@link RateState#maxPpm()}). Below
     * the remembered factor's {@link #DEEPER_BELOW_PPM} (the last cut did not get below the limit) the cut is taken
     * from the factor times the decrease, which it remembers. While starting, the factor halved if it has doubled
     * since the start (above {@link Adaptive#startPpm()}: back to the last rate that drew no signal) and then times
     * the decrease (at least the floor), remembering {@link #START_MEMORY_PPM} of the factor it came at; this ends
     * the start. Past the start and below the ceiling, with more than {@link #MEASURE_TOKENS} tokens granted since
     * the last cut and time passed since it, the cut is measured instead: with {@code m} the lower of the factor
     * and {@link #measuredPpm}{@code (granted - 1, intervalTicks, now - cutAt)} (at least 1 ppm), the factor becomes
     * {@code max(floor, m × MEASURED_SHARE_PPM / PPM)} and remembers {@code min(PPM, m × MEASURED_MEMORY_PPM / PPM)}.
     * Answers {@code rate} itself (the same instance) while the last cut holds: then the signal is ignored.
     *
     * @param intervalTicks the configured interval of the limit that binds a sustained rate
     *                      ({@link #sustainedInterval}), in the ticks of {@code nowTicks}; 0 for none (no measure)
     */
    public static RateState cut(RateState rate, long nowTicks, Adaptive adaptive, long intervalTicks) {
        if (holding(rate, nowTicks, adaptive)) {
            return rate;
        }
        long f = rate.factorPpm();
        long elapsed = nowTicks - rate.cutAtTicks();
        if (!rate.starting() && !rate.isCeiling() && rate.granted() > MEASURE_TOKENS && intervalTicks > 0
                && elapsed > 0) {
            // the target's allowance was used up at the last cut and is again now: what the key sent in between,
            // over the time, is the target's limit (less if the key sent less than it could), within one token
            long m = Math.max(1, Math.min(f, measuredPpm(rate.granted() - 1, intervalTicks, elapsed)));
            return new RateState(Math.max(adaptive.floorPpm(), m * MEASURED_SHARE_PPM / PPM), 0, nowTicks, false,
                    Math.min(PPM, m * MEASURED_MEMORY_PPM / PPM)); // m at most 10^6: products below 2^53
        }
        long from = f;
        long remembered = f;
        if (rate.starting() && f > adaptive.startPpm()) {
            // back to the last rate that drew no signal, then cut as any signal cuts (below the host's limit, not
            // on it: the 429 says its burst is used up, and only a rate below the limit lets it refill). The limit
            // lies between that rate and twice it: the climb aims a little above it. Still at the start there is
            // no such rate, and the signal says no more than any other: cut as it does
            from = f / 2;
            remembered = f * START_MEMORY_PPM / PPM; // < 10^12
        } else if (!rate.starting() && f < rate.maxPpm() * DEEPER_BELOW_PPM / PPM) {
            // a signal before the climb from the last cut is half the way back to where that one came: that cut,
            // taken from a rate the target's burst hid, did not get below the limit; one more decrease does (a
            // rate many decreases above it would draw one signal each)
            from = f * adaptive.decreasePpm() / PPM;
            remembered = from;
        }
        return new RateState(Math.max(adaptive.floorPpm(), from * adaptive.decreasePpm() / PPM), 0, nowTicks, false,
                remembered);
    }

    /**
     * The rate of {@code tokens} in {@code elapsedTicks} as parts per million of one token per {@code intervalTicks},
     * at most {@link Adaptive#PPM}: {@code min(PPM, floor(tokens × intervalTicks × PPM / elapsedTicks))}, with
     * {@code tokens × intervalTicks} and {@code elapsedTicks} both shifted right until the time is below 2^32 first
     * (a measure to 2^-31), so that no product passes 2^53 whatever the interval, the tokens and the time.
     *
     * @param tokens        from 0
     * @param intervalTicks from 1
     * @param elapsedTicks  from 1
     */
    public static long measuredPpm(long tokens, long intervalTicks, long elapsedTicks) {
        if (tokens >= Limit.ceilDiv(elapsedTicks, intervalTicks)) {
            return PPM; // tokens × interval >= elapsed: at least the configured rate
        }
        long sent = tokens * intervalTicks; // below elapsedTicks: no overflow
        int shift = Math.max(0, 32 - Long.numberOfLeadingZeros(elapsedTicks));
        return (sent >> shift) * PPM / (elapsedTicks >> shift); // (sent >> shift) < 2^32: the product below 2^53
    }

    /**
     * The configured interval of the limit of {@code limits} that binds a sustained rate: the longest (every limit
     * is scaled by the same factor, so the slowest refill is the key's rate); 0 for none (in-flight limit only).
     */
    public static long sustainedInterval(Limits limits) {
        long longest = 0;
        for (int i = 0; i < limits.size(); i++) {
            longest = Math.max(longest, limits.get(i).interval());
        }
        return longest;
    }

    /**
     * The states of a bucket just cut to the rate of {@code scaledLimits}: each limit empty (its debt at least its
     * scaled burst), so its next token comes one scaled interval from now; a longer debt is kept.
     */
    public static long[] emptied(long[] tatTicks, long nowTicks, Limits scaledLimits) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = nowTicks + Math.max(BucketMath.debt(tatTicks[i], nowTicks), scaledLimits.get(i).burst());
        }
        return next;
    }

    /**
     * {@code tokens} granted at {@code nowTicks}: credit towards the next increase. Each {@code ceil(stepTokens × f)}
     * tokens (at least 1) of credit add a step ({@link #climb}, of the factor at the start of the call) to the
     * factor; while starting, each {@code ceil(START_STEPS × stepTokens × f)} (at most
     * {@link Adaptive#MAX_STEP_TOKENS}) double it,
     * up to the ceiling (where the state is {@link RateState#CEILING}, or the ceiling still starting, without
     * credit). Nothing is earned at the ceiling or while a cut holds. Past the start and below the ceiling the tokens
     * are counted ({@link RateState#granted()}, at most {@link #MAX_GRANTED}), during the hold too.
     *
     * @param tokens     the tokens granted, from 1
     * @param stepTokens {@link Adaptive#stepTokens}: at most {@link Adaptive#MAX_STEP_TOKENS}
     */
    public static RateState earn(RateState rate, long tokens, long stepTokens, long nowTicks, Adaptive adaptive) {
        if (rate.isCeiling()) {
            return rate;
        }
        long granted = rate.starting() ? rate.granted() : counted(rate.granted(), tokens);
        if (holding(rate, nowTicks, adaptive)) {
            return new RateState(rate.factorPpm(), rate.credit(), rate.cutAtTicks(), false, rate.maxPpm(), granted);
        }
        // while starting, a doubling takes START_STEPS steps' worth (rounded up once): long enough to drain a
        // target's burst of up to a refill period at its limit, which would hide a rate twice the limit for one step
        // and let the next doubling come before the first signal
        long periods = rate.starting() ? START_STEPS : 1;
        long threshold = Math.min(Adaptive.MAX_STEP_TOKENS,
                Math.max(1, Limit.ceilDiv(periods * stepTokens * rate.factorPpm(), PPM))); // the product below 2^53
        long credit = rate.credit() + tokens; // a credit below 10^9 plus a capacity: no overflow
        long steps = credit / threshold;
        if (steps == 0) {
            return new RateState(rate.factorPpm(), credit, rate.cutAtTicks(), rate.starting(), rate.maxPpm(),
                    granted);
        }
        if (rate.starting()) {
            long f = rate.factorPpm();
            for (long s = 0; s < steps && f < PPM; s++) { // at most 20 doublings from 1 ppm to the ceiling
                f = Math.min(PPM, 2 * f);
            }
            return new RateState(f, f >= PPM ? 0 : credit % threshold, rate.cutAtTicks(), true, rate.maxPpm(),
                    granted);
        }
        long f = climb(rate, steps, adaptive);
        return f >= PPM ? RateState.CEILING
                : new RateState(f, credit % threshold, rate.cutAtTicks(), false, rate.maxPpm(), granted);
    }

    /** {@code granted + tokens}, at most {@link #MAX_GRANTED}. */
    private static long counted(long granted, long tokens) {
        return tokens >= MAX_GRANTED - granted ? MAX_GRANTED : granted + tokens;
    }

    /**
     * The factor after {@code steps} increase steps from {@code rate} past its slow start, each the step at the
     * factor where the call starts: without a remembered cut ({@link RateState#maxPpm()} 0) {@link #increaseStep};
     * with one at {@code m}, below {@code p = m × PLATEAU_PPM / PPM} all the way to {@code p} in one step; from {@code p} to {@code m} a quarter of it (at least 1 ppm), not beyond
     * {@code m}; from {@code m} on the larger of it and a quarter of the way past {@code m}. At most the ceiling.
     */
    public static long climb(RateState rate, long steps, Adaptive adaptive) {
        long f = rate.factorPpm();
        long m = rate.maxPpm();
        long base = increaseStep(f, adaptive);
        long step = base;
        long upTo = PPM;
        if (m > 0) {
            long plateau = m * PLATEAU_PPM / PPM; // at most 10^12
            if (f < plateau) {
                step = plateau - f; // one step all the way
                upTo = plateau;
            } else if (f < m) {
                step = Math.max(1, base / HOLD_SHARE);
                upTo = m;
            } else {
                step = Math.max(base, (f - m) / HOLD_SHARE);
            }
        }
        // steps × step may pass 2^63 for a large grant at a tiny factor: compare by division first
        return steps >= Limit.ceilDiv(upTo - f, step) ? upTo : f + steps * step;
    }

    /**
     * What one increase step adds at factor {@code factorPpm}: {@link Adaptive#increasePpm()} of it (the current
     * rate, not the ceiling), at least 1 ppm: {@code max(1, floor(factorPpm × increasePpm / PPM))}. So a key climbs
     * at the same pace relative to the rate it found whether its ceiling is twice or five times that rate.
     */
    public static long increaseStep(long factorPpm, Adaptive adaptive) {
        return Math.max(1, factorPpm * adaptive.increasePpm() / PPM); // both at most 10^6
    }
}
