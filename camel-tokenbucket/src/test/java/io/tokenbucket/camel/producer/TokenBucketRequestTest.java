package io.tokenbucket.camel.producer;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketLimitResolver;
import io.tokenbucket.camel.TokenBucketOperation;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.producer.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.camel.producer.TokenBucketRequest.Peek;
import io.tokenbucket.camel.producer.TokenBucketRequest.Penalize;
import io.tokenbucket.camel.producer.TokenBucketRequest.Refund;
import io.tokenbucket.camel.producer.TokenBucketRequest.Remove;
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
        return TokenBucketRequestReader.read(exchange, "t", config, limits::limitsFor);
    }

    private Acquire acquire(Consumer<Exchange> headers) throws NoSuchHeaderException {
        return (Acquire) read(headers);
    }

    private List<String> candidateKeys(Consumer<Exchange> headers) throws NoSuchHeaderException {
        return ((AcquireAny) read(headers)).candidates().stream().map(c -> c.key().sent()).toList();
    }

    private static Consumer<Exchange> header(String name, Object value) {
        return e -> e.getMessage().setHeader(name, value);
    }

    @Test
    void anExchangeWithoutHeadersAcquiresTheCostOnTheDefaultBucket() throws Exception {
        TokenBucketRequest request = read(e -> { });
        assertThat(request).isInstanceOf(Acquire.class);
        Acquire acquire = (Acquire) request;
        assertThat(acquire.key().sent()).isEqualTo(TokenBucketRequest.DEFAULT_KEY).isEqualTo(acquire.key().stored());
        assertThat(acquire.key().limits()).isEqualTo(limits.limits());
        assertThat(acquire.tokens()).isEqualTo(1);
        assertThat(acquire.allOf()).isEmpty();
    }

    @Test
    void theKeyHeaderChoosesTheBucketAndItsLimits() throws Exception {
        Key key = acquire(header("proxyId", "premium-7")).key();
        assertThat(key.sent()).isEqualTo("premium-7").isEqualTo(key.stored());
        assertThat(key.limits().capacity()).isEqualTo(20);
        assertThat(acquire(header("proxyId", 42)).key().sent()).isEqualTo("42"); // as Camel converts header values
    }

    @Test
    void limitsAreDecidedOnTheKeyAsSentAndOnlyTheStoredFormIsBounded() throws Exception {
        String key = "premium-" + "x".repeat(10_000);
        Key request = acquire(header("proxyId", key)).key();
        assertThat(request.sent()).isEqualTo(key);
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
        assertThat(acquire(e -> { }).tokens()).isEqualTo(2);
        assertThat(acquire(header(TokenBucketConstants.COST, 3)).tokens()).isEqualTo(3);
        assertThat(acquire(header(TokenBucketConstants.COST, " 4 ")).tokens()).isEqualTo(4);
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
        assertThat(request).isInstanceOf(Refund.class);
        assertThat(((Refund) request).tokens()).isEqualTo(1000);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, "refund")
                .andThen(header(TokenBucketConstants.COST, 0))))
                .hasMessage("Header CamelTokenBucketCost must be a whole number of at least 1, was '0'");
    }

    @Test
    void theOperationIsReadWithoutCaseOrSpaceAndABadOneIsNamed() throws Exception {
        assertThat(read(header(TokenBucketConstants.OPERATION, " PEEK "))).isInstanceOf(Peek.class);
        assertThat(read(header(TokenBucketConstants.OPERATION, TokenBucketOperation.remove)))
                .isInstanceOf(Remove.class);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, "drop")))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("Header CamelTokenBucketOperation must be"
                        + " one of acquire, refund, remove, peek, penalize, throttled, rate, release, was 'drop'");
    }

    @Test
    void removeAndPenalizeTakeNoTokensSoABadCostHeaderDoesNotMatter() throws Exception {
        Consumer<Exchange> badCost = header(TokenBucketConstants.COST, "lots");
        assertThat(read(header(TokenBucketConstants.OPERATION, "remove").andThen(badCost))).isInstanceOf(Remove.class);
        TokenBucketRequest penalize = read(header(TokenBucketConstants.OPERATION, "penalize").andThen(badCost)
                .andThen(header(TokenBucketConstants.PENALTY, "30s")));
        assertThat(((Penalize) penalize).penaltyNanos()).isEqualTo(TimeUnit.SECONDS.toNanos(30));
    }

    @Test
    void aPenaltyIsMillisecondsDurationTextOrADurationOfAtMost365Days() throws Exception {
        Consumer<Exchange> penalize = header(TokenBucketConstants.OPERATION, "penalize");
        assertThat(((Penalize) read(penalize.andThen(header(TokenBucketConstants.PENALTY, 1500)))).penaltyNanos())
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(1500));
        assertThat(((Penalize) read(penalize.andThen(header(TokenBucketConstants.PENALTY, Duration.ofMinutes(2)))))
                .penaltyNanos()).isEqualTo(TimeUnit.MINUTES.toNanos(2));
        assertThatThrownBy(() -> read(penalize.andThen(header(TokenBucketConstants.PENALTY, "-5"))))
                .hasMessage("Header CamelTokenBucketPenalty must be a duration such as 30s or 2m, or milliseconds,"
                        + " for operation penalize, was '-5'");
        assertThatThrownBy(() -> read(penalize))
                .hasMessage("Header CamelTokenBucketPenalty must be a duration such as 30s or 2m, or milliseconds,"
                        + " for operation penalize, was 'null'");
        assertThatThrownBy(() -> read(penalize.andThen(header(TokenBucketConstants.PENALTY, "366d"))))
                .hasMessage("Header CamelTokenBucketPenalty must be at most 365d (31536000000 ms), was '366d'");
        // the configuration's ceiling, a constant of its own, is the stores' ceiling
        assertThat(TokenBucketConfiguration.MAX_WAIT_MILLIS)
                .isEqualTo(TimeUnit.NANOSECONDS.toMillis(io.tokenbucket.store.BucketStore.MAX_WAIT_NANOS));
    }

    @Test
    void candidatesAreDistinctInTheirOrderEachWithItsLimitsAndTheCostFitsTheSmallest() throws Exception {
        TokenBucketRequest request = read(header(TokenBucketConstants.CANDIDATES, " premium-1, slow,premium-1,,p3")
                .andThen(header("proxyId", "ignored")).andThen(header(TokenBucketConstants.COST, 2)));
        AcquireAny any = (AcquireAny) request;
        List<Key> candidates = any.candidates().stream().map(Candidate::key).toList();
        assertThat(Key.sent(candidates)).containsExactly("premium-1", "slow", "p3");
        assertThat(Key.stored(candidates)).containsExactly("premium-1", "slow", "p3");
        assertThat(Key.limits(candidates)).extracting(Limits::capacity).containsExactly(20L, 2L, 5L);
        assertThat(any.candidates()).allSatisfy(c -> assertThat(c.with()).isEmpty());
        assertThat(any.tokens()).isEqualTo(2);
        Acquire chosen = any.chosen(1);
        assertThat(chosen.key().sent()).isEqualTo("slow");
        assertThat(chosen.key().limits().capacity()).isEqualTo(2);
        assertThat(chosen.tokens()).isEqualTo(2);
        assertThat(chosen.allOf()).isEmpty();
        assertThatThrownBy(() -> read(header(TokenBucketConstants.CANDIDATES, List.of("premium-1", "slow"))
                .andThen(header(TokenBucketConstants.COST, 3))))
                .hasMessageContaining("from 1 to the capacity 2 of tokenbucket:t, was '3'");
    }

    @Test
    void aChosenCandidateGroupIsChargedWithItsGroupThenTheAllOfKeysAndItsRefundGivesBackToEach() throws Exception {
        TokenBucketRequest request = read(header(TokenBucketConstants.CANDIDATES,
                List.of(List.of("p1", "pair p1"), List.of("slow", "pair slow", "pair slow 2")))
                .andThen(header(TokenBucketConstants.ALL_OF, "host")));
        AcquireAny any = (AcquireAny) request;
        assertThat(any.candidates()).extracting(c -> Key.sent(c.with()))
                .containsExactly(List.of("pair p1"), List.of("pair slow", "pair slow 2"));
        assertThat(Key.sent(any.allOf())).containsExactly("host");
        Acquire chosen = any.chosen(1);
        assertThat(chosen.key().sent()).isEqualTo("slow");
        assertThat(Key.sent(chosen.allOf())).containsExactly("pair slow", "pair slow 2", "host");
        Refund refund = chosen.refund();
        assertThat(refund.stored()).containsExactly("slow", "pair slow", "pair slow 2", "host");
        assertThat(refund.limits()).extracting(Limits::capacity).containsExactly(2L, 5L, 5L, 5L);
        assertThat(any.tokens()).isEqualTo(1);
    }

    @Test
    void candidatesComeAsACollectionAnArrayOrTextAndAreBounded() throws Exception {
        assertThat(candidateKeys(header(TokenBucketConstants.CANDIDATES, new String[] {"a", "b"})))
                .containsExactly("a", "b");
        assertThat(candidateKeys(header(TokenBucketConstants.CANDIDATES, List.of("a", "a")))).containsExactly("a");
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
        assertThat(peek).isInstanceOf(Peek.class);
        assertThat(((Peek) peek).key().sent()).isEqualTo("slow");
    }

    @Test
    void aResolverAnswerThatIsNoLimitsFailsNamingTheKey() {
        config.setLimitResolver(TokenBucketLimitResolver.text(key -> key.equals("bad") ? "lots" : null));
        assertThatThrownBy(() -> read(header("proxyId", "bad"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("the limits the limitResolver gave key 'bad' must be limits such as 10/1s");
    }

    @Test
    void valuesInMessagesAreCut() {
        String long70 = "x".repeat(70);
        assertThatThrownBy(() -> read(header(TokenBucketConstants.OPERATION, long70)))
                .hasMessageEndingWith("was '" + "x".repeat(64) + "... (70 characters)'");
    }

    /**
     * The request headers are found in any case among many other headers of the component (results of earlier steps,
     * the default key header), which the hot path walks instead of looking each request header up.
     */
    @Test
    void requestHeadersAreReadInAnyCaseAmongTheComponentsOtherHeaders() throws Exception {
        Consumer<Exchange> others = header(TokenBucketConstants.KEY, "k")
                .andThen(header(TokenBucketConstants.ALLOWED, true)).andThen(header(TokenBucketConstants.REMAINING, 3L))
                .andThen(header(TokenBucketConstants.WAITED, 0L))
                .andThen(header(TokenBucketConstants.RATE, 1.0)).andThen(header(TokenBucketConstants.RATE_CUT, false))
                .andThen(header(TokenBucketConstants.WAIT_ESTIMATE, 0L)).andThen(header("CamelTokenBucketZ", "z"))
                .andThen(header("proxyId", "p1"));
        assertThat(acquire(others).tokens()).isEqualTo(1);
        assertThat(acquire(others).allOf()).isEmpty();
        assertThat(acquire(others.andThen(header("cameltokenbucketCOST", 4))).tokens()).isEqualTo(4);
        assertThat(Key.sent(acquire(others.andThen(header("CAMELTOKENBUCKETALLOF", "host"))).allOf()))
                .containsExactly("host");
        assertThat(read(others.andThen(header("camelTokenBucketOperation", "peek")))).isInstanceOf(Peek.class);
        assertThat(candidateKeys(others.andThen(header("CamelTokenBucketcandidates", "a,b"))))
                .containsExactly("a", "b");
        // and alone, with no other header of the component
        assertThat(acquire(header("cameltokenbucketcost", 2)).tokens()).isEqualTo(2);
    }
}
