package io.tokenbucket.camel;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The counters behind every meter: each one only ever goes up, also while other threads count. */
class TokenBucketStatisticsTest {

    @Test
    void delayedAdmissionsNeverShowAsImmediateOnesWhileTheyAreCounted() throws Exception {
        TokenBucketStatistics stats = new TokenBucketStatistics();
        AtomicBoolean stop = new AtomicBoolean();
        CompletableFuture<Long> written = CompletableFuture.supplyAsync(() -> {
            long n = 0;
            while (!stop.get()) {
                stats.admitted("k", 5);
                n++;
            }
            return n;
        });
        // a reader between the two counts of one admission must not see it as passed at once: a counter that
        // rises and falls back reads as a reset in Prometheus
        long seen = 0;
        try {
            for (int read = 0; read < 1_000_000; read++) {
                assertThat(stats.getImmediate()).isZero();
                long admitted = stats.getAdmitted();
                assertThat(admitted).isGreaterThanOrEqualTo(seen);
                seen = admitted;
            }
        } finally {
            stop.set(true);
        }
        long delayed = written.get(30, TimeUnit.SECONDS);
        assertThat(delayed).isPositive();
        assertThat(stats.getAdmitted()).isEqualTo(delayed);
        assertThat(stats.getDelayed()).isEqualTo(delayed);
        assertThat(stats.getImmediate()).isZero();
        assertThat(stats.getWaitNanos()).isEqualTo(5L * delayed);
    }
}
