package io.tokenbucket.camel.producer;

import java.util.concurrent.ArrayBlockingQueue;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A user's worker pool that would drop a task without a word: Camel's default {@code CallerRuns} once the pool is
 * shut down (the JDK's CallerRunsPolicy runs nothing then) fails the exchange with TokenBucketException rather than
 * leave it for ever; a discard policy is refused when the hand-off is built.
 */
class TokenBucketHandOffDroppedTaskTest {

    private final CamelContext context = new DefaultCamelContext();

    @Test
    void aTaskAPoolShutDownDropsFailsTheExchangeOnce() throws Exception {
        RejectedExecutionHandler callerRuns = ThreadPoolRejectedPolicy.CallerRuns.asRejectedExecutionHandler();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(10),
                callerRuns);
        pool.shutdown();
        TokenBucketHandOff handOff = new TokenBucketHandOff(pool, 1);
        Exchange exchange = new DefaultExchange(context);
        AtomicInteger callbacks = new AtomicInteger();
        AtomicInteger ran = new AtomicInteger();
        handOff.execute("dropped", exchange, doneSync -> callbacks.incrementAndGet(), ran::incrementAndGet, null);
        assertThat(ran.get()).as("continuations run").isZero();
        assertThat(callbacks.get()).as("callbacks of an exchange whose task the pool dropped").isOne();
        assertThat(exchange.getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("shut down");
    }

    @ParameterizedTest
    @ValueSource(strings = {"discard", "discardOldest"})
    void aPoolThatDiscardsTasksIsRefusedWhenTheHandOffIsBuilt(String policy) {
        // a task it drops while running cannot be told from one it runs later: refused up front, naming the option
        ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1),
                policy.equals("discard") ? new ThreadPoolExecutor.DiscardPolicy()
                        : new ThreadPoolExecutor.DiscardOldestPolicy());
        try {
            assertThatThrownBy(() -> new TokenBucketHandOff(pool, 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("workerPool").hasMessageContaining("Discard");
        } finally {
            pool.shutdownNow();
        }
    }
}
