package io.tokenbucket.store.redis;

import java.util.List;

import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisCredentialsProvider;
import io.lettuce.core.RedisURI;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What is shown of a Redis URI comes from its parsed parts, and a password written as it is (with the characters
 * a URI reserves) still reaches Lettuce whole. Plain strings, no server.
 */
class RedisUriTextTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        // uri | described | user | password
        "redis://127.0.0.1:6379                      | redis://127.0.0.1:6379             |       |",
        "redis://:s3cret@h:7000/2                    | redis://***@h:7000/2               |       | s3cret",
        "redis://alice:p%40ss%2Fw@h:7000             | redis://***@h:7000                 | alice | p@ss/w",
        "redis://alice:p@ss@h:7000                   | redis://***@h:7000                 | alice | p@ss",
        "redis://alice:a:b@c%2Fd%3Fe%23f g@h:7000/1  | redis://***@h:7000/1               | alice | a:b@c/d?e#f g",
        "redis://[::1]:7000                          | redis://[::1]:7000                 |       |",
        "redis://bob:100%@h:7000                     | redis://***@h:7000                 | bob   | 100%",
        "rediss://bob:pass1@h:7000                   | rediss://***@h:7000                | bob   | pass1",
        "redis-sentinel://:pass1@s1:26379,s2:26380#main | redis-sentinel://***@s1:26379,s2:26380#main | | pass1",
        "redis-cluster://u:p@ss@n1:7000,n2:7001      | redis-cluster://***@n1:7000,n2:7001 | u   | p@ss",
    })
    void describesFromTheParsedUriAndReadsPasswordsAsWritten(String uri, String described, String user,
                                                              String password) {
        RedisUriText text = RedisConnections.describe(uri);
        assertThat(text.described()).isEqualTo(described);
        // what Lettuce connects with: one URI per cluster seed, else the one URI (for a redis-sentinel:// URI, the
        // data node the sentinels name: Lettuce gives the credentials to it, none to the sentinels)
        List<RedisURI> nodes = RedisUris.isCluster(RedisUris.scheme(uri)) ? RedisUris.clusterSeeds(uri)
                : List.of(RedisUris.parse(uri));
        for (RedisURI node : nodes) {
            RedisCredentials credentials = credentials(node);
            if (password == null) {
                assertThat(credentials == null || !credentials.hasPassword()).as("%s has no password", node).isTrue();
                continue;
            }
            assertThat(credentials).as("credentials of %s", node).isNotNull();
            assertThat(new String(credentials.getPassword())).as("password for %s", node).isEqualTo(password);
            assertThat(credentials.getUsername()).as("user for %s", node).isEqualTo(user);
            for (RedisURI sentinel : node.getSentinels()) {
                RedisCredentials own = credentials(sentinel);
                assertThat(own == null || !own.hasPassword() || new String(own.getPassword()).equals(password))
                        .as("no part of the password for sentinel %s", sentinel).isTrue();
            }
        }
        if (password != null && !uri.startsWith("redis-sentinel")) {
            assertThat(nodes.get(0).getPort()).isEqualTo(7000);
        }
        if (password != null) {
            assertThat(text.redact("failed for " + password + " at " + uri)).doesNotContain(password)
                    .isEqualTo("failed for *** at ***");
        }
    }

    /** A URI's credentials, resolved as {@link RedisUriText} resolves them; null when it has none. */
    private static RedisCredentials credentials(RedisURI uri) {
        RedisCredentialsProvider provider = uri.getCredentialsProvider();
        return provider == null ? null
                : provider instanceof RedisCredentialsProvider.ImmediateRedisCredentialsProvider immediate
                ? immediate.resolveCredentialsNow() : provider.resolveCredentials().toFuture().join();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        // an @ after the authority: a password holding / ? or # would be read as the host; never guessed
        "redis://carl:Tr0ub4dor@correcthorse?battery@127.0.0.1:7000",
        "redis://admin:2024?secret@127.0.0.1:7000",
        "redis://:secret@127.0.0.1/0#x@evil.example",
        "redis://:pa/ss@127.0.0.1:6379?clientName=svc@evil.example",
        "redis-cluster://10.0.0.1:7000,10.0.0.2:7001?clientName=svc@evil.example",
        "redis-sentinel://u:12?x@s1:26379#main",
        "redis-socket://:p/ssw0rd@/tmp/redis.sock",
        // the price of never guessing: an @ in a query parameter must be written %40 too
        "redis://h:6379/0?clientName=a@b",
        "redis://bob:pass word@h:6379:extra",
        "redis://bob:secret@h:6379/not-a-database",
        "redis://bob:secret@",
        "bogus",
    })
    void aUriThatDoesNotParseIsNotShown(String uri) {
        RedisUriText text = RedisConnections.describe(uri);
        assertThat(text.described()).startsWith("a Redis URI that does not parse (").doesNotContain("secret")
                .doesNotContain("pass").doesNotContain("Tr0ub4dor").doesNotContain("ssw0rd").doesNotContain("evil");
    }
}
