package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Outcome;

/**
 * What an endpoint's exchanges met, counted without locks: the one source of the endpoint's JMX attributes,
 * its dev console entry and its Micrometer meters.
 *
 * <p>Every acquire that reaches its store ends in exactly one outcome: passed at once
 * ({@link #getImmediate()}), passed after a wait ({@link #getDelayed()}), {@link #getRejected() rejected},
 * failed because the store did not answer or refused ({@link #getStoreErrors()}), or {@link #getAbandoned() abandoned}
 * while waiting (its producer stopped). {@link #getAdmitted()} is the first two together. An exchange whose
 * headers are refused never reaches its store and is in none of them.
 *
 * <p>Applications read it; the methods that count ({@code admitted}, {@code rejected}, {@code storeBatch}...) are
 * public for the component's own packages only.
 */
public final class TokenBucketStatistics {

    // each outcome its own adder, never a difference of two: a difference read while another thread counts can
    // step back, and a Micrometer counter that steps back reads as a reset
    private final LongAdder immediate = new LongAdder();
    private final LongAdder delayed = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder storeErrors = new LongAdder();
    private final LongAdder abandoned = new LongAdder();
    private final LongAdder rebooked = new LongAdder();
    private final LongAdder inFlight = new LongAdder();
    private final LongAdder slotWaiting = new LongAdder();
    /** The moving mean of the in-flight slots' hold times, in nanoseconds; -1 before the first release. */
    private final AtomicLong slotHoldNanos = new AtomicLong(-1);
    private final LongAdder waitNanos = new LongAdder();
    private final LongAdder storeBatches = new LongAdder();
    private final LongAdder storeBatched = new LongAdder();
    private volatile LongConsumer onStoreBatch = size -> { };
    private final Map<String, KeyCounts> keys = new ConcurrentHashMap<>();
    private volatile int maxKeys;
    private volatile Consumer<String> onNewKey = key -> { };
    private final LongAdder cuts = new LongAdder();
    private final LongAdder ignoredSignals = new LongAdder();
    /** The rate each signalled key reported last, and when (nanoTime): at most {@link #RECENT_KEYS} keys. */
    private final Map<String, long[]> recentRates = new ConcurrentHashMap<>();

    /** The least wait a refusal for want of an in-flight slot reports, in milliseconds: 1. */
    public static final long MIN_SLOT_WAIT_MILLIS = 1;

    /** The wait such a refusal reports before any slot of the endpoint has been given back, in milliseconds: 1000. */
    public static final long UNKNOWN_SLOT_WAIT_MILLIS = 1000;

    /** How many keys' last reported rates are kept for {@link #getLowestRecentRate()}: 1000. */
    public static final int RECENT_KEYS = 1000;

    /** How long a key's reported rate counts as recent: one minute. */
    public static final long RECENT_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** Admitted and rejected exchanges of one key, kept only when per-key counting is on. */
    public static final class KeyCounts {
        private final LongAdder admitted = new LongAdder();
        private final LongAdder rejected = new LongAdder();

        /** Exchanges of the key that got their tokens. */
        public long getAdmitted() {
            return admitted.sum();
        }

        /** Exchanges of the key that did not. */
        public long getRejected() {
            return rejected.sum();
        }
    }

    /**
     * Counts per key too, for the first {@code maxKeys} keys seen (0: not at all); {@code onNewKey} hears of
     * each key as it starts being counted.
     */
    public void countPerKey(int maxKeys, Consumer<String> onNewKey) {
        this.onNewKey = onNewKey;
        this.maxKeys = maxKeys;
    }

    /** The per-key counts, for the keys counted. */
    public Map<String, KeyCounts> getKeys() {
        return keys;
    }

    private KeyCounts key(String key) {
        if (maxKeys == 0) {
            return null;
        }
        KeyCounts counts = keys.get(key);
        if (counts == null && keys.size() < maxKeys) {
            KeyCounts fresh = new KeyCounts();
            counts = keys.putIfAbsent(key, fresh);
            if (counts == null) {
                counts = fresh;
                onNewKey.accept(key);
            }
        }
        return counts;
    }

    public void admitted(String key, long waitedNanos) {
        if (waitedNanos > 0) {
            waitNanos.add(waitedNanos);
            delayed.increment();
        } else {
            immediate.increment();
        }
        KeyCounts counts = key(key);
        if (counts != null) {
            counts.admitted.increment();
        }
    }

    public void rejected(String key) {
        rejected.increment();
        KeyCounts counts = key(key);
        if (counts != null) {
            counts.rejected.increment();
        }
    }

    /**
     * A throttled signal on {@code key} answered with {@code a}: counted, and the rate it left kept as the key's
     * recent rate. Past {@link #RECENT_KEYS} keys, the ones not heard from within {@link #RECENT_NANOS} are dropped
     * first; a new key finding none to drop is not kept (the counts still are).
     */
    public void throttled(String key, Outcome a) {
        if (a.cut()) {
            cuts.increment();
        } else {
            ignoredSignals.increment();
        }
        long now = System.nanoTime();
        if (recentRates.size() >= RECENT_KEYS && !recentRates.containsKey(key)) {
            recentRates.values().removeIf(v -> now - v[1] >= RECENT_NANOS);
            if (recentRates.size() >= RECENT_KEYS) {
                return;
            }
        }
        recentRates.put(key, new long[] {a.factorPpm(), now});
    }

    /** Throttled signals received (operation throttled), whether they cut or were ignored within the hold. */
    public long getThrottledSignals() {
        return cuts.sum() + ignoredSignals.sum();
    }

    /** Throttled signals ignored because the last cut on their key was within adaptiveHold. */
    public long getIgnoredSignals() {
        return ignoredSignals.sum();
    }

    /** Throttled signals that cut a key's rate. */
    public long getRateCuts() {
        return cuts.sum();
    }

    /**
     * The lowest rate (a fraction of the configured rate) that a throttled signal left on a key within the last
     * {@link #RECENT_NANOS}, of at most {@link #RECENT_KEYS} keys; 1.0 when none. It is the rate right after the
     * signal, not what increases have made of it since (ask the key: operation rate, or JMX rateOfKey).
     */
    public double getLowestRecentRate() {
        List<Map.Entry<String, Double>> lowest = getRecentRates(1);
        return lowest.isEmpty() ? 1.0 : lowest.get(0).getValue();
    }

    /** The keys whose throttled signals are recent, with the rate each left (fraction), lowest first, at most n. */
    public List<Map.Entry<String, Double>> getRecentRates(int n) {
        long now = System.nanoTime();
        return recentRates.entrySet().stream().filter(e -> now - e.getValue()[1] < RECENT_NANOS)
                .map(e -> Map.entry(e.getKey(), (double) e.getValue()[0] / Adaptive.PPM))
                .sorted(Map.Entry.comparingByValue()).limit(n).toList();
    }

    public void storeError() {
        storeErrors.increment();
    }

    /** An exchange took in-flight slots ({@code +1}) or gave them back ({@code -1}). */
    public void inFlight(int change) {
        inFlight.add(change);
    }

    /** An exchange began ({@code +1}) or stopped ({@code -1}) waiting for an in-flight slot. */
    public void slotWaiting(int change) {
        slotWaiting.add(change);
    }

    /**
     * An exchange gave back the in-flight slots it had held for {@code nanos} nanoseconds (from their grant): a
     * moving mean of the hold times, each weighing an eighth, so that it follows a change of the work's pace.
     */
    public void slotHeld(long nanos) {
        long held = Math.max(0, nanos);
        slotHoldNanos.getAndUpdate(mean -> mean < 0 ? held : mean + (held - mean) / 8); // both from 0: no overflow
    }

    /**
     * The wait a refusal for want of an in-flight slot reports, in nanoseconds: the longer of {@code tokenWaitNanos}
     * (the wait the tokens alone would have) and the time this endpoint's exchanges typically hold their slots (the
     * moving mean of {@link #slotHeld}), at least {@value #MIN_SLOT_WAIT_MILLIS} ms, or
     * {@value #UNKNOWN_SLOT_WAIT_MILLIS} ms before one has been given back. A slot's release time is unknown (it comes
     * when an exchange ends): this is a hint for a retry, never 0.
     */
    public long slotWaitNanos(long tokenWaitNanos) {
        long mean = slotHoldNanos.get();
        long hint = mean < 0 ? TimeUnit.MILLISECONDS.toNanos(UNKNOWN_SLOT_WAIT_MILLIS)
                : Math.max(TimeUnit.MILLISECONDS.toNanos(MIN_SLOT_WAIT_MILLIS), mean);
        return Math.max(hint, tokenWaitNanos);
    }

    /** Exchanges of this instance holding in-flight slots now. */
    public long getInFlight() {
        return inFlight.sum();
    }

    /** Exchanges of this instance waiting for an in-flight slot now. */
    public long getSlotWaiting() {
        return slotWaiting.sum();
    }

    public void abandoned() {
        abandoned.increment();
    }

    /** A waiter released past its lateness bound reserved again. */
    public void rebooked() {
        rebooked.increment();
    }

    /** One reservation call to Redis carrying {@code size} reservations (1: it went alone). */
    public void storeBatch(long size) {
        storeBatches.increment();
        storeBatched.add(size);
        onStoreBatch.accept(size);
    }

    /** Hears the size of every reservation call to Redis as it is sent (a meter's record); must not block. */
    public void onStoreBatch(LongConsumer listener) {
        this.onStoreBatch = listener;
    }

    /** Reservation calls sent to Redis while batching (store=redis, redisBatching=true), each of 1 or more. */
    public long getStoreBatches() {
        return storeBatches.sum();
    }

    /**
     * Mean reservations per reservation call to Redis: 1 at low load, more as reservations queue behind calls
     * in flight; 0 when none was sent (a local store, or redisBatching=false).
     */
    public double getMeanStoreBatchSize() {
        long n = storeBatches.sum();
        return n == 0 ? 0 : (double) storeBatched.sum() / n;
    }

    /** Exchanges that got their tokens (at once or after a wait), check mode's allowed ones included. */
    public long getAdmitted() {
        return immediate.sum() + delayed.sum();
    }

    /** Of the admitted exchanges, those that passed at once. */
    public long getImmediate() {
        return immediate.sum();
    }

    /** Of the admitted exchanges, those that waited for their tokens. */
    public long getDelayed() {
        return delayed.sum();
    }

    /** Exchanges that did not get their tokens: rejected, over maxWait, or check mode's not allowed. */
    public long getRejected() {
        return rejected.sum();
    }

    /**
     * Acquires that failed because the store did not answer (Redis down or too slow, onStoreError=fail) or refused
     * (a missing permission, a script error: under every policy). Those the allow or local policy answered are
     * admitted or rejected like any other; {@code FallbackBucketStore} counts them.
     */
    public long getStoreErrors() {
        return storeErrors.sum();
    }

    /** Exchanges that were still waiting when their producer stopped: failed, their tokens refunded. */
    public long getAbandoned() {
        return abandoned.sum();
    }

    /**
     * Waiters released past their lateness bound ({@code maxLateness}, or their keys' token interval if longer: the
     * JVM or machine stalled) that reserved again; each is one store call more.
     */
    public long getRebooked() {
        return rebooked.sum();
    }

    /** Nanoseconds the delayed exchanges waited, in all. */
    public long getWaitNanos() {
        return waitNanos.sum();
    }

    /** Mean wait of the delayed exchanges in milliseconds, 0 when none waited. */
    public double getMeanWaitMillis() {
        long n = delayed.sum();
        return n == 0 ? 0 : waitNanos.sum() / 1e6 / n;
    }
}
