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

    @UriParam(label = "adaptive", defaultValue = "false", description = "Whether each key's rate adapts (AIMD):"
            + " operation throttled, sent on a 429 or 503, cuts it by adaptiveDecrease down to adaptiveFloor;"
            + " granted tokens raise it by adaptiveIncrease up to the configured rate. The rate is shared through"
            + " Redis like the bucket.")
    private boolean adaptive;

    // no asterisk in this text: Camel's metadata generator drops every one from descriptions
    @UriParam(label = "adaptive", description = "With adaptive: the keys whose rate adapts, keys or globs separated"
            + " by commas (as in keyLimits); the other keys keep their configured rate, and throttled on one fails."
            + " Default: every key.")
    private String adaptiveKeys;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: the lowest rate, as a fraction"
            + " of the configured rate, from 0.000001 to below 1.")
    private double adaptiveFloor = 0.1;

    @UriParam(label = "adaptive", defaultValue = "0.5", description = "With adaptive: what a throttled signal"
            + " multiplies the rate by, above 0 and below 1.")
    private double adaptiveDecrease = 0.5;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: what one step adds to the rate,"
            + " as a fraction of the current rate, from 0.000001 to 1; a step per refill amount of tokens granted"
            + " (one per refill period under steady demand).")
    private double adaptiveIncrease = 0.1;

    @UriParam(label = "adaptive", defaultValue = "1s", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long after a cut further throttled signals are ignored (replies already in flight report the"
            + " same overload), 0 to 1h.")
    private long adaptiveHold = 1000;

    @UriParam(label = "adaptive", defaultValue = "1m", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long a key whose bucket stays full keeps its learned rate before it starts anew, 0 to 1d.")
    private long adaptiveMemory = 60_000;

    @UriParam(label = "adaptive", defaultValue = "1.0", description = "With adaptive: where a new key's rate starts,"
            + " as a fraction of the configured rate, from 0.000001 to 1. Below 1 it is a slow start: the rate"
            + " doubles every two refill periods until the first throttled signal halves it. 1 (the default): the"
            + " configured rate.")
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
