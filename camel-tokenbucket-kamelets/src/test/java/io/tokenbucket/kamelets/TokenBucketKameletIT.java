package io.tokenbucket.kamelets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.main.Main;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The tokenbucket-action Kamelet from this module's jar, in YAML routes under Camel Main (camel-kamelet, the YAML
 * DSL): it holds its bound on the local store and on a real redis-server, and the Redis password, given as the
 * property {@code camel.kamelet.tokenbucket-action.redisUri}, never shows in the log.
 */
class TokenBucketKameletIT {

    private static final String PASSWORD = "kamelet-S3cret/p@ss";

    /** What passed the Kamelet, and when ({@link System#nanoTime()}). */
    public static final class Admissions {
        record Passed(String body, long nanos) {
        }

        final ConcurrentLinkedQueue<Passed> passed = new ConcurrentLinkedQueue<>();

        public void passed(Exchange exchange) {
            passed.add(new Passed(exchange.getMessage().getBody(String.class), System.nanoTime()));
        }

        List<String> bodies(String prefix) {
            return passed.stream().map(Passed::body).filter(b -> b.startsWith(prefix)).toList();
        }
    }

    private static RedisHandle redis;
    private static Main main;
    private static final Admissions admissions = new Admissions();
    private static ProducerTemplate producer;

    @BeforeAll
    static void start() {
        redis = RedisServers.withPassword(PASSWORD);
        main = new Main();
        main.bind("admissions", admissions);
        main.configure().withRoutesIncludePattern("classpath:routes/throttled.yaml");
        main.addInitialProperty("camel.kamelet.tokenbucket-action.redisUri", redis.authenticatedUri());
        main.start();
        producer = main.getCamelContext().createProducerTemplate();
    }

    @AfterAll
    static void stop() {
        if (main != null) {
            main.stop();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void camelFindsTheKameletInThisJar() {
        URL kamelet = TokenBucketKameletIT.class.getResource("/kamelets/tokenbucket-action.kamelet.yaml");
        assertThat(kamelet).isNotNull();
        assertThat(kamelet.toString()).startsWith("jar:").contains("camel-tokenbucket-kamelets");
    }

    @Test
    void waitingExchangesArePacedAtTheLimit() throws Exception {
        int n = 6;
        long period = TimeUnit.MILLISECONDS.toNanos(100); // limits: 1/100ms
        long start = System.nanoTime();
        List<CompletableFuture<Object>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sent.add(producer.asyncRequestBodyAndHeader("direct:paced", "p" + i, "tenant", "p"));
        }
        CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

        List<Admissions.Passed> passed = admissions.passed.stream().filter(p -> p.body().startsWith("p")).toList();
        assertThat(passed).hasSize(n);
        // the k-th cannot pass before k periods after the first could: a lower bound a busy machine cannot break
        for (int k = 0; k < n; k++) {
            assertThat(Duration.ofNanos(passed.get(k).nanos() - start)).as("exchange %d of %d", k + 1, n)
                    .isGreaterThanOrEqualTo(Duration.ofNanos(k * period).minusMillis(1));
        }
    }

    @Test
    void maxWaitReachesTheStep() {
        producer.sendBody("direct:bounded", "b1");
        // limits 1/1h in delay mode: the next token is an hour away, past maxWait=100ms, so it fails at once
        assertThatThrownBy(() -> assertTimeoutPreemptively(Duration.ofSeconds(30),
                () -> producer.sendBody("direct:bounded", "b2")))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);
        assertThat(admissions.bodies("b")).containsExactly("b1");
    }

    @Test
    void theBoundHoldsInRedisAndThePasswordIsNeverLogged() throws IOException {
        producer.sendBodyAndHeader("direct:shared", "s1", "tenant", "s");
        producer.sendBodyAndHeader("direct:shared", "s2", "tenant", "s");
        // limits 2/1h, mode reject: the third is refused, and the bucket is in Redis
        assertThatThrownBy(() -> producer.sendBodyAndHeader("direct:shared", "s3", "tenant", "s"))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);
        assertThat(admissions.bodies("s")).containsExactly("s1", "s2");
        assertThat((List<?>) redis.command("KEYS", "tokenbucket:shared:*")).asList()
                .containsExactly("tokenbucket:shared:s");

        String log = Files.readString(Path.of("target/kamelet-it.log"));
        assertThat(log).contains("tokenbucket-action").contains("TokenBucketRejectedException")
                .doesNotContain(PASSWORD).doesNotContain("S3cret");
    }
}
