package io.tokenbucket.camel;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import io.tokenbucket.camel.redis.TokenBucketStoreWatcher;
import io.tokenbucket.store.StoreRefusedException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store watcher's reports, on a clock the test moves: one WARN and one INFO per outage, at most one of each per
 * minute, an outage that outlasts the minute after a reported one reported then, and refusals likewise.
 */
class TokenBucketStoreWatcherTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicLong policyCalls = new AtomicLong();
    private final TokenBucketStoreWatcher watcher = new TokenBucketStoreWatcher("w", "redis at redis://h:6379",
            TokenBucketStoreErrorPolicy.allow, UnaryOperator.identity(), policyCalls::get, now::get, () -> { });

    private void at(long seconds) {
        now.set(1_000_000_000L + TimeUnit.SECONDS.toNanos(seconds));
    }

    private static int count(String text, String part) {
        return text.split(java.util.regex.Pattern.quote(part), -1).length - 1;
    }

    @Test
    void anOutageIsReportedWhenItBeginsAndEndsAndAFlapWithinAMinuteOnlyWhenItLasts() {
        try (CapturedStderr stderr = new CapturedStderr()) {
            at(0);
            watcher.failed(new TimeoutException("no answer within 300 ms"));
            policyCalls.addAndGet(5);
            at(1);
            watcher.failed(new TimeoutException("no answer within 300 ms")); // the same outage
            watcher.answered();
            String first = stderr.text();
            assertThat(count(first, "WARN")).isEqualTo(1);
            assertThat(first).contains("tokenbucket:w: redis at redis://h:6379 does not answer (no answer within 300"
                    + " ms); onStoreError=allow: exchanges are admitted without a token until it answers again")
                    .contains("INFO").contains("tokenbucket:w: redis at redis://h:6379 answers again after 1000 ms;"
                    + " onStoreError=allow answered 5 calls meanwhile");

            at(2); // a short outage within the minute: not logged
            watcher.failed(new TimeoutException("again"));
            at(3);
            watcher.answered();
            assertThat(stderr.text()).isEqualTo(first);

            at(10); // one that outlasts the minute: reported once the minute is over
            watcher.failed(new TimeoutException("down"));
            at(61);
            watcher.failed(new TimeoutException("down"));
            assertThat(stderr.text().substring(first.length())).contains("WARN").contains("does not answer (down)"
                    + " for 51000 ms").contains("(1 shorter outages since the last report were not logged)");
            at(62);
            watcher.answered();
            assertThat(stderr.text().substring(first.length())).contains("answers again after 52000 ms");
        }
    }

    @Test
    void refusalsAreReportedAtMostOnceAMinuteWithTheCountBetween() {
        try (CapturedStderr stderr = new CapturedStderr()) {
            at(0);
            watcher.failed(new StoreRefusedException("Redis refused: NOPERM no evalsha", null));
            at(1);
            watcher.failed(new StoreRefusedException("Redis refused: NOPERM no evalsha", null));
            watcher.answered(); // a refusal is no outage: nothing to leave
            assertThat(count(stderr.text(), "refused a call")).isEqualTo(1);
            assertThat(stderr.text()).contains("WARN").contains("tokenbucket:w: redis at redis://h:6379 refused a"
                    + " call: Redis refused: NOPERM no evalsha").contains("whatever onStoreError (allow)")
                    .doesNotContain("INFO");
            at(60);
            watcher.failed(new StoreRefusedException("Redis refused: NOPERM no evalsha", null));
            assertThat(count(stderr.text(), "refused a call")).isEqualTo(2);
            assertThat(stderr.text()).contains("(1 more refused since the last report)");
        }
    }
}
