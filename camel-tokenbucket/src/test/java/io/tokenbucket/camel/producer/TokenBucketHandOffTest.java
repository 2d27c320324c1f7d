package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.micrometer.core.instrument.binder.jvm.ExecutorServiceMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.tokenbucket.camel.TokenBucketException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hand-off to the worker pool goes in batches: a burst of continuations (a store reply carrying many
 * reservations, a timer tick releasing many waiters) costs at most one pool task per thread, plus one per
 * {@link TokenBucketHandOff#TASK_TURNS} continuations; they start in the order they were handed over; a pool
 * that refuses fails each exchange once, after giving back what it held, at once, not after the continuation a task
 * of the hand-off is running; and a task whose turns are used up keeps its thread when the pool refuses its successor.
 */
class TokenBucketHandOffTest {

    private final CamelContext context = new DefaultCamelContext();
    private final ExecutorService threads = Executors.newFixedThreadPool(4);
    private final AtomicInteger submitted = new AtomicInteger();
    private final Executor counting = task -> {
        submitted.incrementAndGet();
        threads.execute(task);
    };

    @AfterEach
    void stop() {
        threads.shutdownNow();
    }

    @Test
    void aBurstHandedOverWhileThePoolIsBusyCostsOneTaskPerThread() throws Exception {
        TokenBucketHandOff handOff = new TokenBucketHandOff(counting, 4);
        int burst = 1000;
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(burst);
        AtomicInteger callbacks = new AtomicInteger();
        for (int i = 0; i < burst; i++) {
            handOff.execute("burst", new DefaultExchange(context), doneSync -> callbacks.incrementAndGet(), () -> {
                await(gate);
                done.countDown();
            }, null);
        }
        // every thread is held by a continuation: the rest queued without a pool task of their own
        assertThat(submitted.get()).isLessThanOrEqualTo(4);
        gate.countDown();
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(submitted.get()).isLessThanOrEqualTo(4 + burst / TokenBucketHandOff.TASK_TURNS + 4);
        assertThat(callbacks.get()).isZero(); // the continuations call back, not the hand-off
    }

    @Test
    void continuationsStartInTheOrderTheyWereHandedOver() throws Exception {
        TokenBucketHandOff handOff = new TokenBucketHandOff(counting, 1);
        int count = 500;
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            int n = i;
            handOff.execute("order", new DefaultExchange(context), doneSync -> { }, () -> {
                order.add(n);
                done.countDown();
            }, null);
        }
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(order).containsExactlyElementsOf(IntStream.range(0, count).boxed().toList());
        assertThat(submitted.get()).isLessThan(count);
    }

    @Test
    void aFailingContinuationDoesNotStopThoseBehindIt() throws Exception {
        TokenBucketHandOff handOff = new TokenBucketHandOff(counting, 1);
        CountDownLatch done = new CountDownLatch(1);
        handOff.execute("fails", new DefaultExchange(context), doneSync -> { }, () -> {
            throw new IllegalStateException("a continuation that fails");
        }, null);
        handOff.execute("fails", new DefaultExchange(context), doneSync -> { }, done::countDown, null);
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aPoolThatRefusesFailsEachExchangeOnceAfterGivingBackWhatItHeld() {
        TokenBucketHandOff handOff = new TokenBucketHandOff(task -> {
            throw new RejectedExecutionException("the pool stopped");
        }, 2);
        List<Exchange> exchanges = new ArrayList<>();
        AtomicInteger callbacks = new AtomicInteger();
        AtomicInteger given = new AtomicInteger();
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 3; i++) {
            Exchange exchange = new DefaultExchange(context);
            exchanges.add(exchange);
            handOff.execute("refused", exchange, doneSync -> callbacks.incrementAndGet(), ran::incrementAndGet,
                    given::incrementAndGet);
        }
        assertThat(callbacks.get()).isEqualTo(3);
        assertThat(given.get()).isEqualTo(3);
        assertThat(ran.get()).isZero();
        assertThat(exchanges).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("tokenbucket:refused")
                .hasMessageContaining("the pool stopped"));
    }

    @Test
    void aContinuationThePoolRefusesFailsAtOnceInsteadOfWaitingForTheOneRunning() throws Exception {
        AtomicInteger refusing = new AtomicInteger();
        TokenBucketHandOff handOff = new TokenBucketHandOff(task -> {
            if (refusing.get() > 0) {
                throw new RejectedExecutionException("the pool is full");
            }
            threads.execute(task);
        }, 2);
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch gate = new CountDownLatch(1);
        handOff.execute("busy", new DefaultExchange(context), doneSync -> { }, () -> {
            running.countDown();
            await(gate); // a route step that lasts: this pool task is busy until the gate opens
        }, null);
        assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();

        refusing.set(1);
        Exchange refused = new DefaultExchange(context);
        AtomicInteger callbacks = new AtomicInteger();
        AtomicInteger given = new AtomicInteger();
        AtomicInteger ran = new AtomicInteger();
        handOff.execute("refused", refused, doneSync -> callbacks.incrementAndGet(), ran::incrementAndGet,
                given::incrementAndGet);
        // failed in the call, while the task that runs the first continuation is still busy in it
        assertThat(callbacks.get()).isOne();
        assertThat(given.get()).isOne();
        assertThat(refused.getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("the pool is full");
        gate.countDown();
        threads.shutdown();
        assertThat(threads.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        assertThat(ran.get()).isZero();
    }

    @Test
    void aTaskWhoseTurnsAreUsedUpGoesOnWhenThePoolRefusesTheOneToTakeOver() throws Exception {
        AtomicInteger accepted = new AtomicInteger();
        TokenBucketHandOff handOff = new TokenBucketHandOff(task -> {
            if (accepted.getAndIncrement() > 0) {
                throw new RejectedExecutionException("the pool is full");
            }
            threads.execute(task);
        }, 1);
        int count = 3 * TokenBucketHandOff.TASK_TURNS;
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(count);
        AtomicInteger callbacks = new AtomicInteger();
        for (int i = 0; i < count; i++) {
            int n = i;
            // the first holds the one task while the others queue behind it, none asking the pool
            handOff.execute("turns", new DefaultExchange(context), doneSync -> callbacks.incrementAndGet(), () -> {
                if (n == 0) {
                    await(gate);
                }
                done.countDown();
            }, callbacks::incrementAndGet);
        }
        gate.countDown();
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(accepted.get()).as("pool tasks asked for").isGreaterThan(1);
        assertThat(callbacks.get()).as("exchanges failed").isZero();
    }

    @ParameterizedTest(name = "wrapped {0}")
    @ValueSource(booleans = {false, true})
    void aPoolThatWouldRunTheTaskOnTheThreadHandingItOverRefusesIt(boolean wrapped) throws Exception {
        // Camel's default rejection policy: a full pool runs the task on the caller, here the timer or an I/O thread;
        // so does one behind a wrapper (Micrometer's monitor, as applications wrap pools), whose policy is hidden
        ThreadPoolExecutor full = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1),
                new ThreadPoolExecutor.CallerRunsPolicy());
        ExecutorService pool = wrapped ? ExecutorServiceMetrics.monitor(new SimpleMeterRegistry(), full, "w") : full;
        CountDownLatch gate = new CountDownLatch(1);
        try {
            full.execute(() -> await(gate)); // its thread
            full.execute(() -> { }); // its queue
            TokenBucketHandOff handOff = new TokenBucketHandOff(pool, TokenBucketHandOff.threadsOf(pool));
            Exchange exchange = new DefaultExchange(context);
            AtomicInteger callbacks = new AtomicInteger();
            AtomicInteger given = new AtomicInteger();
            List<Thread> ranOn = Collections.synchronizedList(new ArrayList<>());
            handOff.execute("callerRuns", exchange, doneSync -> callbacks.incrementAndGet(),
                    () -> ranOn.add(Thread.currentThread()), given::incrementAndGet);
            assertThat(ranOn).as("threads the continuation ran on").isEmpty();
            assertThat(callbacks.get()).isOne();
            assertThat(given.get()).isOne();
            assertThat(exchange.getException()).isInstanceOf(TokenBucketException.class)
                    .hasMessageContaining("worker pool").hasMessageContaining("thread handing it over");
            gate.countDown();
            // once the pool has room again, the hand-off uses it
            CountDownLatch ran = new CountDownLatch(1);
            Exchange next = new DefaultExchange(context);
            org.awaitility.Awaitility.await().atMost(30, TimeUnit.SECONDS).until(() -> full.getQueue().isEmpty() && full.getActiveCount() == 0);
            handOff.execute("callerRuns", next, doneSync -> callbacks.incrementAndGet(), () -> {
                ranOn.add(Thread.currentThread());
                ran.countDown();
            }, null);
            assertThat(ran.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(ranOn).doesNotContain(Thread.currentThread());
            assertThat(next.getException()).isNull();
        } finally {
            full.shutdownNow();
        }
    }

    @Test
    void anExecutorThatRunsEveryTaskWhereItIsHandedOverRefusesIt() {
        TokenBucketHandOff handOff = new TokenBucketHandOff(Runnable::run, 1);
        Exchange exchange = new DefaultExchange(context);
        List<Thread> ranOn = new ArrayList<>();
        handOff.execute("inline", exchange, doneSync -> { }, () -> ranOn.add(Thread.currentThread()), null);
        assertThat(ranOn).isEmpty();
        assertThat(exchange.getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("thread handing it over");
    }

    @Test
    void anExchangeWhoseCallerWaitsContinuesOnThatThread() {
        TokenBucketHandOff handOff = new TokenBucketHandOff(counting, 4);
        TokenBucketHandOff.CallerWaits caller = new TokenBucketHandOff.CallerWaits();
        List<Thread> ranOn = new ArrayList<>();
        Thread other = new Thread(() -> handOff.execute("caller", new DefaultExchange(context), caller, () -> {
            ranOn.add(Thread.currentThread());
            caller.done(false);
        }, null));
        other.start();
        caller.await();
        assertThat(ranOn).containsExactly(Thread.currentThread());
        assertThat(submitted.get()).isZero();
    }

    private static void await(CountDownLatch gate) {
        try {
            gate.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
