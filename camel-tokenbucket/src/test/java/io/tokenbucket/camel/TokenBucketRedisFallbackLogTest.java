package io.tokenbucket.camel;

import java.time.Duration;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Redis outage is seen in the log under every {@code onStoreError}: one WARN when the endpoint enters its policy,
 * with the reason, and one INFO when Redis answers again, with how long it lasted and how many calls the policy
 * answered (exchanges it failed); a second outage within the minute is not logged again.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisFallbackLogTest extends TokenBucketRedisTestSupport {

    private TokenBucketStoreErrorPolicy policy;

    private String name() {
        return "logged-" + policy;
    }

    private String uri() {
        return "tokenbucket:" + name() + "?store=redis&redisUri=" + redis.uri()
                + "&capacity=1000&onStoreError=" + policy + "&storeTimeout=300ms";
    }

    /** Sends exchanges until one reaches the restarted Redis (its bucket key exists there again). */
    private void awaitRedisAnswers() {
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
            template.request(uri(), e -> { }); // fails under fail until Redis answers
            return Long.valueOf(1).equals(redis.command("EXISTS", "tokenbucket:" + name() + ":"));
        });
    }

    private void outage() {
        redis.stop();
        try {
            for (int i = 0; i < 3; i++) { // the policy answers them
                Exception failure = template.request(uri(), e -> { }).getException();
                if (policy == TokenBucketStoreErrorPolicy.fail) {
                    assertThat(failure).isInstanceOf(TokenBucketStoreException.class);
                } else {
                    assertThat(failure).isNull();
                }
            }
        } finally {
            redis.start();
        }
        awaitRedisAnswers();
    }

    @ParameterizedTest
    @EnumSource(TokenBucketStoreErrorPolicy.class)
    void enteringAndLeavingThePolicyIsLoggedOnceEach(TokenBucketStoreErrorPolicy policy) {
        this.policy = policy;
        String meanwhile = switch (policy) {
            case fail -> "exchanges fail";
            case allow -> "exchanges are admitted without a token";
            case local -> "exchanges are throttled by this instance's local buckets";
        };
        try (CapturedStderr stderr = new CapturedStderr()) {
            assertThat(template.request(uri(), e -> { }).getException()).isNull();
            outage();
            String once = stderr.text();
            assertThat(once.split("does not answer", -1)).hasSize(2);
            assertThat(once).contains("WARN").contains("tokenbucket:" + name() + ": redis at redis://127.0.0.1:"
                    + redis.port() + " does not answer (").contains("; onStoreError=" + policy + ": " + meanwhile
                    + " until it answers again");
            assertThat(once.split("answers again after", -1)).hasSize(2);
            String count = "([3-9]|[1-9]\\d+)";
            assertThat(once).containsPattern("INFO .*tokenbucket:" + name() + ": redis at redis://127\\.0\\.0\\.1:\\d+"
                    + " answers again after \\d+ ms; onStoreError=" + policy
                    + (policy == TokenBucketStoreErrorPolicy.fail ? " failed " + count + " exchanges"
                    : " answered " + count + " calls") + " meanwhile");

            outage(); // within the minute: counted into the next report, not logged
            String twice = stderr.text();
            assertThat(twice.split("does not answer", -1)).hasSize(2);
            assertThat(twice.split("answers again after", -1)).hasSize(2);
            TokenBucketEndpoint endpoint = context.getEndpoint(uri(), TokenBucketEndpoint.class);
            // the counters keep every call
            assertThat(policy == TokenBucketStoreErrorPolicy.fail ? endpoint.getStoreErrorCount()
                    : endpoint.getFallbackCount()).isGreaterThanOrEqualTo(6);
        }
    }
}
