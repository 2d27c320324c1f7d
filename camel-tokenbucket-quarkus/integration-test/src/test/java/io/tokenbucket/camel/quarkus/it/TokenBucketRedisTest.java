package io.tokenbucket.camel.quarkus.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import io.lettuce.core.RedisClient;
import io.netty.util.Version;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.tokenbucket.camel.TokenBucketRejectedException;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.ProducerTemplate;
import org.junit.jupiter.api.Test;

/**
 * A route throttled on a real redis-server (with a password) in a Quarkus application, the endpoint's readiness on
 * Quarkus's health endpoint, and the password kept out of the log.
 */
@QuarkusTest
@QuarkusTestResource(TokenBucketRedisResource.class)
class TokenBucketRedisTest {

    @Inject
    ProducerTemplate producer;

    @Inject
    Admissions admissions;

    @TestHTTPResource("/q/health/ready")
    URL ready;

    @Test
    void theBucketsAreInRedis() {
        producer.sendBodyAndHeader("direct:redis", "r1", "tenant", "r");
        producer.sendBodyAndHeader("direct:redis", "r2", "tenant", "r");
        assertThatThrownBy(() -> producer.sendBodyAndHeader("direct:redis", "r3", "tenant", "r"))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);

        assertThat(admissions.of("redis")).extracting(Admissions.Admission::body).filteredOn(b -> b.startsWith("r"))
                .containsExactly("r1", "r2");
        assertThat((List<?>) TokenBucketRedisResource.redis.command("KEYS", "tokenbucket:shared:*"))
                .asList().contains("tokenbucket:shared:r");
    }

    @Test
    void lettuceIsTheLineThatRunsOnQuarkusNetty() {
        // Quarkus's Netty 4.1 and the extension's Lettuce 6 line (Lettuce 7 needs Netty 4.2), not the component's
        assertThat(Version.identify().get("netty-common").artifactVersion()).startsWith("4.1.");
        assertThat(RedisClient.class.getPackage().getImplementationVersion()).startsWith("6.");
    }

    @Test
    void theReadinessCheckShowsOnQuarkusHealthEndpoint() throws Exception {
        assertThat(get(ready)).satisfies(up -> {
            assertThat(up.statusCode()).isEqualTo(200);
            assertThat(up.body()).contains("\"camel-tokenbucket\"", "\"tokenbucket-shared\": \"UP\"");
        });
        TokenBucketRedisResource.redis.stop();
        try {
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(get(ready)).satisfies(down -> {
                assertThat(down.statusCode()).isEqualTo(503);
                assertThat(down.body()).contains("\"tokenbucket-shared\": \"DOWN\"",
                        "redis at redis://***@127.0.0.1:" + TokenBucketRedisResource.redis.port());
            }));
        } finally {
            TokenBucketRedisResource.redis.start();
        }
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(get(ready).statusCode())
                .isEqualTo(200));
    }

    @Test
    void thePasswordIsNeverLogged() throws IOException {
        producer.sendBodyAndHeader("direct:redis", "s1", "tenant", "s"); // the endpoint has connected
        String log = Files.readString(Path.of("target/quarkus.log"));
        assertThat(log).contains("tokenbucket").doesNotContain(TokenBucketRedisResource.PASSWORD)
                .doesNotContain("S3cret");
    }

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static HttpResponse<String> get(URL url) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url.toString())).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
