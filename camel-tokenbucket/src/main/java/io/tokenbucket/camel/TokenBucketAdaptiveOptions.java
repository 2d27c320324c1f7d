package io.tokenbucket.camel;

import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * The options of the adaptive rate (AIMD), grouped: {@code adaptive} turns it on, {@code adaptiveKeys} chooses the
 * keys, the others say how far and how fast a key's rate moves. Options of the {@code tokenbucket:} endpoint like
 * any other ({@link TokenBucketConfiguration} extends this class); they are checked, and turned into the
 * {@code io.tokenbucket.math.Adaptive} the limits carry, by {@code TokenBucketLimitSource}.
 */
@UriParams
public abstract class TokenBucketAdaptiveOptions {

    @UriParam(label = "adaptive", defaultValue = "false", description = "Whether each key's rate adapts to feedback"
            + " (AIMD): operation throttled (send it when the target answers 429 or 503) cuts the key's rate by"
            + " adaptiveDecrease down to adaptiveFloor, and tokens granted raise it by adaptiveIncrease per refill"
            + " amount granted at the current rate, up to the configured rate, the ceiling. The rate lives with the"
            + " key's bucket (in Redis: shared by every instance). false: the configured rate always.")
    private boolean adaptive;

    // no asterisk in this text: Camel's metadata generator drops every one from descriptions
    @UriParam(label = "adaptive", description = "With adaptive: the keys whose rate adapts, as patterns separated by"
            + " commas, each a key or a glob in which an asterisk stands for any run of characters (as in keyLimits),"
            + " matched on the key as sent; the other keys keep their configured rate, and operation throttled on one"
            + " fails naming it. Lets one endpoint whose all-of acquire charges proxies, hosts and (proxy, host) pairs"
            + " together adapt the pairs alone. Default: every key.")
    private String adaptiveKeys;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: the lowest rate, as a"
            + " fraction of the configured rate, from 0.000001 to below 1; an adaptiveStart below it lowers it to"
            + " the start.")
    private double adaptiveFloor = 0.1;

    @UriParam(label = "adaptive", defaultValue = "0.5", description = "With adaptive: what a throttled signal"
            + " multiplies the rate by, above 0 and below 1 (0.5 halves it); the first signal of a key in its slow"
            + " start (adaptiveStart) halves it first (once it has doubled), then multiplies it by this.")
    private double adaptiveDecrease = 0.5;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: what one increase step adds"
            + " to the rate, as a fraction of the current rate (0.1: 10 % more), from 0.000001 to 1; at least one"
            + " millionth of the configured rate. A step is earned by each"
            + " refill amount of tokens granted at the current rate: under steady demand, one step per refill"
            + " period.")
    private double adaptiveIncrease = 0.1;

    @UriParam(label = "adaptive", defaultValue = "1s", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long after a cut further throttled signals are ignored and no increase is earned (the replies"
            + " of exchanges already in flight all report the same overload), 0 to 1h.")
    private long adaptiveHold = 1000;

    @UriParam(label = "adaptive", defaultValue = "1m", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long an idle key (its bucket full all along) keeps its learned rate; once its bucket has been full"
            + " that long it is back where a new key starts (adaptiveStart) and costs nothing. A busy key that is"
            + " briefly full keeps its rate. 0 to 1d.")
    private long adaptiveMemory = 60_000;

    @UriParam(label = "adaptive", defaultValue = "1.0", description = "With adaptive: where a key without rate state"
            + " starts, as a fraction of the configured rate, from 0.000001 to 1. Below 1 it is a slow start,"
            + " as TCP's: until its first throttled signal every two increase steps (two refill periods at the"
            + " current rate, so that a target's burst cannot hide a rate twice its limit) double the key's rate (up"
            + " to the configured rate), and the first signal halves it (once it has doubled), then multiplies it by"
            + " adaptiveDecrease, and ends"
            + " the start; from then on AIMD. Finds a limit far below the configured rate in a few signals instead of"
            + " seconds of refusals at the configured rate. A start below adaptiveFloor lowers the floor to it."
            + " 1 (the default): a new key starts at the configured rate.")
    private double adaptiveStart = 1.0;

    /** Whether each key's rate adapts to throttled signals and success. Default false. */
    public boolean isAdaptive() {
        return adaptive;
    }

    /** Sets whether each key's rate adapts to throttled signals and success. Default false. */
    public void setAdaptive(boolean adaptive) {
        this.adaptive = adaptive;
    }

    /** With adaptive, the patterns of the keys whose rate adapts, separated by commas; null (the default): all. */
    public String getAdaptiveKeys() {
        return adaptiveKeys;
    }

    /** Sets the patterns of the keys whose rate adapts (keys or globs with an asterisk, separated by commas). */
    public void setAdaptiveKeys(String adaptiveKeys) {
        this.adaptiveKeys = adaptiveKeys;
    }

    /**
     * Where a key without adaptive rate state starts, as a fraction of the configured rate; below 1, a slow start.
     * Default 1.0 (at the configured rate).
     */
    public double getAdaptiveStart() {
        return adaptiveStart;
    }

    /**
     * Sets where a key without adaptive rate state starts, a fraction of the configured rate from 0.000001 to 1 (a
     * start below adaptiveFloor lowers the floor to it); below 1 every two increase steps double the rate until the first
     * throttled signal, which halves it (once it has doubled) and cuts it by adaptiveDecrease. Default 1.0.
     */
    public void setAdaptiveStart(double adaptiveStart) {
        this.adaptiveStart = adaptiveStart;
    }

    /** The lowest adaptive rate, as a fraction of the configured rate. Default 0.1. */
    public double getAdaptiveFloor() {
        return adaptiveFloor;
    }

    /**
     * Sets the lowest adaptive rate, a fraction of the configured rate from 0.000001 to below 1; an adaptiveStart
     * below it lowers it to the start. Default 0.1.
     */
    public void setAdaptiveFloor(double adaptiveFloor) {
        this.adaptiveFloor = adaptiveFloor;
    }

    /** What a throttled signal multiplies the rate by. Default 0.5. */
    public double getAdaptiveDecrease() {
        return adaptiveDecrease;
    }

    /** Sets what a throttled signal multiplies the rate by, above 0 and below 1. Default 0.5. */
    public void setAdaptiveDecrease(double adaptiveDecrease) {
        this.adaptiveDecrease = adaptiveDecrease;
    }

    /** What one increase step adds to the rate, as a fraction of the configured rate. Default 0.1. */
    public double getAdaptiveIncrease() {
        return adaptiveIncrease;
    }

    /** Sets what one increase step adds, a fraction of the configured rate from 0.000001 to 1. Default 0.1. */
    public void setAdaptiveIncrease(double adaptiveIncrease) {
        this.adaptiveIncrease = adaptiveIncrease;
    }

    /** How long after a cut further signals are ignored, in milliseconds. Default 1000 (1s). */
    public long getAdaptiveHold() {
        return adaptiveHold;
    }

    /** Sets how long after a cut further signals are ignored, in milliseconds, 0 to 1h. Default 1s. */
    public void setAdaptiveHold(long adaptiveHold) {
        this.adaptiveHold = adaptiveHold;
    }

    /** How long an idle key (its bucket full all along) keeps its learned rate, in milliseconds. Default 60000 (1m). */
    public long getAdaptiveMemory() {
        return adaptiveMemory;
    }

    /** Sets how long an idle key (its bucket full all along) keeps its learned rate, in milliseconds, 0 to 1d. Default 1m. */
    public void setAdaptiveMemory(long adaptiveMemory) {
        this.adaptiveMemory = adaptiveMemory;
    }
}
