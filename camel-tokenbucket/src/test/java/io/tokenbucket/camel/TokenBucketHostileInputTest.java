package io.tokenbucket.camel;

import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import io.tokenbucket.math.Limits;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Headers and keys at the limits of their types, on the local store: a wait never wraps into an admission, a
 * penalty has a ceiling, limits follow the key as sent, the waiting exchanges and the candidates are bounded,
 * and a refund of more than the capacity fills the bucket. Each bad value fails only its exchange, with a message
 * naming the header and the value, and consumes nothing. (The same over Redis: {@link TokenBucketRedisHostileInputTest}.)
 */
class TokenBucketHostileInputTest extends TokenBucketTestSupport {

    /** The store of the endpoints under test; the Redis subclass says redis. */
    String store() {
        return "store=local";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // the failures are what these tests look at
                // one token per 50 years, in delay mode and without maxWait: any wait is accepted up to the ceiling
                from("direct:decades").to("tokenbucket:decades?limits=1/18250d&" + store()).to("mock:decades");
                from("direct:penalized").to("tokenbucket:penalized?capacity=5&refillPeriod=1s&mode=reject&"
                        + store());
                from("direct:anon").to("tokenbucket:anon?capacity=5&refillPeriod=1h&mode=reject"
                        + "&keyLimits=anon-*=1/1h;vip-*x=3/1h&" + store());
                from("direct:waiting").to("tokenbucket:waiting?capacity=1&refillPeriod=1h&maxWaiting=3&" + store())
                        .to("mock:waiting");
                from("direct:candidates").to("tokenbucket:candidates?capacity=1&refillPeriod=1h&mode=reject"
                        + "&maxCandidates=3&" + store());
                from("direct:refund").to("tokenbucket:refund?capacity=3&refillPeriod=1h&mode=reject&" + store());
            }
        };
    }

    @Test
    void aDebtBuiltUpOnASlowBucketIsRejectedAtTheCeilingAndNeverWrapsIntoAnAdmission() throws Exception {
        getMockEndpoint("mock:decades").expectedMessageCount(1);
        assertThat(send("direct:decades", Map.of()).getException()).isNull();
        // each of these would wait 50 years more than the one before; in 6 the debt would pass Long.MAX_VALUE
        // nanoseconds and, wrapped, admit at once
        Sent sent = sendAsync("direct:decades", 8, Map.of());
        assertThat(sent.done().await(10, TimeUnit.SECONDS)).as("every one answered at once").isTrue();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("longer than the longest wait of any exchange (365d, 31536000000 ms)"));
        getMockEndpoint("mock:decades").assertIsSatisfied();
    }

    @Test
    void aPenaltyAboveTheCeilingIsRefusedNamingTheHeaderAndValue() {
        List<Object> tooLong = List.of(Long.MAX_VALUE, "9223372036854775807", "200000000000000d",
                Duration.ofSeconds(Long.MAX_VALUE), BigInteger.TEN.pow(30), 1e30, "366d",
                TimeUnit.DAYS.toMillis(365) + 1);
        for (Object penalty : tooLong) {
            Exchange e = send("direct:penalized", Map.of(TokenBucketConstants.OPERATION, "penalize",
                    TokenBucketConstants.KEY, "p", TokenBucketConstants.PENALTY, penalty));
            assertThat(e.getException()).as("penalty %s", penalty).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(TokenBucketConstants.PENALTY).hasMessageContaining("'" + penalty)
                    .satisfiesAnyOf(x -> assertThat(x).hasMessageContaining("at most 365d"),
                            x -> assertThat(x).hasMessageContaining("must be a duration"));
        }
        for (Object nonsense : List.of(-1L, "-5s", Double.NaN, "1.5", "soon", Duration.ofMillis(-1), "")) {
            Exchange e = send("direct:penalized", Map.of(TokenBucketConstants.OPERATION, "penalize",
                    TokenBucketConstants.KEY, "p", TokenBucketConstants.PENALTY, nonsense));
            assertThat(e.getException()).as("penalty %s", nonsense).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(TokenBucketConstants.PENALTY);
        }
        // none of them touched the bucket: its 5 tokens are all there
        Exchange peek = send("direct:penalized", Map.of(TokenBucketConstants.OPERATION, "peek",
                TokenBucketConstants.KEY, "p"));
        assertThat(peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isEqualTo(5L);
    }

    @Test
    void aPenaltyOfTheCeilingHoldsTheKeyAndItsEstimateIsNeverNegative() {
        Exchange penalized = send("direct:penalized", Map.of(TokenBucketConstants.OPERATION, "penalize",
                TokenBucketConstants.KEY, "year", TokenBucketConstants.PENALTY, "365d"));
        assertThat(penalized.getException()).isNull();
        assertThat(penalized.getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isBetween(TimeUnit.DAYS.toMillis(365) - 1000, TimeUnit.DAYS.toMillis(365));
        assertThat(send("direct:penalized", Map.of(TokenBucketConstants.KEY, "year")).getException())
                .isInstanceOf(TokenBucketRejectedException.class);
        // the other keys of the endpoint are not affected
        assertThat(send("direct:penalized", Map.of(TokenBucketConstants.KEY, "other")).getException()).isNull();
    }

    @Test
    void aKeyWithAnUnpairedSurrogateDoesNotDrainTheBucketOfTheKeyUtf8WouldMakeOfIt() {
        for (int i = 0; i < 3; i++) {
            assertThat(send("direct:refund", Map.of(TokenBucketConstants.KEY, "bob\uD800")).getException()).isNull();
        }
        assertThat(send("direct:refund", Map.of(TokenBucketConstants.KEY, "bob\uD800")).getException())
                .isInstanceOf(TokenBucketRejectedException.class);
        // UTF-8 writes the surrogate as '?': stored so, both keys would share one bucket in Redis
        assertThat(send("direct:refund", Map.of(TokenBucketConstants.KEY, "bob?")).getException()).isNull();
        assertThat(send("direct:refund", Map.of(TokenBucketConstants.KEY, "bob\uDBFF")).getException()).isNull();
    }

    @Test
    void limitsFollowTheKeyAsSentHoweverLong() {
        String anon = "anon-" + "x".repeat(200); // over 128 characters: stored as its hash
        assertThat(send("direct:anon", Map.of(TokenBucketConstants.KEY, anon)).getException()).isNull();
        Exchange second = send("direct:anon", Map.of(TokenBucketConstants.KEY, anon));
        assertThat(second.getException()).as("keyLimits anon-*=1/1h, not the endpoint's 5")
                .isInstanceOf(TokenBucketRejectedException.class);
        TokenBucketRejectedException rejected = (TokenBucketRejectedException) second.getException();
        assertThat(rejected.getKey()).isEqualTo(anon);
        assertThat(rejected.getMessage()).contains("capacity 1, refill 1 per 3600000 ms")
                .contains("anon-xxx").contains("(205 characters)").hasSizeLessThan(400);
        // a megabyte key matched against a glob (vip-*x) whose star must run to the key's end; the key's stored
        // form is its hash, the limits still those of the key as sent (several stars: the test below)
        String huge = "vip-" + "x".repeat(1 << 20);
        for (int i = 0; i < 3; i++) {
            assertThat(send("direct:anon", Map.of(TokenBucketConstants.KEY, huge)).getException()).isNull();
        }
        assertThat(send("direct:anon", Map.of(TokenBucketConstants.KEY, huge)).getException())
                .as("vip-*x=3/1h").isInstanceOf(TokenBucketRejectedException.class);
    }

    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a backtracking match ignores interrupts
    void aKeyLimitsGlobCannotBeMadeToBacktrack() throws Exception {
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:globs?keyLimits=a*a*a*a*a*a*b=1/1h",
                TokenBucketEndpoint.class);
        // a regular expression a.*a.*a.*a.*a.*a.*b over 20,000 a's takes longer than this test may run
        TokenBucketLimitSource limits = endpoint.limitSource();
        assertThat(limits.limitsFor("a".repeat(20_000))).isEqualTo(limits.limits());
        assertThat(limits.limitsFor("a".repeat(20_000) + "b")).isNotEqualTo(limits.limits());
    }

    @Test
    void theLimitResolverIsAskedWithTheKeyAsSent() {
        List<String> asked = Collections.synchronizedList(new ArrayList<>());
        Limits goldLimits = TokenBucketLimitResolver.parse("2/1h");
        context.getRegistry().bind("resolver", (TokenBucketLimitResolver) key -> {
            asked.add(key);
            return key.startsWith("gold-") ? goldLimits : null;
        });
        String gold = "gold-" + "y".repeat(500);
        String uri = "tokenbucket:resolved?capacity=9&refillPeriod=1h&mode=reject&limitResolver=#resolver&" + store();
        assertThat(send(uri, Map.of(TokenBucketConstants.KEY, gold)).getException()).isNull();
        assertThat(send(uri, Map.of(TokenBucketConstants.KEY, gold)).getException()).isNull();
        assertThat(send(uri, Map.of(TokenBucketConstants.KEY, gold)).getException())
                .isInstanceOf(TokenBucketRejectedException.class);
        assertThat(asked).containsOnly(gold);
    }

    @Test
    void pastMaxWaitingAnExchangeThatWouldWaitIsRejectedAtOnceAndConsumesNothing() throws Exception {
        context.getShutdownStrategy().setTimeout(1); // three exchanges are left waiting for hours
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:waiting?capacity=1&refillPeriod=1h"
                + "&maxWaiting=3&" + store(), TokenBucketEndpoint.class);
        assertThat(send("direct:waiting", Map.of(TokenBucketConstants.KEY, "k")).getException()).isNull();
        Sent waiting = sendAsync("direct:waiting", 3, Map.of(TokenBucketConstants.KEY, "k"));
        org.awaitility.Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 3);
        long estimateBefore = estimate(endpoint, "k");

        Sent over = sendAsync("direct:waiting", 5, Map.of(TokenBucketConstants.KEY, "k"));
        assertThat(over.done().await(10, TimeUnit.SECONDS)).as("answered at once").isTrue();
        assertThat(over.exchanges()).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketRejectedException.class).hasMessageContaining("maxWaiting 3"));
        assertThat(estimate(endpoint, "k")).as("nothing consumed").isBetween(estimateBefore - 1000, estimateBefore);
        assertThat(waiting.done().getCount()).isEqualTo(3);
        // an exchange that need not wait still passes
        assertThat(send("direct:waiting", Map.of(TokenBucketConstants.KEY, "free")).getException()).isNull();
        assertThat(endpoint.getWaitingCount()).isEqualTo(3);
    }

    private long estimate(TokenBucketEndpoint endpoint, String key) {
        String peek = endpoint.peekKey(key);
        return Long.parseLong(peek.substring(peek.indexOf("waitMillis=") + "waitMillis=".length()));
    }

    @Test
    void candidatesAreDeduplicatedAndCappedNamingTheHeader() {
        Exchange dup = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, "a,a,a,a,b,b,c,a"));
        assertThat(dup.getException()).isNull();
        assertThat(dup.getMessage().getHeader(TokenBucketConstants.KEY)).isEqualTo("a");
        Exchange over = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, "b,c,d,e"));
        assertThat(over.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.CANDIDATES).hasMessageContaining("maxCandidates 3")
                .hasMessageContaining("'b,c,d,e'");
        // a ten-megabyte header of a million keys fails as fast, naming only its start
        StringBuilder many = new StringBuilder();
        for (int i = 0; i < 1_000_000; i++) {
            many.append("key-").append(i).append(',');
        }
        Exchange huge = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, many.toString()));
        assertThat(huge.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxCandidates 3").hasMessageContaining("characters)");
        assertThat(huge.getException().getMessage()).hasSizeLessThan(400);
        // an array and any Iterable are read item by item, like a collection (not as the text of the object)
        Exchange fromArray = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, new String[] {"f", "g"}));
        assertThat(fromArray.getException()).isNull();
        assertThat(fromArray.getMessage().getHeader(TokenBucketConstants.KEY)).isEqualTo("f");
        Exchange arrayAgain = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, new String[] {"f"}));
        assertThat(arrayAgain.getException()).as("f's one token is taken").isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("'f'");
        Iterable<String> iterable = () -> List.of("g", "h").iterator();
        assertThat(send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, iterable)).getMessage()
                .getHeader(TokenBucketConstants.KEY)).isEqualTo("g");
        // an Iterable that gives its entries only once is read once: looking for groups does not use them up
        java.util.Iterator<String> once = List.of("i", "j").iterator();
        Iterable<String> oneShot = () -> once;
        Exchange fromOneShot = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, oneShot));
        assertThat(fromOneShot.getException()).isNull();
        assertThat(fromOneShot.getMessage().getHeader(TokenBucketConstants.KEY)).isEqualTo("i");
        assertThat(send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, new String[] {"a", "b", "c", "d"}))
                .getException()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[a, b, c, d]");
        List<String> list = new ArrayList<>(Collections.nCopies(10_000, "b"));
        list.addAll(List.of("c", "d"));
        Exchange fromList = send("direct:candidates", Map.of(TokenBucketConstants.CANDIDATES, list));
        assertThat(fromList.getException()).as("10,002 items, 3 distinct").isNull();
        assertThat(fromList.getMessage().getHeader(TokenBucketConstants.KEY)).isEqualTo("b");
        // none of the refused ones consumed a token: c, d and e still have theirs
        for (String key : List.of("c", "d", "e")) {
            assertThat(send("direct:candidates", Map.of(TokenBucketConstants.KEY, key)).getException())
                    .as(key).isNull();
        }
    }

    @Test
    void aRefundOfMoreThanTheCapacityIsAcceptedAndFillsTheBucket() {
        for (int i = 0; i < 3; i++) {
            send("direct:refund", Map.of(TokenBucketConstants.KEY, "r"));
        }
        Exchange refund = send("direct:refund", Map.of(TokenBucketConstants.KEY, "r",
                TokenBucketConstants.OPERATION, "refund", TokenBucketConstants.COST, Long.MAX_VALUE));
        assertThat(refund.getException()).isNull();
        assertThat(refund.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isEqualTo(3L);
        Exchange zero = send("direct:refund", Map.of(TokenBucketConstants.KEY, "r",
                TokenBucketConstants.OPERATION, "refund", TokenBucketConstants.COST, 0));
        assertThat(zero.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.COST).hasMessageContaining("of at least 1");
    }
}
