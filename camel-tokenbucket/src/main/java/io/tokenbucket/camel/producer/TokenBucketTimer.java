package io.tokenbucket.camel.producer;

import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The component's timer: one thread that runs each task at its deadline ({@link System#nanoTime()} nanoseconds),
 * never before it.
 *
 * <p>It exists for the waiting exchanges' release times. The thread parks until the earliest deadline less a
 * short margin ({@code spinNanos}) and spins for the rest, so a release does not also pay the wake-up latency of
 * a parked thread (the kernel's timer slack and the scheduler, on the order of 0.1 ms;
 * benchmarks/results/measurement6-accuracy-timer-2026-12-01.txt has the stages). The spinning is bounded:
 * at most {@code spinNanos} per wake-up, and in total at most one eighth of the thread's time over each 100 ms,
 * so dense deadlines never turn it into a busy core (beyond the budget it parks to the deadline itself, as a
 * plain scheduler would).
 *
 * <p>Scheduling never blocks nor contends with the timer thread: a new task goes to a lock-free inbox, which
 * the timer thread alone moves into its heap; it is woken only when the new deadline is earlier than the one
 * it waits for. A cancelled task lets go of its runnable at once and is dropped when it comes due.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketTimer implements Runnable {

    /** Where the timer reads the time and how it waits; replaced in tests by a clock that only they advance. */
    public interface Clock {
        /** The current time in nanoseconds, on the scale of the deadlines ({@link System#nanoTime()}). */
        long nanoTime();

        /** Waits at most {@code nanos}, returning early on {@link LockSupport#unpark} (or spuriously). */
        void parkNanos(Object blocker, long nanos);
    }

    /** The system clock: {@link System#nanoTime()} and {@link LockSupport#parkNanos(Object, long)}. */
    public static final Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, nanos);
        }
    };

    /**
     * The default margin before a deadline at which the timer stops parking and spins: 0.2 ms, about twice a parked
     * thread's typical wake-up latency, so most wake-ups come before the deadline; the component's
     * {@code timerSpinMicros} option sets another (0 parks to each deadline).
     */
    public static final long DEFAULT_SPIN_NANOS = 200_000L;

    /** The window over which the spinning is budgeted, and the share of it the thread may spin. */
    static final long SPIN_WINDOW_NANOS = 100_000_000L;
    static final long SPIN_BUDGET_NANOS = SPIN_WINDOW_NANOS / 8;

    /** Longest single park, so that a clock jump or a lost wake-up costs at most this much. */
    private static final long MAX_PARK_NANOS = 1_000_000_000L;

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketTimer.class);

    /** A scheduled task; {@link #cancel()} it to have it not run. */
    static final class Entry {
        final long deadline;
        final long seq;
        private volatile Runnable task;

        private Entry(long deadline, long seq, Runnable task) {
            this.deadline = deadline;
            this.seq = seq;
            this.task = task;
        }

        /** Keeps the task from running (if it has not yet) and lets go of it. */
        void cancel() {
            task = null;
        }
    }

    private final Clock clock;
    private final long spinNanos;
    private final ConcurrentLinkedQueue<Entry> inbox = new ConcurrentLinkedQueue<>();
    private final PriorityQueue<Entry> heap = new PriorityQueue<>((a, b) -> a.deadline != b.deadline
            ? Long.compare(a.deadline - b.deadline, 0) : Long.compare(a.seq, b.seq));
    private final AtomicLong sequence = new AtomicLong();
    /** The deadline the timer thread waits for; a task due earlier must wake it. */
    private volatile long waitingFor;
    private volatile boolean idle = true;
    private volatile boolean stopped;
    private volatile Thread thread;
    private long spinWindowStart;
    private long spunInWindow;

    /**
     * A timer on {@code clock} that spins the last {@code spinNanos} before a deadline; it runs once {@link #run()}
     * is called on its thread.
     */
    public TokenBucketTimer(Clock clock, long spinNanos) {
        this.clock = clock;
        this.spinNanos = Math.max(0, spinNanos);
    }

    /**
     * Runs {@code task} on the timer thread at {@code deadline} (on the clock's scale), never before. The task must
     * be short: every later deadline waits for it.
     *
     * @throws RejectedExecutionException when the timer has stopped
     */
    public Entry schedule(Runnable task, long deadline) {
        if (stopped) {
            throw new RejectedExecutionException("the tokenbucket timer has stopped");
        }
        Entry entry = new Entry(deadline, sequence.getAndIncrement(), task);
        inbox.add(entry);
        // the timer publishes what it waits for before it checks the inbox, so it either sees this entry or this
        // thread sees its deadline (or that it is idle) and wakes it
        if (idle || deadline - waitingFor < 0) {
            LockSupport.unpark(thread);
        }
        if (stopped) {
            entry.cancel(); // the loop may have ended before it saw the entry
            throw new RejectedExecutionException("the tokenbucket timer has stopped");
        }
        return entry;
    }

    /** Stops the loop; the tasks not yet run never run. */
    public void stop() {
        stopped = true;
        LockSupport.unpark(thread);
    }

    /** The time on the timer's clock: a task learns from it how late it runs. */
    long now() {
        return clock.nanoTime();
    }

    /** Nudges the timer thread to read the clock again (tests: after they moved their clock). */
    void wakeUp() {
        LockSupport.unpark(thread);
    }

    /** The timer loop; returns when {@link #stop()} is called or its thread is interrupted. */
    @Override
    public void run() {
        thread = Thread.currentThread();
        spinWindowStart = clock.nanoTime();
        while (!stopped && !Thread.currentThread().isInterrupted()) {
            for (Entry e; (e = inbox.poll()) != null; ) {
                heap.add(e);
            }
            Entry head = heap.peek();
            if (head != null && head.task == null) {
                heap.poll();
                continue;
            }
            long now = clock.nanoTime();
            if (head != null && now - head.deadline >= 0) {
                heap.poll();
                fire(head);
                continue;
            }
            if (head != null) {
                waitingFor = head.deadline;
                idle = false;
            } else {
                idle = true;
            }
            if (!inbox.isEmpty()) {
                continue;
            }
            if (head == null) {
                clock.parkNanos(this, MAX_PARK_NANOS);
                continue;
            }
            long left = head.deadline - now;
            if (left <= spinNanos && maySpin(now)) {
                Thread.onSpinWait();
                long after = clock.nanoTime();
                spunInWindow += Math.max(0, after - now);
                continue;
            }
            long park = left > spinNanos ? left - spinNanos : left;
            clock.parkNanos(this, Math.min(park, MAX_PARK_NANOS));
        }
        heap.clear();
        inbox.clear();
    }

    /** Whether the spin budget of the current window is not used up; starts a new window when one has passed. */
    private boolean maySpin(long now) {
        if (now - spinWindowStart >= SPIN_WINDOW_NANOS) {
            spinWindowStart = now;
            spunInWindow = 0;
        }
        return spunInWindow < SPIN_BUDGET_NANOS;
    }

    private void fire(Entry entry) {
        Runnable task = entry.task;
        if (task == null) {
            return;
        }
        entry.task = null;
        try {
            task.run();
        } catch (RuntimeException | Error e) {
            // one failing task must not stop the releases of every other waiting exchange
            LOG.warn("A tokenbucket timer task failed", e);
        }
    }
}
