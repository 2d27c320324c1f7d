package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.Properties;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** Settings that are refused by name; the happy paths are covered by the route tests. */
class ExampleConfigurationTest {

    @Test
    void anUnknownDslIsRejectedByName() throws Exception {
        assertRejected("example.dsl", "xml", "example.dsl must be java, yaml or main, was 'xml'");
    }

    @Test
    void anUnknownWayToChooseIsRejectedByName() throws Exception {
        assertRejected("example.choose", "random", "example.choose must be freest or roundrobin, was 'random'");
    }

    @Test
    void badNumbersAndDurationsAreRejectedByName() throws Exception {
        assertRejected("example.maxAttempts", "0", "example.maxAttempts must be at least 1, was 0");
        assertRejected("example.cooldown", "soon", "example.cooldown must be a duration such as 500ms or 2s,"
                + " was 'soon'");
        assertRejected("example.maxRetryAfter", "2d", "example.maxRetryAfter must be between 0 and 1d,"
                + " was 172800000 ms");
        assertRejected("example.forgiveAfter", "3d", "example.forgiveAfter must be between 0 and 1d,"
                + " was 259200000 ms");
        assertRejected("example.maxInFlight", "0", "example.maxInFlight must be 1 to 100000, was 0");
        assertRejected("example.maxInFlight", "9999999999", "example.maxInFlight must be 1 to 100000,"
                + " was 9999999999");
        assertRejected("example.maxInFlight", "many", "example.maxInFlight must be a whole number, was 'many'");
    }

    @Test
    void aBadProxyLimitFailsTheStartByName() throws Exception {
        for (String bad : new String[] {"2", "0/1s", "2/0s", "2/soon", "-1/1s", "99999999999999999999/1s", "/"}) {
            assertRejected("example.proxyLimit", bad, "example.proxyLimit must be N/period with N and the period at"
                    + " least 1 (4/1s), was '" + bad + "'");
        }
    }

    @Test
    void theStartWarnsWhenTheStoreRetriesEndBeforeTheLongestRestTheyMustWaitOut() {
        String warning = ExampleConfiguration.retriesShortOfRests(true, 119, 500, 60_000);
        assertThat(warning).isEqualTo("example.storeRetries x example.storeRetryDelay (119 x 500 ms) is less than"
                + " example.maxRetryAfter (60000 ms) with example.choose=freest and example.pairMaxWait: a URL whose"
                + " host rests every proxy goes to the dead letter before the rest ends");
        assertThat(ExampleConfiguration.retriesShortOfRests(true, 0, 500, 1)).isNotNull();
        assertThat(ExampleConfiguration.retriesShortOfRests(true, 120, 500, 60_001)).isNotNull();
        // exactly as long is enough, and the defaults (130 x 500 ms against 60 s) outlast the longest rest
        assertThat(ExampleConfiguration.retriesShortOfRests(true, 120, 500, 60_000)).isNull();
        assertThat(ExampleConfiguration.retriesShortOfRests(true, 130, 500, 60_000)).isNull();
        // rests not waited out by the retries (round robin, or no booking horizon): nothing to say
        assertThat(ExampleConfiguration.retriesShortOfRests(false, 0, 500, 60_000)).isNull();
        // Camel's "forever" (-1) and counts whose product passes a long outlast any rest, never wrap into a warning
        assertThat(ExampleConfiguration.retriesShortOfRests(true, -1, 500, 60_000)).isNull();
        assertThat(ExampleConfiguration.retriesShortOfRests(true, Long.MAX_VALUE, 500, 86_400_000)).isNull();
        assertThat(ExampleConfiguration.retriesShortOfRests(true, Long.MAX_VALUE / 2 + 1, 2, Long.MAX_VALUE))
                .isNull();
    }

    @Test
    void aBadHostLimitFailsTheStartByName() throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            Properties properties = new Properties();
            properties.setProperty("example.proxies", "http://127.0.0.1:9 id=p1");
            properties.setProperty("example.hostLimit", "lots");
            context.getPropertiesComponent().setInitialProperties(properties);
            assertThatIllegalArgumentException().isThrownBy(() -> new ExampleConfiguration().configure(context))
                    .withMessageStartingWith("example.hostLimit must be N/period such as 2/1s, was 'lots' (limits");
        }
    }

    /** Asserts that configuring a context with {@code key=value} is refused with exactly {@code message}. */
    static void assertRejected(String key, String value, String message) throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            Properties properties = new Properties();
            properties.setProperty("example.proxies", "http://127.0.0.1:9 id=p1");
            properties.setProperty(key, value);
            context.getPropertiesComponent().setInitialProperties(properties);
            assertThatIllegalArgumentException().isThrownBy(() -> new ExampleConfiguration().configure(context))
                    .withMessage(message);
        }
    }
}
