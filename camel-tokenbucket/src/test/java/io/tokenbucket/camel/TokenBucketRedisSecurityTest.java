package io.tokenbucket.camel;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.util.URISupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A Redis with a password, and one with an ACL user: the credentials from the URI authenticate, and a password
 * never appears in an endpoint's string, an exception message or a log line (everything this test's JVM writes to
 * stderr is checked).
 */
class TokenBucketRedisSecurityTest extends TokenBucketTestSupport {

    private static final String PASSWORD = "s3cret-Pa55word";
    /** The ACL user's password; the ACL server's default user has {@link #ACL_ADMIN_PASSWORD}. */
    private static final String ACL_PASSWORD = "alice-Pa55";
    private static final String ACL_ADMIN_PASSWORD = "admin-Pa55word";
    private static RedisHandle redis;
    private static RedisHandle acl;

    private CapturedStderr stderr;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.withPassword(PASSWORD);
        // the default user needs a password too (so only alice gets in without one of hers), and the handle
        // authenticates with it for CLIENT LIST
        acl = RedisServers.standalone("requirepass " + ACL_ADMIN_PASSWORD,
                "user alice on >" + ACL_PASSWORD + " ~* &* +@all");
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
        acl.close();
    }

    @BeforeEach
    void captureStderr() {
        stderr = new CapturedStderr();
    }

    @AfterEach
    void restoreStderr() {
        stderr.close();
        assertThat(stderr.text()).as("everything logged").doesNotContain(PASSWORD)
                .doesNotContain(ACL_PASSWORD).doesNotContain(ACL_ADMIN_PASSWORD);
    }

    @Test
    void thePasswordAuthenticatesAndIsNeverShown() throws Exception {
        Endpoint endpoint = context.getEndpoint("tokenbucket:auth?store=redis&redisUri=" + redis.authenticatedUri()
                + "&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=300ms");
        assertThat(template.request(endpoint, e -> { }).getException()).isNull();
        Exchange refused = template.request(endpoint, e -> { });
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(messages(refused.getException())).doesNotContain(PASSWORD);
        assertThat(endpoint.toString()).doesNotContain(PASSWORD);
        assertThat(URISupport.sanitizeUri(endpoint.getEndpointUri())).doesNotContain(PASSWORD);

        redis.stop();
        try {
            Exchange failed = template.request(endpoint, e -> { });
            assertThat(failed.getException()).isInstanceOf(TokenBucketStoreException.class);
            assertThat(messages(failed.getException())).contains("redis at redis://***@127.0.0.1")
                    .doesNotContain(PASSWORD);
        } finally {
            redis.start();
        }
    }

    @Test
    void aWrongPasswordFailsTheStartWithoutShowingIt() {
        String wrong = "wrong-Pa55word";
        // the context is started: getEndpoint starts the endpoint, which connects
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:wrong?store=redis&redisUri=redis://:"
                + wrong + "@127.0.0.1:" + redis.port()));
        assertThat(failure).isNotNull();
        assertThat(messages(failure)).contains("cannot connect to Redis at redis://***@127.0.0.1")
                .doesNotContain(wrong).doesNotContain(PASSWORD);
    }

    @Test
    void withoutThePasswordRedisRefuses() {
        assertThat(messages(catchThrowable(() -> context.getEndpoint("tokenbucket:none?store=redis&redisUri="
                + redis.uri())))).containsIgnoringCase("NOAUTH");
    }

    @Test
    void anAclUserFromTheUriAuthenticatesAndIsNeverShown() throws Exception {
        Endpoint endpoint = context.getEndpoint("tokenbucket:acl?store=redis&redisUri=redis://alice:" + ACL_PASSWORD
                + "@127.0.0.1:" + acl.port() + "&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=300ms");
        assertThat(template.request(endpoint, e -> { }).getException()).isNull();
        Exchange refused = template.request(endpoint, e -> { });
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(messages(refused.getException())).doesNotContain(ACL_PASSWORD);
        assertThat(endpoint.toString()).doesNotContain(ACL_PASSWORD);
        assertThat(URISupport.sanitizeUri(endpoint.getEndpointUri())).doesNotContain(ACL_PASSWORD);

        // the bucket is in this server, written by a connection of alice's (the default user is still locked)
        assertThat((java.util.List<?>) acl.command("KEYS", "*")).isNotEmpty();
        assertThat(String.valueOf(acl.command("CLIENT", "LIST"))).contains("user=alice");

        acl.stop();
        try {
            Exchange failed = template.request(endpoint, e -> { });
            assertThat(failed.getException()).isInstanceOf(TokenBucketStoreException.class);
            assertThat(messages(failed.getException())).contains("redis at redis://***@127.0.0.1")
                    .doesNotContain(ACL_PASSWORD).doesNotContain("alice");
        } finally {
            acl.start();
        }
    }

    @Test
    void anAclUserWithAWrongPasswordFailsTheStartWithoutShowingIt() {
        String wrong = "wrong-alice-Pa55";
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:aclwrong?store=redis&redisUri="
                + "redis://alice:" + wrong + "@127.0.0.1:" + acl.port()));
        assertThat(failure).isNotNull();
        assertThat(messages(failure)).contains("cannot connect to Redis at redis://***@127.0.0.1")
                .containsIgnoringCase("WRONGPASS").doesNotContain(wrong).doesNotContain(ACL_PASSWORD);
    }
}
