package io.tokenbucket.camel.producer;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker pool without a core size, which grows a thread per task (a cached pool; a virtual-thread-per-task executor
 * is the same to {@link TokenBucketHandOff#threadsOf}): continuations whose route steps block (an HTTP call) should
 * each get a thread, as the pool would give them. The hand-off sizes such a pool at the processors' count, so no more
 * than that many continuations run at once, however many threads the pool would start.
 */
class TokenBucketHandOffUnboundedPoolTest {

    private final CamelContext context = new DefaultCamelContext();

    @Test
    void continuationsThatBlockEachGetAThreadOfAPoolThatGrows() throws Exception {
        ExecutorService cached = Executors.newCachedThreadPool();
        int blocking = Runtime.getRuntime().availableProcessors() + 2;
        try {
            TokenBucketHandOff handOff = new TokenBucketHandOff(cached, TokenBucketHandOff.threadsOf(cached));
            CountDownLatch started = new CountDownLatch(blocking);
            CountDownLatch gate = new CountDownLatch(1);
            for (int i = 0; i < blocking; i++) {
                handOff.execute("grows", new DefaultExchange(context), doneSync -> { }, () -> {
                    started.countDown();
                    try {
                        gate.await(30, TimeUnit.SECONDS); // a route step that blocks
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, null);
            }
            assertThat(started.await(10, TimeUnit.SECONDS))
                    .as("%d blocking continuations running at once on a pool that grows (%d started)", blocking,
                            blocking - started.getCount())
                    .isTrue();
            gate.countDown();
        } finally {
            cached.shutdownNow();
        }
    }
}
