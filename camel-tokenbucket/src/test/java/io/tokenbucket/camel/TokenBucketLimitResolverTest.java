package io.tokenbucket.camel;

import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import io.tokenbucket.math.Limits;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

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
}
