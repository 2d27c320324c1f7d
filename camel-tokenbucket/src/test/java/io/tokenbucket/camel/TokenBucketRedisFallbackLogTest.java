package io.tokenbucket.camel;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Redis outage under {@code onStoreError=local} is seen in the log: one WARN when the endpoint enters its policy,
 * with the reason, and one INFO when Redis answers again, with how long it lasted and how many calls the policy
 * answered; a second outage within the minute is not logged again.
 */
class TokenBucketRedisFallbackLogTest extends TokenBucketRedisTestSupport {

    private String uri() {
        return "tokenbucket:logged?store=redis&redisUri=" + redis.uri()
                + "&capacity=1000&onStoreError=local&storeTimeout=300ms";
    }

    /** Sends exchanges until one reaches the restarted Redis (its bucket key exists there again). */
    private void awaitRedisAnswers() {
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
            assertThat(template.request(uri(), e -> { }).getException()).isNull();
            return Long.valueOf(1).equals(redis.command("EXISTS", "tokenbucket:logged:"));
        });
    }

    private void outage() {
        redis.stop();
        try {
            for (int i = 0; i < 3; i++) { // the local buckets admit them
                assertThat(template.request(uri(), e -> { }).getException()).isNull();
            }
        } finally {
            redis.start();
        }
        awaitRedisAnswers();
    }

    @Test
    void enteringAndLeavingTheFallbackIsLoggedOnceEach() {
        try (CapturedStderr stderr = new CapturedStderr()) {
            assertThat(template.request(uri(), e -> { }).getException()).isNull();
            outage();
            String once = stderr.text();
            assertThat(once.split("does not answer", -1)).hasSize(2);
            assertThat(once).contains("WARN").contains("tokenbucket:logged: redis at redis://127.0.0.1:" + redis.port()
                    + " does not answer (").contains("; onStoreError=local: exchanges are throttled by this"
                    + " instance's local buckets until it answers again");
            assertThat(once.split("answers again after", -1)).hasSize(2);
            assertThat(once).containsPattern("INFO .*tokenbucket:logged: redis at redis://127\\.0\\.0\\.1:\\d+ answers"
                    + " again after \\d+ ms; onStoreError=local answered [1-9]\\d* calls meanwhile");

            outage(); // within the minute: counted into the next report, not logged
            String twice = stderr.text();
            assertThat(twice.split("does not answer", -1)).hasSize(2);
            assertThat(twice.split("answers again after", -1)).hasSize(2);
            TokenBucketEndpoint endpoint = context.getEndpoint(uri(), TokenBucketEndpoint.class);
            assertThat(endpoint.getFallbackCount()).isGreaterThanOrEqualTo(6); // the counters keep every call
        }
    }
}
