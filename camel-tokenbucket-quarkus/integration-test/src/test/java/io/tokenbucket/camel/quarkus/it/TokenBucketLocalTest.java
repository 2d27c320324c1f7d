package io.tokenbucket.camel.quarkus.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.tokenbucket.camel.TokenBucketRejectedException;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.ProducerTemplate;
import org.junit.jupiter.api.Test;

/** Routes throttled on the local store in a Quarkus application, with the limits of application.properties. */
@QuarkusTest
@QuarkusTestResource(TokenBucketRedisResource.class)
class TokenBucketLocalTest {

    @Inject
    ProducerTemplate producer;

    @Inject
    Admissions admissions;

    @Test
    void aKeyGetsTheCapacityOfApplicationPropertiesAndNoMore() {
        producer.sendBodyAndHeader("direct:local", "a1", "tenant", "a");
        producer.sendBodyAndHeader("direct:local", "a2", "tenant", "a");
        // capacity=2, refilled hourly (camel.component.tokenbucket.*): the third is refused, and consumes nothing
        assertThatThrownBy(() -> producer.sendBodyAndHeader("direct:local", "a3", "tenant", "a"))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);
        producer.sendBodyAndHeader("direct:local", "b1", "tenant", "b"); // another key has its own bucket

        assertThat(admissions.of("local")).extracting(Admissions.Admission::body).containsExactly("a1", "a2", "b1");
    }

    @Test
    void waitingExchangesArePacedAtTheRate() throws Exception {
        int n = 6;
        long period = TimeUnit.MILLISECONDS.toNanos(100); // capacity=1&refillPeriod=100ms
        long start = System.nanoTime();
        List<CompletableFuture<Object>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sent.add(producer.asyncRequestBodyAndHeader("direct:paced", "p" + i, "tenant", "p"));
        }
        CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

        List<Admissions.Admission> passed = admissions.of("paced");
        assertThat(passed).hasSize(n);
        // the k-th exchange cannot pass before k periods after the first could: a lower bound, which a busy machine
        // can only make later, never earlier (1 ms for the clock's rounding)
        for (int k = 0; k < n; k++) {
            assertThat(Duration.ofNanos(passed.get(k).nanos() - start))
                    .as("exchange %d of %d", k + 1, n)
                    .isGreaterThanOrEqualTo(Duration.ofNanos(k * period).minusMillis(1));
        }
    }
}
