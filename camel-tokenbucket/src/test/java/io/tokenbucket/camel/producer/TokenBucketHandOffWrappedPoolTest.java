package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.binder.jvm.ExecutorServiceMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.tokenbucket.camel.TokenBucketException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A full thread pool with Camel's default rejection policy (CallerRuns), handed to the component wrapped as
 * applications commonly wrap their pools (Micrometer's ExecutorServiceMetrics.monitor; tracing wrappers are alike):
 * the wrapper is no ThreadPoolExecutor, but the pool behind it still runs the task on the thread handing it over,
 * which is the timer or a store's I/O thread. That must be a refusal, as it is for the bare pool.
 */
class TokenBucketHandOffWrappedPoolTest {

    private final CamelContext context = new DefaultCamelContext();

    @Test
    void aWrappedThreadPoolThatWouldRunTheTaskOnTheCallerRefusesIt() throws Exception {
        ThreadPoolExecutor full = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1),
                new ThreadPoolExecutor.CallerRunsPolicy());
        ExecutorService monitored = ExecutorServiceMetrics.monitor(new SimpleMeterRegistry(), full, "worker");
        assertThat(monitored).isNotInstanceOf(ThreadPoolExecutor.class);
        CountDownLatch gate = new CountDownLatch(1);
        try {
            full.execute(() -> await(gate)); // its thread
            full.execute(() -> { }); // its queue
            TokenBucketHandOff handOff = new TokenBucketHandOff(monitored, TokenBucketHandOff.threadsOf(monitored));
            Exchange exchange = new DefaultExchange(context);
            AtomicInteger callbacks = new AtomicInteger();
            List<Thread> ranOn = Collections.synchronizedList(new ArrayList<>());
            handOff.execute("wrapped", exchange, doneSync -> callbacks.incrementAndGet(),
                    () -> ranOn.add(Thread.currentThread()), null);
            assertThat(ranOn).as("threads the continuation ran on (this one: the timer's or an I/O thread's place)")
                    .doesNotContain(Thread.currentThread());
            assertThat(callbacks.get()).isOne();
            assertThat(exchange.getException()).isInstanceOf(TokenBucketException.class);
        } finally {
            gate.countDown();
            full.shutdownNow();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
