package io.tokenbucket.math;

import java.util.concurrent.TimeUnit;

/**
 * How a bucket's rate adapts to feedback ({@link AdaptiveMath}): the floor, where a key without state starts, the
 * cut, the increase, the hold after a cut and how long an idle key remembers its rate. Factors are in parts per
 * million ({@link #PPM}) of the configured rate, the ceiling; times are in ticks (nanoseconds).
 *
 * <p>Immutable and validated on creation; the messages name the option and the value.
 */
public final class Adaptive {

    /** The ceiling as a factor: 1,000,000 parts per million, the configured rate. */
    public static final long PPM = 1_000_000;

    /** The longest hold after a cut: one hour, in nanoseconds. */
    public static final long MAX_HOLD_TICKS = TimeUnit.HOURS.toNanos(1);

    /** The longest an idle key remembers its cut: one day, in nanoseconds. */
    public static final long MAX_MEMORY_TICKS = TimeUnit.DAYS.toNanos(1);

    /**
     * The most tokens one increase step is earned by: 10^9. A step is earned by a refill amount's worth of tokens at
     * the current rate ({@link AdaptiveMath#earn}); the cap keeps {@code tokens × factor} below 2^53 for the script.
     */
    public static final long MAX_STEP_TOKENS = 1_000_000_000L;

    private final long floorPpm;
    private final long decreasePpm;
    private final long increasePpm;
    private final long holdTicks;
    private final long memoryTicks;
    private final long startPpm;
    private final RateState fresh;

    private Adaptive(long floorPpm, long decreasePpm, long increasePpm, long holdTicks, long memoryTicks,
                     long startPpm) {
        this.floorPpm = floorPpm;
        this.decreasePpm = decreasePpm;
        this.increasePpm = increasePpm;
        this.holdTicks = holdTicks;
        this.memoryTicks = memoryTicks;
        this.startPpm = startPpm;
        this.fresh = startPpm >= PPM ? RateState.CEILING : new RateState(startPpm, 0, 0, true);
    }

    /**
     * An adaptation without a slow start: a key without state is at the ceiling ({@link #withStart} to change it).
     *
     * @param floorPpm    the lowest factor, 1 to {@code PPM - 1} (option adaptiveFloor)
     * @param decreasePpm what a cut multiplies the factor by, 1 to {@code PPM - 1} (option adaptiveDecrease)
     * @param increasePpm what one step adds to the factor, in parts per million of the factor, 1 to {@code PPM}
     *                    (option adaptiveIncrease)
     * @param holdTicks   how long after a cut further cuts are ignored, 0 to {@link #MAX_HOLD_TICKS}
     * @param memoryTicks how long a bucket full all along (idle) keeps its rate state, 0 to
     *                    {@link #MAX_MEMORY_TICKS}
     * @throws IllegalArgumentException naming the option and its value when one is out of range
     */
    public static Adaptive of(long floorPpm, long decreasePpm, long increasePpm, long holdTicks, long memoryTicks) {
        require("adaptiveFloor", floorPpm, 1, PPM - 1);
        require("adaptiveDecrease", decreasePpm, 1, PPM - 1);
        require("adaptiveIncrease", increasePpm, 1, PPM);
        require("adaptiveHold", holdTicks, 0, MAX_HOLD_TICKS);
        require("adaptiveMemory", memoryTicks, 0, MAX_MEMORY_TICKS);
        return new Adaptive(floorPpm, decreasePpm, increasePpm, holdTicks, memoryTicks, PPM);
    }

    /**
     * This adaptation with a slow start: a key without state starts at factor {@code startPpm}, and until its first
     * cut every {@link AdaptiveMath#START_STEPS} increase steps double its factor ({@link AdaptiveMath}).
     *
     * @param startPpm from {@link #floorPpm()} to {@link #PPM} (option adaptiveStart; {@code PPM}, the default, is
     *                 no slow start: a key without state is at the ceiling)
     * @throws IllegalArgumentException naming adaptiveStart, adaptiveFloor and their values when out of range
     */
    public Adaptive withStart(long startPpm) {
        if (startPpm < floorPpm || startPpm > PPM) {
            throw new IllegalArgumentException("adaptiveStart must be between adaptiveFloor (" + floorPpm + " ppm) and "
                    + PPM + " ppm, was " + startPpm + " ppm");
        }
        return new Adaptive(floorPpm, decreasePpm, increasePpm, holdTicks, memoryTicks, startPpm);
    }

    private static void require(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + value);
        }
    }

    /** The lowest factor, in parts per million of the ceiling. */
    public long floorPpm() {
        return floorPpm;
    }

    /** What a cut multiplies the factor by, in parts per million. */
    public long decreasePpm() {
        return decreasePpm;
    }

    /** What one increase step adds to the factor, in parts per million of the factor ({@link AdaptiveMath#increaseStep}). */
    public long increasePpm() {
        return increasePpm;
    }

    /** Ticks after a cut during which further cuts are ignored and no increase is earned. */
    public long holdTicks() {
        return holdTicks;
    }

    /**
     * Ticks a bucket that stays full (idle) keeps its rate state: once it has been full that long (since its latest
     * {@code tat}) it is back at {@link #fresh()}.
     */
    public long memoryTicks() {
        return memoryTicks;
    }

    /** Where a key without state starts, in parts per million of the ceiling; {@link #PPM} (the default): there. */
    public long startPpm() {
        return startPpm;
    }

    /**
     * The rate state of a key without one: {@code RateState(startPpm, 0, 0, startPpm < PPM)}, which is
     * {@link RateState#CEILING} without a slow start. A store keeps no rate state equal to it, so idle keys cost
     * nothing.
     */
    public RateState fresh() {
        return fresh;
    }

    /** True when {@code rate} is {@link #fresh()}: nothing to store. */
    public boolean isFresh(RateState rate) {
        return fresh.equals(rate);
    }

    /**
     * The tokens one increase step takes at the ceiling for {@code limits}: the first limit's refill amount, at most
     * {@link #MAX_STEP_TOKENS}.
     */
    public static long stepTokens(Limits limits) {
        return Math.min(limits.get(0).refillAmount(), MAX_STEP_TOKENS);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Adaptive a && floorPpm == a.floorPpm && decreasePpm == a.decreasePpm
                && increasePpm == a.increasePpm && holdTicks == a.holdTicks && memoryTicks == a.memoryTicks
                && startPpm == a.startPpm;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(floorPpm) * 31 + Long.hashCode(decreasePpm) * 17 + Long.hashCode(increasePpm) * 7
                + Long.hashCode(holdTicks) * 3 + Long.hashCode(memoryTicks) * 5 + Long.hashCode(startPpm);
    }

    /**
     * For example {@code adaptive floor 100000 ppm, decrease 500000 ppm, increase 50000 ppm, hold 1000000000 ticks,
     * memory 60000000000 ticks, start 1000000 ppm}.
     */
    @Override
    public String toString() {
        return "adaptive floor " + floorPpm + " ppm, decrease " + decreasePpm + " ppm, increase " + increasePpm
                + " ppm, hold " + holdTicks + " ticks, memory " + memoryTicks + " ticks, start " + startPpm + " ppm";
    }
}
