package io.tokenbucket.camel.producer;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;

import io.tokenbucket.camel.TokenBucketException;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where an exchange continues once the component had to wait for something (its tokens, a slot, a store's answer):
 * never on the timer thread nor on a store's I/O thread. The one continuation rule: an exchange whose caller waits
 * for it ({@link CallerWaits}: Camel's {@code synchronous=true}, or a transacted exchange) continues on that
 * thread; every other one on the component's worker pool.
 *
 * <p>Continuations are handed to the pool in batches, not one pool task each: they queue here in the order they are
 * handed over, and pool tasks take them in that order. A task is submitted only when none is on its way (submitted,
 * not started yet) and fewer tasks than the pool has threads are running, so a store reply carrying N reservations
 * (or a timer tick releasing N waiters) costs at most as many pool submissions and thread wake-ups as there are
 * threads to run them, not N; a task that takes a continuation while others queue makes sure another task is on its
 * way, so none waits behind a slow route while a thread could take it. A task gives its thread back after
 * {@link #TASK_TURNS} continuations, so the pool's other work (sweeps, lease renewals) is not starved; if the pool
 * refuses the task that would take over, it keeps its thread and goes on.
 *
 * <p>When the pool refuses a task, every continuation still queued fails at once: each task still running is inside
 * a continuation, a route step that may last any time, and a continuation left to it would wait that long (holding
 * its slot meanwhile). A pool that runs the task on the thread handing it over (Camel's default {@code CallerRuns}
 * policy when full, however the pool is wrapped; an executor that runs every task so) refuses too: that thread is the
 * timer, a store's I/O thread or another exchange's, where no route step of this exchange may run. So does a pool
 * that was shut down and dropped the task without a word (the JDK's caller-runs policy then); a pool whose policy
 * discards tasks is refused when the hand-off is built, since a task it drops while running cannot be told.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketHandOff {

    /** How many continuations one pool task runs before it goes back to the pool's queue: 64. */
    static final int TASK_TURNS = 64;

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketHandOff.class);

    private record Task(String name, Exchange exchange, AsyncCallback callback, Runnable continuation,
                        Runnable refused) {
    }

    /** Set on a thread while it hands a task to a pool; the task finds itself run there (a caller-runs policy). */
    private static final ThreadLocal<Object> HANDING_OVER = new ThreadLocal<>();
    private static final Object RAN_ON_CALLER = new Object();

    private final Executor pool;
    private final int threads;
    private final ArrayDeque<Task> tasks = new ArrayDeque<>(); // guarded by this
    private int running; // pool tasks submitted and not finished; guarded by this
    private int starting; // of those, not started yet (the others are each inside a continuation); guarded by this

    /**
     * Hands continuations to {@code pool}, on at most {@code threads} tasks at once (at least one).
     *
     * @throws IllegalArgumentException when {@code pool} discards the tasks it refuses (see the class)
     */
    public TokenBucketHandOff(Executor pool, int threads) {
        if (pool instanceof ThreadPoolExecutor tpe
                && (tpe.getRejectedExecutionHandler() instanceof ThreadPoolExecutor.DiscardPolicy
                || tpe.getRejectedExecutionHandler() instanceof ThreadPoolExecutor.DiscardOldestPolicy)) {
            throw new IllegalArgumentException("The tokenbucket workerPool discards the tasks it refuses ("
                    + tpe.getRejectedExecutionHandler().getClass().getSimpleName() + "): an exchange whose"
                    + " continuation it dropped would never complete; give it Camel's Abort or CallerRuns policy");
        }
        this.pool = pool;
        this.threads = Math.max(1, threads);
    }

    /**
     * How many threads {@code pool} runs tasks on at once: a thread pool's core size, or its maximum when it hands
     * tasks straight to threads (a cached pool); a fork/join pool's parallelism; else no bound of the hand-off's (an
     * executor with a thread per task, or one it cannot read: its own queue orders what it cannot run yet).
     */
    public static int threadsOf(Executor pool) {
        if (pool instanceof ThreadPoolExecutor tpe) {
            return tpe.getQueue() instanceof SynchronousQueue ? tpe.getMaximumPoolSize() : tpe.getCorePoolSize();
        }
        if (pool instanceof ForkJoinPool fjp) {
            return fjp.getParallelism();
        }
        return Integer.MAX_VALUE;
    }

    /**
     * Runs {@code continuation} where {@code exchange} continues (see the class); if the pool refuses it (full, or
     * the component stops), runs {@code refused} (when not null: it gives back what the continuation would have, a
     * slot or a waiting place) and fails the exchange with {@link TokenBucketException}, naming the endpoint
     * {@code name}.
     */
    void execute(String name, Exchange exchange, AsyncCallback callback, Runnable continuation, Runnable refused) {
        if (callback instanceof CallerWaits caller) { // it waits anyway: a hop to the pool would only cost
            caller.execute(continuation);
            return;
        }
        boolean submit;
        synchronized (this) {
            tasks.add(new Task(name, exchange, callback, continuation, refused));
            submit = starting == 0 && running < threads;
            if (submit) {
                starting++;
                running++;
            }
        }
        if (submit) {
            submit();
        }
    }

    /** Submits a pool task; if the pool refuses it, fails every continuation queued (see the class). */
    private void submit() {
        RejectedExecutionException e = toPool();
        if (e == null) {
            return;
        }
        ArrayDeque<Task> unrun;
        synchronized (this) {
            starting--;
            running--;
            unrun = new ArrayDeque<>(tasks);
            tasks.clear();
        }
        unrun.forEach(t -> refuse(t, e));
    }

    /**
     * Hands a task to the pool: null when it took it, else its refusal: running it on this thread is one, and so is
     * a pool found shut down with the task not started (claimed here first, so that it never runs too).
     */
    private RejectedExecutionException toPool() {
        PoolTask task = new PoolTask();
        HANDING_OVER.set(this);
        try {
            pool.execute(task);
            if (HANDING_OVER.get() == RAN_ON_CALLER) {
                return new RejectedExecutionException("the pool ran the task on the thread handing it over");
            }
            if (pool instanceof ExecutorService service && service.isShutdown() && task.compareAndSet(false, true)) {
                return new RejectedExecutionException("the pool is shut down");
            }
            return null;
        } catch (RejectedExecutionException e) {
            return e;
        } finally {
            HANDING_OVER.remove();
        }
    }

    private static void refuse(Task t, RejectedExecutionException e) {
        if (t.refused() != null) {
            t.refused().run();
        }
        if (t.exchange().getException() == null) {
            t.exchange().setException(new TokenBucketException(t.name(), null, "tokenbucket:" + t.name()
                    + " could not continue the exchange on its worker pool: " + e.getMessage(), e));
        }
        t.callback().done(false);
    }

    /**
     * What the pool runs: a drain, unless the pool ran it on the thread handing it over, or the hand-off claimed it
     * as refused first (see {@link #toPool}).
     */
    private final class PoolTask extends AtomicBoolean implements Runnable {
        @Override
        public void run() {
            if (HANDING_OVER.get() == TokenBucketHandOff.this) {
                HANDING_OVER.set(RAN_ON_CALLER);
            } else if (compareAndSet(false, true)) {
                drain();
            }
        }
    }

    /** A pool task: runs the queued continuations in order, at most {@link #TASK_TURNS}. */
    private void drain() {
        boolean started = false;
        for (int turn = 0; ; turn++) {
            Task t;
            boolean submit;
            synchronized (this) {
                if (!started) { // with its first take: a task that started is always inside a continuation
                    started = true;
                    starting--;
                }
                t = turn < TASK_TURNS ? tasks.poll() : null;
                if (t == null) {
                    // ending with continuations queued (its turns used up): another task takes them, unless one is
                    // on its way already
                    submit = !tasks.isEmpty() && starting == 0;
                    if (submit) {
                        starting++;
                    } else {
                        running--;
                    }
                } else {
                    submit = !tasks.isEmpty() && starting == 0 && running < threads;
                    if (submit) {
                        starting++;
                        running++;
                    }
                }
            }
            if (t == null) {
                if (!submit) {
                    return;
                }
                RejectedExecutionException refused = toPool();
                if (refused == null) {
                    return; // the task submitted takes over this one's place in running
                }
                synchronized (this) {
                    starting--; // refused: this task keeps its thread and its place, and goes on
                }
                turn = -1;
                continue;
            }
            if (submit) {
                submit();
            }
            try {
                t.continuation().run();
            } catch (RuntimeException | Error e) {
                // as a pool would: one failing continuation must not stop those queued behind it
                LOG.warn("A tokenbucket continuation failed", e);
            }
        }
    }

    /**
     * The callback of an exchange whose sending thread waits for it and then continues the route itself (Camel's
     * {@code synchronous=true}, or a transacted exchange, whose transaction is bound to that thread). What would go
     * to the worker pool is given to that thread instead, which runs it: the timer and a store's I/O thread only hand
     * over, and no step of the route runs anywhere but on the caller. The caller waits as long as the exchange does,
     * which maxWait and storeTimeout bound, and a stop abandons it as any other; it does not give up on an interrupt
     * (it is re-asserted when the wait ends), so that its callback is still called once.
     */
    static final class CallerWaits implements AsyncCallback {
        private static final Runnable DONE = () -> { };
        // a queue, not a monitor: a virtual thread may wait here without pinning its carrier
        private final LinkedBlockingQueue<Runnable> tasks = new LinkedBlockingQueue<>();

        /** Gives {@code task} to the waiting thread. */
        void execute(Runnable task) {
            tasks.add(task);
        }

        @Override
        public void done(boolean doneSync) {
            tasks.add(DONE);
        }

        /** In the waiting thread: runs what it is given, in order, until the exchange's callback is done. */
        void await() {
            boolean interrupted = false;
            for (Runnable task = null; task != DONE; ) {
                try {
                    task = tasks.take();
                } catch (InterruptedException e) {
                    interrupted = true;
                    continue;
                }
                if (task != DONE) {
                    task.run();
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
