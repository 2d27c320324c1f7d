package io.tokenbucket.camel;

import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import io.tokenbucket.math.Limits;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The limit resolver SPI: it answers limits, used as they are (no text parsed per key); the text form parses each
 * distinct answer once.
 */
class TokenBucketLimitResolverTest {

    private static final Limits GOLD = TokenBucketLimitResolver.parse("20/1s,1000/1h");

    private static TokenBucketLimitSource source(TokenBucketConfiguration config) {
        TokenBucketLimitSource source = new TokenBucketLimitSource(config);
        source.validate();
        return source;
    }

    @Test
    void theLimitsAResolverAnswersAreUsedAsTheyAreAndNullMeansTheEndpointsOwn() {
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setCapacity(5);
        config.setKeyLimits("silver=2/1s");
        config.setLimitResolver(key -> key.startsWith("gold-") ? GOLD : null);
        TokenBucketLimitSource source = source(config);
        assertThat(source.limitsFor("gold-1")).isSameAs(GOLD);
        assertThat(source.limitsFor("silver").capacity()).isEqualTo(2); // keyLimits, after the resolver
        assertThat(source.limitsFor("other")).isSameAs(source.limits());
    }

    @Test
    void withAdaptiveTheEndpointsAdaptationIsAddedToTheAnswerAndTheAnswersOwnIgnored() {
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setAdaptive(true);
        config.setAdaptiveKeys("gold-*");
        Limits foreign = GOLD.withAdaptive(io.tokenbucket.math.Adaptive.of(1, 1, 1, 0, 0));
        config.setLimitResolver(key -> foreign);
        TokenBucketLimitSource source = source(config);
        assertThat(source.limitsFor("gold-1")).isEqualTo(GOLD.withAdaptive(source.limits().adaptive()));
        assertThat(source.limitsFor("plain").adaptive()).isNull(); // adaptiveKeys leave it out
    }

    @Test
    void theTextFormParsesEachDistinctAnswerOnce() {
        AtomicInteger asked = new AtomicInteger();
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setLimitResolver(TokenBucketLimitResolver.text(key -> {
            asked.incrementAndGet();
            return "7/1s:9";
        }));
        TokenBucketLimitSource source = source(config);
        Limits first = source.limitsFor("a");
        assertThat(first.capacity()).isEqualTo(9);
        assertThat(source.limitsFor("b")).isSameAs(first);
        assertThat(asked).hasValue(2);
    }

    /**
     * An answer the store's clock would not keep (a rate it slows by more than 1 %) is refused as the same limits in
     * an option are: the exchange fails naming the key and the limits, instead of being served more slowly.
     */
    @ParameterizedTest
    @CsvSource({"local, 999999999/1s", "redis, 600000/1s"})
    void anAnswerTheStoresClockWouldSlowFailsTheExchangeNamingTheKeyAndTheLimits(String store, String limits)
            throws Exception {
        TokenBucketConfiguration options = new TokenBucketConfiguration();
        options.setStore(TokenBucketStoreType.valueOf(store));
        options.setLimits(limits);
        assertThatThrownBy(() -> TokenBucketLimitSource.check(options)).as("as an option")
                .hasMessageContaining("slower");

        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setStore(TokenBucketStoreType.valueOf(store));
        Limits answer = TokenBucketLimitResolver.parse(limits);
        config.setLimitResolver(key -> key.equals("fast") ? answer : null);
        TokenBucketLimitSource source = source(config);
        assertThatThrownBy(() -> source.limitsFor("fast")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key 'fast'").hasMessageContaining(TokenBucketLimitSource.describe(answer))
                .hasMessageContaining("slower");
        assertThat(source.limitsFor("other")).isSameAs(source.limits());

        if (store.equals("local")) { // through a route: the exchange fails with it, once
            try (DefaultCamelContext camel = new DefaultCamelContext()) {
                camel.getRegistry().bind("resolver", config.getLimitResolver());
                camel.start();
                Exchange done = camel.createProducerTemplate().request("tokenbucket:r?limitResolver=#resolver",
                        e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "fast"));
                assertThat(done.getException()).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("key 'fast'");
            }
        }
    }
}
