package io.tokenbucket.math;

/**
 * One token-bucket limit: a capacity of {@code capacity} tokens (the burst), refilled by {@code refillAmount}
 * tokens every {@code refillPeriod} ticks.
 *
 * <p>The math works with the <em>interval</em> {@code T}: the ticks one token takes to come back,
 * {@code refillPeriod / refillAmount} rounded <em>up</em> to a whole tick. Rounding up means a bucket can
 * only ever be a hair slower than configured, never faster: the sustained rate is at most one token per
 * {@code T}. With nanosecond ticks the relative error is below 10<sup>-6</sup> for any rate under 1,000
 * tokens per millisecond. The {@code burst} is {@code capacity × T}: how far ahead of now a bucket's
 * {@code tat} may run before a reservation has to wait.
 *
 * <p>Instances are immutable and validated on creation; the messages name the option and the value.
 */
public final class Limit {

    /**
     * The largest burst ({@code capacity × T}), in ticks: {@code Long.MAX_VALUE / 4}, 73 years of nanoseconds. It
     * leaves room for a debt of a burst plus {@link BucketMath#MAX_WAIT_TICKS} plus another burst without overflow.
     */
    public static final long MAX_BURST_TICKS = Long.MAX_VALUE / 4;

    private final long capacity;
    private final long refillAmount;
    private final long refillPeriod;
    private final long interval;
    private final long burst;

    /** A limit with a given interval, checked by the caller ({@link #withInterval}). */
    private Limit(long capacity, long refillAmount, long refillPeriod, long interval) {
        this.capacity = capacity;
        this.refillAmount = refillAmount;
        this.refillPeriod = refillPeriod;
        this.interval = interval;
        this.burst = capacity * interval;
    }

    private Limit(long capacity, long refillAmount, long refillPeriod) {
        this.capacity = capacity;
        this.refillAmount = refillAmount;
        this.refillPeriod = refillPeriod;
        this.interval = Math.max(1, ceilDiv(refillPeriod, refillAmount));
        long b;
        try {
            b = Math.multiplyExact(capacity, interval);
        } catch (ArithmeticException e) {
            b = Long.MAX_VALUE;
        }
        if (b > MAX_BURST_TICKS) {
            throw new IllegalArgumentException("capacity " + capacity + " with a refill of " + refillAmount
                    + " per " + refillPeriod + " ticks takes longer than " + MAX_BURST_TICKS
                    + " ticks to fill: lower capacity or refill faster");
        }
        this.burst = b;
    }

    /**
     * A limit of {@code capacity} tokens refilled at {@code refillAmount} per {@code refillPeriod} ticks.
     *
     * @param capacity     the bucket size in tokens (the burst), at least 1
     * @param refillAmount tokens added back per period, at least 1
     * @param refillPeriod the period in ticks, at least 1
     * @throws IllegalArgumentException naming the option and its value when one is out of range, or when the
     *                                  bucket would take longer than {@link #MAX_BURST_TICKS} to fill
     */
    public static Limit of(long capacity, long refillAmount, long refillPeriod) {
        requireAtLeastOne("capacity", capacity);
        requireAtLeastOne("refillAmount", refillAmount);
        requireAtLeastOne("refillPeriod", refillPeriod);
        return new Limit(capacity, refillAmount, refillPeriod);
    }

    private static void requireAtLeastOne(String name, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be at least 1, was " + value);
        }
    }

    /**
     * Refuses this limit on a clock of {@code grainTicks}-tick steps when one token per interval rounded up to a whole
     * step loses more than 1 % of the rate written ({@code refillAmount} per {@code refillPeriod}), the share a store
     * may under-serve: 300000000 per 10^9 ticks is one token every 4 ticks on a 1-tick clock, 17 % slower, and every
     * 1000 on a 1000-tick clock.
     *
     * @param grainTicks the clock's step, at least 1
     * @throws IllegalArgumentException naming the refill, the interval the clock would keep and how much slower it is
     */
    public void requireRateAt(long grainTicks) {
        long rounded = ceilDiv(interval, grainTicks) * grainTicks; // interval is at most MAX_BURST_TICKS
        double slower = 1 - refillPeriod / ((double) rounded * refillAmount);
        if (slower > 0.01) {
            throw new IllegalArgumentException("refill " + refillAmount + " per " + refillPeriod + " ticks comes to"
                    + " one token every " + rounded + " ticks on a clock of " + grainTicks + "-tick steps, "
                    + Math.round(slower * 100) + " % slower: refill more slowly or count tokens in larger units");
        }
    }

    /** {@code x / y} rounded up, for {@code y > 0} (Java 17 has no {@code Math.ceilDiv}). */
    static long ceilDiv(long x, long y) {
        return -Math.floorDiv(-x, y);
    }

    /**
     * This limit with one token per {@code intervalTicks} instead ({@link AdaptiveMath#scaled}): same capacity and
     * refill amount, a slower refill.
     *
     * @param intervalTicks at least 1, with {@code capacity × intervalTicks} at most {@link #MAX_BURST_TICKS}
     */
    Limit withInterval(long intervalTicks) {
        if (intervalTicks == interval) {
            return this;
        }
        if (intervalTicks < 1 || intervalTicks > MAX_BURST_TICKS / capacity) {
            throw new IllegalArgumentException("interval " + intervalTicks + " out of range for " + this);
        }
        return new Limit(capacity, refillAmount, refillPeriod, intervalTicks);
    }

    /** The bucket size in tokens. */
    public long capacity() {
        return capacity;
    }

    /** Tokens added back per {@link #refillPeriod()}. */
    public long refillAmount() {
        return refillAmount;
    }

    /** The refill period in ticks. */
    public long refillPeriod() {
        return refillPeriod;
    }

    /** Ticks one token takes to come back ({@code T}), rounded up, at least 1. */
    public long interval() {
        return interval;
    }

    /** Ticks a full bucket's worth of tokens takes to come back ({@code capacity × T}). */
    public long burst() {
        return burst;
    }

    /**
     * Ticks that {@code tokens} tokens take to come back ({@code tokens × T}).
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity: such a request can
     *                                  never be satisfied
     */
    public long cost(long tokens) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        if (tokens > capacity) {
            throw new IllegalArgumentException("tokens " + tokens + " exceeds capacity " + capacity
                    + ": such a request can never be satisfied");
        }
        return tokens * interval;
    }

    /**
     * Gives {@code tokens} tokens back: moves the state back by {@code tokens × T}, never before
     * {@code nowTicks}. A bucket cannot hold more than its capacity, so any number of tokens may be given back
     * (more than one bucketful too: reservations booked ahead are given back with it); the refund stops at full.
     *
     * @param tokens at least 1
     * @return the new state, in ticks
     * @throws IllegalArgumentException when {@code tokens} is below 1
     */
    public long refund(long tatTicks, long nowTicks, long tokens) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        long debtTicks = BucketMath.debt(tatTicks, nowTicks);
        if (debtTicks == 0) {
            return tatTicks;
        }
        // tokens × T is only computed when it is below the debt, so it cannot overflow
        return tokens > debtTicks / interval ? nowTicks : nowTicks + (debtTicks - tokens * interval);
    }

    /** Whole tokens available at {@code nowTicks} in a bucket of state {@code tatTicks}, between 0 and capacity. */
    public long available(long tatTicks, long nowTicks) {
        return Math.max(0, (burst() - BucketMath.debt(tatTicks, nowTicks)) / interval);
    }

    /**
     * Makes a bucket unavailable for {@code penaltyTicks}: no token until {@code nowTicks + penaltyTicks}, then
     * one, then one per interval (the bucket refills from empty). A longer debt already owed is kept. A penalty
     * longer than {@link BucketMath#MAX_WAIT_TICKS} counts as that long.
     *
     * @return the new state, in ticks
     * @throws IllegalArgumentException when {@code penaltyTicks} is negative
     */
    public long penalize(long tatTicks, long nowTicks, long penaltyTicks) {
        if (penaltyTicks < 0) {
            throw new IllegalArgumentException("penalty must not be negative, was " + penaltyTicks);
        }
        long cappedPenaltyTicks = Math.min(penaltyTicks, BucketMath.MAX_WAIT_TICKS);
        long debtTicks = Math.max(BucketMath.debt(tatTicks, nowTicks), cappedPenaltyTicks + burst() - interval);
        return nowTicks + debtTicks;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Limit other && capacity == other.capacity && refillAmount == other.refillAmount
                && refillPeriod == other.refillPeriod;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(capacity) * 961 + Long.hashCode(refillAmount) * 31 + Long.hashCode(refillPeriod);
    }

    /** For example {@code 5 tokens, refill 5 per 1000000000 ticks}. */
    @Override
    public String toString() {
        return capacity + " tokens, refill " + refillAmount + " per " + refillPeriod + " ticks";
    }
}
