package io.tokenbucket.store.redis;

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
        if (password != null && !uri.startsWith("redis-cluster") && !uri.startsWith("redis-sentinel")) {
            RedisURI parsed = RedisUris.parse(uri);
            var credentials = parsed.getCredentialsProvider().resolveCredentials().toFuture().join();
            assertThat(new String(credentials.getPassword())).isEqualTo(password);
            assertThat(credentials.getUsername()).isEqualTo(user);
            assertThat(parsed.getPort()).isEqualTo(7000);
        }
        if (password != null) {
            assertThat(text.redact("failed for " + password + " at " + uri)).doesNotContain(password)
                    .isEqualTo("failed for *** at ***");
        }
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
