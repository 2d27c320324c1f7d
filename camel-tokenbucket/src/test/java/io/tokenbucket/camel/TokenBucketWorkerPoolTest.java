package io.tokenbucket.camel;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The component's own worker pool queues what its threads cannot run yet (ten thousand waiters released at once are
 * ten thousand continuations), and once shut down refuses a task by throwing, which fails the exchange it would have
 * continued; under Camel's default rejection policy (caller runs) it would drop the task silently once shut down, and
 * an exchange answered then would never complete.
 */
class TokenBucketWorkerPoolTest {

    @Test
    void theComponentsOwnPoolQueuesTasksBeyondItsThreadsInsteadOfRefusingThem() throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            camel.start();
            ExecutorService pool = camel.getComponent("tokenbucket", TokenBucketComponent.class).shared().worker();
            int threads = ((ThreadPoolExecutor) pool).getMaximumPoolSize();
            CountDownLatch gate = new CountDownLatch(1);
            CountDownLatch ran = new CountDownLatch(threads * 3);
            try {
                for (int i = 0; i < threads * 3; i++) { // every thread held, twice as many tasks queued behind them
                    pool.execute(() -> {
                        try {
                            gate.await(30, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        ran.countDown();
                    });
                }
            } finally {
                gate.countDown();
            }
            assertThat(ran.await(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void theComponentsOwnPoolRefusesATaskOnceShutDownInsteadOfDroppingIt() throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            camel.start();
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            ExecutorService pool = component.shared().worker();
            camel.getExecutorServiceManager().shutdown(pool);
            AtomicInteger ran = new AtomicInteger();
            assertThatThrownBy(() -> pool.execute(ran::incrementAndGet))
                    .isInstanceOf(RejectedExecutionException.class);
            assertThat(ran.get()).isZero();
        }
    }
}
