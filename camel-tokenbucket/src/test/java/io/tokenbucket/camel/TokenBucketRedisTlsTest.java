package io.tokenbucket.camel;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import io.tokenbucket.testsupport.redis.RedisTls;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A Redis that speaks TLS only ({@code port 0}, a {@code tls-port}, a certificate from the test CA of
 * {@link RedisTls}), reached from the endpoint's {@code redisUri}.
 *
 * <p>What a URI can say about TLS in Lettuce (6.8, as 7.7) is {@code rediss://} and {@code verifyPeer=NONE|CA|FULL}
 * (default {@code FULL}); it cannot name a trust store. A client built from the URI therefore trusts the JVM's
 * default trust store only, which does not hold the test CA (and is not changed here: a {@code javax.net.ssl}
 * system property would change it for every test in this JVM). So from the URI, TLS to this server works with
 * {@code verifyPeer=NONE} (encrypted, unauthenticated); verification against the test CA needs an application
 * client with {@link SslOptions} ({@code redisClient}), shown in the last test.
 */
class TokenBucketRedisTlsTest extends TokenBucketTestSupport {

    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.withTls();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Test
    void theServerSpeaksTlsOnly() {
        assertThat(redis.tls()).isTrue();
        assertThat(redis.uri()).isEqualTo("rediss://127.0.0.1:" + redis.port());
        // command() speaks TLS, verifying the certificate against the test CA and 127.0.0.1
        assertThat(redis.command("PING")).isEqualTo("PONG");
        assertThat(redis.command("CONFIG", "GET", "port")).isEqualTo(List.of("port", "0"));
        assertThat(redis.command("CONFIG", "GET", "tls-port"))
                .isEqualTo(List.of("tls-port", Integer.toString(redis.port())));
    }

    @Test
    void aRedissUriAdmitsAndRejects() throws Exception {
        redis.flushAll();
        Endpoint endpoint = context.getEndpoint("tokenbucket:tls?store=redis&redisUri=" + redis.uri()
                + "?verifyPeer=NONE&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=1s");
        assertThat(template.request(endpoint, e -> { }).getException()).isNull();
        assertThat(template.request(endpoint, e -> { }).getException())
                .isInstanceOf(TokenBucketRejectedException.class);
        // the bucket is in the TLS server, over a TLS connection
        assertThat((List<?>) redis.command("KEYS", "*")).isNotEmpty();
    }

    @Test
    void aPlainUriToTheTlsPortFailsTheStart() {
        long began = System.nanoTime();
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:plain?store=redis&redisUri=redis://"
                + "127.0.0.1:" + redis.port() + "&storeTimeout=1s"));
        assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(5));
        TokenBucketStoreException store = find(failure, TokenBucketStoreException.class);
        assertThat(store).as("a TokenBucketStoreException in %s", messages(failure)).isNotNull();
        assertThat(store.getMessage()).startsWith("tokenbucket:plain cannot connect to Redis at redis://127.0.0.1:"
                + redis.port());
    }

    @Test
    void fromTheUriFullVerificationFailsTheStartForTheTestCa() {
        // verifyPeer defaults to FULL; the test CA is not in the JVM's trust store
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:full?store=redis&redisUri="
                + redis.uri() + "&storeTimeout=1s"));
        TokenBucketStoreException store = find(failure, TokenBucketStoreException.class);
        assertThat(store).as("a TokenBucketStoreException in %s", messages(failure)).isNotNull();
        assertThat(messages(store)).contains("cannot connect to Redis at rediss://127.0.0.1:" + redis.port())
                .containsIgnoringCase("certification path");
    }

    @Test
    void verifyPeerTakesAModeNotABoolean() {
        // Lettuce (6.8, as 7.7) reads verifyPeer as SslVerifyMode.valueOf(value.toUpperCase()): false is no mode
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:bool?store=redis&redisUri="
                + redis.uri() + "?verifyPeer=false"));
        assertThat(messages(failure)).contains("redisUri is not a valid Redis URI");
    }

    @Test
    void anApplicationClientCanVerifyAgainstTheTestCa() throws Exception {
        redis.flushAll();
        RedisURI uri = RedisURI.create(redis.uri());
        uri.setVerifyPeer(SslVerifyMode.FULL);
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .sslOptions(SslOptions.builder().trustManager(RedisTls.caCertificate().toFile()).build())
                .build());
        try {
            context.getRegistry().bind("verifiedClient", client);
            Endpoint endpoint = context.getEndpoint("tokenbucket:verified?store=redis&redisClient=#verifiedClient"
                    + "&capacity=1&refillPeriod=1h&mode=reject");
            assertThat(template.request(endpoint, e -> { }).getException()).isNull();
            assertThat(template.request(endpoint, e -> { }).getException())
                    .isInstanceOf(TokenBucketRejectedException.class);
            context.removeEndpoint(endpoint);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * The JVM's trust store serves a {@code rediss://} URI as it is: with the test CA in a store named by
     * {@code javax.net.ssl.trustStore}, full verification passes without an application client. The properties are
     * put back afterwards (the JDK reloads its default trust store when they change).
     */
    @Test
    void theJvmTrustStoreVerifiesAUriWithoutAnApplicationClient(@TempDir Path dir) throws Exception {
        redis.flushAll();
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        try (InputStream pem = Files.newInputStream(RedisTls.caCertificate())) {
            store.setCertificateEntry("test-ca", CertificateFactory.getInstance("X.509").generateCertificate(pem));
        }
        Path file = dir.resolve("trust.p12");
        try (OutputStream out = Files.newOutputStream(file)) {
            store.store(out, "changeit".toCharArray());
        }
        String trustStore = System.getProperty("javax.net.ssl.trustStore");
        String password = System.getProperty("javax.net.ssl.trustStorePassword");
        System.setProperty("javax.net.ssl.trustStore", file.toString());
        System.setProperty("javax.net.ssl.trustStorePassword", "changeit");
        try {
            Endpoint endpoint = context.getEndpoint("tokenbucket:jvmtrust?store=redis&redisUri=" + redis.uri()
                    + "&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=2s");
            assertThat(template.request(endpoint, e -> { }).getException()).isNull();
            assertThat(template.request(endpoint, e -> { }).getException())
                    .isInstanceOf(TokenBucketRejectedException.class);
            context.removeEndpoint(endpoint);
            endpoint.stop();
        } finally {
            restore("javax.net.ssl.trustStore", trustStore);
            restore("javax.net.ssl.trustStorePassword", password);
        }
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    private static <T extends Throwable> T find(Throwable e, Class<T> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }
}
