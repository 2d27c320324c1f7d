package io.tokenbucket.camel.producer;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionHandler;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.camel.TokenBucketException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.apache.camel.util.concurrent.ThreadPoolRejectedPolicy;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A user's worker pool whose rejection policy drops a task without a word: Camel's default {@code CallerRuns} once
 * the pool is shut down (the JDK's CallerRunsPolicy runs nothing then), or a discard policy. The hand-off's task never
 * runs, so the exchange must fail with TokenBucketException rather than never complete.
 */
class TokenBucketHandOffDroppedTaskTest {

    private final CamelContext context = new DefaultCamelContext();

    @ParameterizedTest
    @ValueSource(strings = {"camelCallerRunsShutDown", "discardWhenFull"})
    void aTaskThePoolDropsFailsTheExchangeOnce(String policy) throws Exception {
        ThreadPoolExecutor pool;
        CountDownLatch gate = new CountDownLatch(1);
        if (policy.equals("camelCallerRunsShutDown")) {
            RejectedExecutionHandler callerRuns = ThreadPoolRejectedPolicy.CallerRuns.asRejectedExecutionHandler();
            pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(10), callerRuns);
            pool.shutdown();
        } else {
            pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1),
                    new ThreadPoolExecutor.DiscardPolicy());
            pool.execute(() -> await(gate)); // its thread
            pool.execute(() -> { }); // its queue
        }
        try {
            TokenBucketHandOff handOff = new TokenBucketHandOff(pool, 1);
            Exchange exchange = new DefaultExchange(context);
            AtomicInteger callbacks = new AtomicInteger();
            AtomicInteger ran = new AtomicInteger();
            handOff.execute("dropped", exchange, doneSync -> callbacks.incrementAndGet(), ran::incrementAndGet, null);
            assertThat(ran.get()).as("continuations run").isZero();
            assertThat(callbacks.get()).as("callbacks of an exchange whose task the pool dropped").isOne();
            assertThat(exchange.getException()).isInstanceOf(TokenBucketException.class);
        } finally {
            gate.countDown();
            pool.shutdownNow();
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
