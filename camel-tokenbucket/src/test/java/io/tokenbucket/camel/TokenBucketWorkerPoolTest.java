package io.tokenbucket.camel;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The component's own worker pool, once shut down, refuses a task by throwing, which fails the exchange it would have
 * continued; under Camel's default rejection policy (caller runs) it would drop the task silently once shut down, and
 * an exchange answered then would never complete.
 */
class TokenBucketWorkerPoolTest {

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
