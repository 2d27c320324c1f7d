package io.tokenbucket.camel;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.NoSuchHeaderException;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Reading one exchange's request from its headers, without a route: what is read, in which order, what fails. */
class TokenBucketRequestTest {

    private CamelContext camel;
    private TokenBucketConfiguration config;
    private TokenBucketLimitSource limits;

    @BeforeEach
    void configure() {
        camel = new DefaultCamelContext();
        camel.start();
        config = new TokenBucketConfiguration();
        config.setCapacity(5);
        config.setKeyHeader("proxyId");
        config.setKeyLimits("premium-*=20/1s;slow=2/1s");
        config.setMaxCandidates(3);
        limits = new TokenBucketLimitSource(config);
        limits.validate();
    }

    @AfterEach
    void stop() {
        camel.stop();
    }

    private TokenBucketRequest read(Consumer<Exchange> headers) throws NoSuchHeaderException {
        Exchange exchange = new DefaultExchange(camel);
        headers.accept(exchange);
        return TokenBucketRequest.read(exchange, "t", config, limits);
    }

    private static Consumer<Exchange> header(String name, Object value) {
        return e -> e.getMessage().setHeader(name, value);
    }

    @Test
    void anExchangeWithoutHeadersAcquiresTheCostOnTheDefaultBucket() throws Exception {
        TokenBucketRequest request = read(e -> { });
        assertThat(request.operation()).isEqualTo(TokenBucketOperation.acquire);
        assertThat(request.key()).isEqualTo(TokenBucketRequest.DEFAULT_KEY).isEqualTo(request.stored());
        assertThat(request.limits()).isEqualTo(limits.limits());
        assertThat(request.tokens()).isEqualTo(1);
        assertThat(request.candidates()).isNull();
    }

    @Test
    void theKeyHeaderChoosesTheBucketAndItsLimits() throws Exception {
        TokenBucketRequest request = read(header("proxyId", "premium-7"));
        assertThat(request.key()).isEqualTo("premium-7").isEqualTo(request.stored());
        assertThat(request.limits().capacity()).isEqualTo(20);
        assertThat(read(header("proxyId", 42)).key()).isEqualTo("42"); // converted as Camel converts header values
    }

    @Test
    void limitsAreDecidedOnTheKeyAsSentAndOnlyTheStoredFormIsBounded() throws Exception {
        String key = "premium-" + "x".repeat(10_000);
        TokenBucketRequest request = read(header("proxyId", key));
        assertThat(request.key()).isEqualTo(key);
        assertThat(request.stored()).isEqualTo(BucketKeys.bound(key)).isNotEqualTo(key);
        assertThat(request.limits().capacity()).isEqualTo(20);
    }

    @Test
    void aRequiredKeyThatIsBlankFailsNamingTheHeader() {
        config.setRequireKey(true);
        assertThatThrownBy(() -> read(header("proxyId", "  "))).isInstanceOf(NoSuchHeaderException.class)
                .hasMessageContaining("tokenbucket:t needs a non-blank key in header proxyId (requireKey=true)");
    }

    @Test
    void theCostHeaderOverridesTheOptionAndIsBoundedByTheKeysCapacity() throws Exception {
        config.setCost(2);
        assertThat(read(e -> { }).tokens()).isEqualTo(2);
        assertThat(read(header(TokenBucketConstants.COST, 3)).tokens()).isEqualTo(3);
        assertThat(read(header(TokenBucketConstants.COST, " 4 ")).tokens()).isEqualTo(4);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.COST, 6)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Header CamelTokenBucketCost must be a whole number from 1 to the capacity 5 of"
                        + " tokenbucket:t, was '6': such an exchange could never pass");
        assertThatThrownBy(() -> read(header(TokenBucketConstants.COST, 1.5)))
                .hasMessage("Header CamelTokenBucketCost must be a whole number from 1 to the capacity 5 of"
                        + " tokenbucket:t, was '1.5'");
    }

    @Test
    void aRefundMayGiveBackMoreThanTheCapacity() throws Exception {
        TokenBucketRequest request = read(header(TokenBucketConstants.OPERATION, "refund")
                .andThen(header(TokenBucketConstants.COST, 1000)));
        assertThat(request.operation()).isEqualTo(TokenBucketOperation.refund);
        assertThat(request.tokens()).isEqualTo(1000);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, "refund")
                .andThen(header(TokenBucketConstants.COST, 0))))
                .hasMessage("Header CamelTokenBucketCost must be a whole number of at least 1, was '0'");
    }

    @Test
    void theOperationIsReadWithoutCaseOrSpaceAndABadOneIsNamed() throws Exception {
        assertThat(read(header(TokenBucketConstants.OPERATION, " PEEK ")).operation())
                .isEqualTo(TokenBucketOperation.peek);
        assertThat(read(header(TokenBucketConstants.OPERATION, TokenBucketOperation.remove)).operation())
                .isEqualTo(TokenBucketOperation.remove);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, "drop")))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("Header CamelTokenBucketOperation must be"
                        + " one of acquire, refund, remove, peek, penalize, throttled or rate, was 'drop'");
    }

    @Test
    void removeAndPenalizeTakeNoTokensSoABadCostHeaderDoesNotMatter() throws Exception {
        Consumer<Exchange> badCost = header(TokenBucketConstants.COST, "lots");
        assertThat(read(header(TokenBucketConstants.OPERATION, "remove").andThen(badCost)).tokens()).isZero();
        TokenBucketRequest penalize = read(header(TokenBucketConstants.OPERATION, "penalize").andThen(badCost)
                .andThen(header(TokenBucketConstants.PENALTY, "30s")));
        assertThat(penalize.tokens()).isZero();
        assertThat(penalize.penaltyNanos()).isEqualTo(TimeUnit.SECONDS.toNanos(30));
    }

    @Test
    void aPenaltyIsMillisecondsDurationTextOrADurationOfAtMost365Days() throws Exception {
        Consumer<Exchange> penalize = header(TokenBucketConstants.OPERATION, "penalize");
        assertThat(read(penalize.andThen(header(TokenBucketConstants.PENALTY, 1500))).penaltyNanos())
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(1500));
        assertThat(read(penalize.andThen(header(TokenBucketConstants.PENALTY, Duration.ofMinutes(2)))).penaltyNanos())
                .isEqualTo(TimeUnit.MINUTES.toNanos(2));
        assertThatThrownBy(() -> read(penalize.andThen(header(TokenBucketConstants.PENALTY, "-5"))))
                .hasMessage("Header CamelTokenBucketPenalty must be a duration such as 30s or 2m, or milliseconds,"
                        + " for operation penalize, was '-5'");
        assertThatThrownBy(() -> read(penalize))
                .hasMessage("Header CamelTokenBucketPenalty must be a duration such as 30s or 2m, or milliseconds,"
                        + " for operation penalize, was 'null'");
        assertThatThrownBy(() -> read(penalize.andThen(header(TokenBucketConstants.PENALTY, "366d"))))
                .hasMessage("Header CamelTokenBucketPenalty must be at most 365d (31536000000 ms), was '366d'");
    }

    @Test
    void candidatesAreDistinctInTheirOrderEachWithItsLimitsAndTheCostFitsTheSmallest() throws Exception {
        TokenBucketRequest request = read(header(TokenBucketConstants.CANDIDATES, " premium-1, slow,premium-1,,p3")
                .andThen(header("proxyId", "ignored")).andThen(header(TokenBucketConstants.COST, 2)));
        TokenBucketRequest.Candidates candidates = request.candidates();
        assertThat(request.key()).isNull();
        assertThat(candidates.keys()).containsExactly("premium-1", "slow", "p3");
        assertThat(candidates.stored()).containsExactly("premium-1", "slow", "p3");
        assertThat(candidates.limits()).extracting(Limits::capacity).containsExactly(20L, 2L, 5L);
        assertThat(request.tokens()).isEqualTo(2);
        TokenBucketRequest chosen = request.chosen(1);
        assertThat(chosen.key()).isEqualTo("slow");
        assertThat(chosen.limits().capacity()).isEqualTo(2);
        assertThat(chosen.tokens()).isEqualTo(2);
        assertThat(chosen.candidates()).isNull();
        assertThatThrownBy(() -> read(header(TokenBucketConstants.CANDIDATES, List.of("premium-1", "slow"))
                .andThen(header(TokenBucketConstants.COST, 3))))
                .hasMessageContaining("from 1 to the capacity 2 of tokenbucket:t, was '3'");
    }

    @Test
    void candidatesComeAsACollectionAnArrayOrTextAndAreBounded() throws Exception {
        assertThat(read(header(TokenBucketConstants.CANDIDATES, new String[] {"a", "b"})).candidates().keys())
                .containsExactly("a", "b");
        assertThat(read(header(TokenBucketConstants.CANDIDATES, List.of("a", "a"))).candidates().keys())
                .containsExactly("a");
        assertThatThrownBy(() -> read(header(TokenBucketConstants.CANDIDATES, "a,b,c,d,e")))
                .hasMessage("Header CamelTokenBucketCandidates names more than maxCandidates 3 distinct keys on"
                        + " tokenbucket:t, was 'a,b,c,d,e'");
        assertThatThrownBy(() -> read(header(TokenBucketConstants.CANDIDATES, " , ,")))
                .hasMessage("Header CamelTokenBucketCandidates must name at least one key, was ' , ,'");
    }

    @Test
    void candidatesOnlyCountForAcquire() throws Exception {
        TokenBucketRequest peek = read(header(TokenBucketConstants.OPERATION, "peek")
                .andThen(header(TokenBucketConstants.CANDIDATES, "a,b")).andThen(header("proxyId", "slow")));
        assertThat(peek.candidates()).isNull();
        assertThat(peek.key()).isEqualTo("slow");
    }

    @Test
    void aResolverAnswerThatIsNoLimitsFailsNamingTheKey() {
        config.setLimitResolver(key -> key.equals("bad") ? "lots" : null);
        assertThatThrownBy(() -> read(header("proxyId", "bad"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("the limits the limitResolver gave key 'bad' must be limits such as 10/1s");
    }

    @Test
    void valuesInMessagesAreCut() {
        String long70 = "x".repeat(70);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, long70)))
                .hasMessageEndingWith("was '" + "x".repeat(64) + "... (70 characters)'");
    }
}
