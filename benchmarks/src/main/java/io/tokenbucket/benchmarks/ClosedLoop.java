package io.tokenbucket.benchmarks;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The closed loop that drives a limiter under test ({@link Peer}) in the Redis drivers ({@link RedisAcquire},
 * {@link Targets}): {@code inFlight} acquires kept outstanding for a fixed time after a warm-up, each completion
 * recording its latency (HdrHistogram, nanoseconds) and issuing the next acquire on a key drawn at random from the
 * given ones (or on {@link #HOT_KEY}). Answers a {@link Run}: acquires per second and their outcomes.
 */
final class ClosedLoop {

    /** The one key of the hot-key cases. */
    static final String HOT_KEY = "hot";

    private ClosedLoop() {
    }

    /** One case: how many requests in flight, on random keys or on the one hot key. */
    record Case(String name, int inFlight, boolean hot) {
        static Case parse(String s) {
            return s.startsWith("hot") ? new Case(s, Integer.parseInt(s.substring(3)), true)
                    : new Case(s, Integer.parseInt(s), false);
        }
    }

    /**
     * One timed run of one peer on one case: completed acquires (whatever their outcome) per second of the measured
     * time, the outcomes counted, the latency of each (nanoseconds, send to completion), the first error's text (null
     * if none), how many were still unanswered 10 s after the end ({@code stuck}) and the age of the oldest one
     * unanswered when the measured time ended (nanoseconds).
     */
    record Run(double opsPerSecond, long granted, long rejected, long timeouts, long otherErrors, Histogram latency,
               String firstError, int stuck, long oldestOutstandingNanos) {
    }

    /** A limiter under test: one asynchronous acquire of one token, answering whether it was granted. */
    interface Peer extends AutoCloseable {
        String name();

        CompletableFuture<Boolean> acquire(String key, boolean hot);

        @Override
        void close();

        /** A peer called {@code name} that acquires with {@code acquire} and runs {@code close} when closed. */
        static Peer of(String name, Acquire acquire, Runnable close) {
            return new Peer() {
                @Override
                public String name() {
                    return name;
                }

                @Override
                public CompletableFuture<Boolean> acquire(String key, boolean hot) {
                    return acquire.acquire(key, hot);
                }

                @Override
                public void close() {
                    close.run();
                }
            };
        }
    }

    /** One asynchronous acquire of one token on {@code key} (or the hot key), answering whether it was granted. */
    @FunctionalInterface
    interface Acquire {
        CompletableFuture<Boolean> acquire(String key, boolean hot);
    }

    /**
     * Keeps {@code c.inFlight()} acquires outstanding: {@code warmup} s unrecorded, then {@code seconds} s
     * recorded; then stops issuing and waits (at most 10 s) for the outstanding ones.
     */
    static Run drive(Peer peer, Case c, String[] keys, double warmup, double seconds, Runnable atMeasureStart)
            throws InterruptedException {
        return drive(peer, c, keys, warmup, seconds, atMeasureStart, () -> { });
    }

    /**
     * As {@link #drive(Peer, Case, String[], double, double, Runnable)}, running {@code atMeasureEnd} when the
     * measured seconds end (before the outstanding acquires drain), so that counters read there (CPU, Redis's
     * {@code INFO}) cover the measured seconds only.
     */
    static Run drive(Peer peer, Case c, String[] keys, double warmup, double seconds, Runnable atMeasureStart,
                     Runnable atMeasureEnd) throws InterruptedException {
        Recorder recorder = new Recorder(3);
        LongAdder granted = new LongAdder();
        LongAdder rejected = new LongAdder();
        LongAdder timeouts = new LongAdder();
        LongAdder errors = new LongAdder();
        AtomicReference<String> firstError = new AtomicReference<>();
        CountDownLatch drained = new CountDownLatch(c.inFlight());
        // 0: warming up, 1: measuring, 2: stopping
        int[] phase = {0};
        Object lock = new Object();
        // when each lane's outstanding request was sent: at the end, how old the oldest still unanswered one is
        AtomicLongArray sentAt = new AtomicLongArray(c.inFlight());
        class Lane {
            final int index;

            Lane(int index) {
                this.index = index;
            }

            /**
             * Sends the lane's next acquire, and the next when it is done. A peer that answers on the calling thread
             * ({@code synchronous=true}) loops here rather than recursing.
             */
            void issue() {
                while (true) {
                    String key = c.hot() ? HOT_KEY : keys[ThreadLocalRandom.current().nextInt(keys.length)];
                    long start = System.nanoTime();
                    sentAt.set(index, start);
                    CompletableFuture<Boolean> f;
                    try {
                        f = peer.acquire(key, c.hot());
                    } catch (RuntimeException e) {
                        f = CompletableFuture.failedFuture(e);
                    }
                    if (!f.isDone()) {
                        f.whenComplete((ok, failure) -> {
                            if (done(start, ok, failure)) {
                                issue();
                            }
                        });
                        return;
                    }
                    Boolean ok = null;
                    Throwable failure = null;
                    try {
                        ok = f.join();
                    } catch (RuntimeException e) {
                        failure = e;
                    }
                    if (!done(start, ok, failure)) {
                        return;
                    }
                }
            }

            /** Records an answer; whether the lane goes on. */
            boolean done(long start, Boolean ok, Throwable failure) {
                long end = System.nanoTime();
                int p;
                synchronized (lock) {
                    p = phase[0];
                }
                if (p == 1) {
                    recorder.recordValue(end - start);
                    if (failure == null) {
                        (Boolean.TRUE.equals(ok) ? granted : rejected).increment();
                    } else {
                        Throwable t = failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure;
                        (t.getClass().getSimpleName().contains("Timeout") ? timeouts : errors).increment();
                        firstError.compareAndSet(null, t.toString());
                    }
                }
                if (p == 2) {
                    drained.countDown();
                    return false;
                }
                return true;
            }
        }
        // each lane starts on a thread of its own: a synchronous peer's lane keeps it
        for (int i = 0; i < c.inFlight(); i++) {
            Thread lane = new Thread(new Lane(i)::issue, "closed-loop-lane-" + i);
            lane.setDaemon(true);
            lane.start();
        }
        Thread.sleep(Math.round(warmup * 1000));
        long start;
        synchronized (lock) {
            atMeasureStart.run();
            recorder.getIntervalHistogram(); // drop the warm-up
            granted.reset();
            rejected.reset();
            timeouts.reset();
            errors.reset();
            phase[0] = 1;
            start = System.nanoTime();
        }
        Thread.sleep(Math.round(seconds * 1000));
        long elapsed;
        Histogram h;
        long g;
        long r;
        long t;
        long e;
        long oldest = 0;
        synchronized (lock) {
            phase[0] = 2;
            elapsed = System.nanoTime() - start;
            atMeasureEnd.run();
            h = recorder.getIntervalHistogram();
            g = granted.sum();
            r = rejected.sum();
            t = timeouts.sum();
            e = errors.sum();
            // every lane has one request outstanding, sent at sentAt (a completed one was re-sent at once), so the
            // oldest sentAt is the age of the oldest unanswered request: what the histogram of completed ones misses
            long now = System.nanoTime();
            for (int i = 0; i < c.inFlight(); i++) {
                oldest = Math.max(oldest, now - sentAt.get(i));
            }
        }
        drained.await(10, TimeUnit.SECONDS);
        return new Run((g + r + t + e) * 1e9 / elapsed, g, r, t, e, h, firstError.get(), (int) drained.getCount(),
                oldest);
    }
}
