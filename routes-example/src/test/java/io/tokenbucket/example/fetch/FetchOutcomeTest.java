package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import io.tokenbucket.example.proxy.BucketSteps;
import io.tokenbucket.example.proxy.PoolRests;
import io.tokenbucket.example.proxy.ProxyBuckets;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxySource;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.RuntimeCamelException;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.apache.hc.client5.http.CircularRedirectException;
import org.apache.hc.client5.http.ConnectTimeoutException;
import org.apache.hc.client5.http.HttpHostConnectException;
import org.apache.hc.client5.http.UnsupportedSchemeException;
import org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.hc.core5.http.NoHttpResponseException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/** Whom each failure is blamed on, and the delayed blame of unclear ones; plain exchanges, a fake clock. */
class FetchOutcomeTest {

    private final AtomicLong nanos = new AtomicLong(1_000);
    // one failure blamed on a proxy takes it out, so its health word shows every blame; without the throttle the
    // pool keeps the pairs' rests itself
    private final ProxyPool pool = new ProxyPool(ProxySource.text("http://h:1 id=p1, http://h:2 id=p2"), 1, 5_000,
            new PoolRests(nanos::get), nanos::get);
    private final ProxyStats stats = new ProxyStats();
    /** Penalty 1 s, cap 60 s, HTTP dates read at a fixed instant. */
    private static final RetryAfter RETRY_AFTER = new RetryAfter(1_000, 60_000,
            Clock.fixed(Instant.parse("2025-06-01T12:00:00Z"), ZoneOffset.UTC));

    private final FetchOutcome outcome = new FetchOutcome(pool, stats, 2, RETRY_AFTER);
    private final CamelContext context = new DefaultCamelContext();

    @AfterEach
    void close() throws Exception {
        context.close();
    }

    static Stream<Arguments> errors() {
        return Stream.of(
                // no connection to the proxy: through a forward proxy the scraper never connects to the target
                Arguments.of(new HttpHostConnectException("Connect to http://127.0.0.1:9 failed: Connection refused"),
                        Blame.PROXY),
                Arguments.of(new ConnectException("Connection refused"), Blame.PROXY),
                Arguments.of(new ConnectTimeoutException("Connect to http://10.0.0.7:3128 timed out"), Blame.PROXY),
                Arguments.of(new NoRouteToHostException("No route to host"), Blame.PROXY),
                Arguments.of(new UnknownHostException("proxy.invalid"), Blame.PROXY),
                Arguments.of(new RuntimeCamelException(new ConnectException("Connection refused")), Blame.PROXY),
                // the URL itself is bad
                Arguments.of(new IllegalArgumentException("Invalid url: x"), Blame.URL),
                Arguments.of(new RuntimeCamelException(new URISyntaxException("http://a b", "Illegal character")),
                        Blame.URL),
                Arguments.of(new UnsupportedSchemeException("ftp protocol is not supported"), Blame.URL),
                Arguments.of(new CircularRedirectException("Circular redirect to 'http://t/a'"), Blame.URL),
                // after the proxy accepted: the proxy's or the target's, nobody can tell yet
                Arguments.of(new NoHttpResponseException("127.0.0.1:8081 failed to respond"), Blame.UNCLEAR),
                Arguments.of(new SocketException("Connection reset"), Blame.UNCLEAR),
                Arguments.of(new SocketTimeoutException("Read timed out"), Blame.UNCLEAR),
                Arguments.of(new ConnectionClosedException("Premature end of Content-Length delimited message body"),
                        Blame.UNCLEAR),
                Arguments.of(new IllegalStateException("proxy p9 left the pool before its fetch"), Blame.UNCLEAR));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("errors")
    void blamesAnErrorOnTheProxyOnlyWhenItCouldNotBeReached(Exception error, Blame blame) {
        assertThat(Blame.ofError(error)).isEqualTo(blame);
    }

    @ParameterizedTest(name = "HTTP {0}, Via {1}: {2}")
    @CsvSource({
        "407, false, PROXY",
        "407, true, PROXY",
        "503, true, URL",     // forwarded: the target's own
        "500, true, URL",
        "502, false, UNCLEAR", // the proxy's own: it could not reach the target, or it is broken
        "503, false, UNCLEAR",
        "504, false, UNCLEAR",
        "500, false, UNCLEAR", // tinyproxy's "Unable to connect"
    })
    void blamesAStatusByWhoMadeIt(int status, boolean via, Blame blame) {
        assertThat(Blame.ofStatus(status, via)).isEqualTo(blame);
    }

    @Test
    void anUnclearFailureIsHeldAgainstItsProxyOnceTheUrlAnswersThroughAnother() {
        Exchange url = newUrl();
        outcome.process(answered(url, "p1", 502, false));
        assertThat(pool.health()).containsEntry("p1", "healthy"); // maybe the target: not yet blamed
        assertThat(url.getProperty(Scrape.DONE, false, Boolean.class)).isFalse();

        outcome.process(answered(url, "p2", 200, true));

        assertThat(pool.health().get("p1")).as("the target was fine: p1's 502 was p1's").startsWith("DOWN");
        assertThat(pool.health()).containsEntry("p2", "healthy");
        assertThat(url.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.FETCHED);
    }

    @Test
    void aUrlThatFailsEverywhereBlamesNobody() {
        Exchange url = newUrl();
        outcome.process(failed(url, "p1", new NoHttpResponseException("127.0.0.1:1 failed to respond")));
        outcome.process(answered(url, "p2", 502, false));

        assertThat(url.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.DEAD);
        assertThat(url.getProperty(Scrape.REASON, String.class)).isEqualTo("HTTP 502 from the proxy via p2");
        assertThat(pool.health()).containsEntry("p1", "healthy").containsEntry("p2", "healthy");
        assertThat(stats.failures()).as("failed attempts, whoever was to blame").isEqualTo(2);
    }

    @Test
    void anUnclearFailureThroughTheProxyThatThenAnswersWasPassing() {
        Exchange url = newUrl();
        outcome.process(failed(url, "p1", new SocketTimeoutException("Read timed out")));
        assertThat(stats.failures()).as("the timeout is a failed attempt, whoever was to blame").isEqualTo(1);
        assertThat(url.getProperty(Scrape.SUSPECTS, Map.class)).as("held against p1 until the URL answers")
                .containsOnlyKeys("p1");

        outcome.process(answered(url, "p1", 200, true));

        assertThat(pool.health()).containsEntry("p1", "healthy");
        assertThat(url.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.FETCHED);
        assertThat(stats.failures()).as("still the one failed attempt").isEqualTo(1);
        assertThat(url.getProperty(Scrape.SUSPECTS)).as("p1 answered: nobody left to blame").isNull();
    }

    @Test
    void theTargetsOwn5xxAndABadUrlAreTheUrlsAndAProxyFailureCountsAtOnce() {
        Exchange url = newUrl();
        outcome.process(answered(url, "p1", 503, true));
        outcome.process(answered(url, "p2", 200, true));
        assertThat(pool.health()).as("a forwarded 503 is never the proxy's").containsEntry("p1", "healthy");

        Exchange bad = newUrl();
        outcome.process(failed(bad, "p1", new IllegalArgumentException("Invalid url: x")));
        assertThat(pool.health()).containsEntry("p1", "healthy");

        Exchange refused = newUrl();
        outcome.process(failed(refused, "p2", new HttpHostConnectException("Connection refused")));
        assertThat(pool.health().get("p2")).startsWith("DOWN");
    }

    @Test
    void a429RestsTheProxyAtThatHostNoLongerThanMaxRetryAfter() {
        Exchange url = newUrl();
        Exchange refused = answered(url, "p1", 429, true);
        refused.getMessage().setHeader("Retry-After", "31536000"); // a year
        outcome.process(refused);

        assertThat(pool.health()).containsEntry("p1", "healthy, rests on 1 host");
        assertThat(pool.millisUntilAvailable("target")).as("p2 is free for the host").isZero();
        assertThat(pool.candidates(List.of(), "target")).containsExactly("p2");
        assertThat(pool.candidates(List.of(), "other.example")).as("p1 serves other hosts")
                .containsExactlyInAnyOrder("p1", "p2");
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 60000 ms) via p1");
        assertThat(stats.failures()).as("a 429 is a penalty, not a failure").isZero();
    }

    @Test
    void withTheThrottleA429RestsThePairInItsBucketAloneAndThePoolKeepsNoRestBesideIt() {
        ProxyPool throttled = new ProxyPool(ProxySource.text("http://h:1 id=p1, http://h:2 id=p2"), 1, 5_000,
                ProxyBuckets.NONE, nanos::get);
        FetchOutcome withSteps = new FetchOutcome(throttled, stats, 4, RETRY_AFTER, false, true);
        Exchange url = newUrl();
        Exchange refused = answered(url, "p1", 429, true);
        refused.getMessage().setHeader("Retry-After", "30");
        withSteps.process(refused);

        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 30000 ms) via p1");
        assertThat(url.getProperty(BucketSteps.PROPERTY, List.class)).as("the step the route runs on the throttle")
                .containsExactly(Map.of("operation", "penalize", "key", ProxyLimits.pairKey("p1", "target"),
                        "penalty", 30_000L));
        assertThat(throttled.candidates(List.of(), "target")).as("the throttle passes p1's pair by, not the pool")
                .containsExactlyInAnyOrder("p1", "p2");
        assertThat(throttled.millisUntilAvailable("target")).isZero();
        assertThat(throttled.health()).containsEntry("p1", "healthy");
    }

    @Test
    void withTheAdaptiveRateTheHostsOwn429And503CutThePairAndA429WithoutRetryAfterDoesNotRestIt() {
        List<String> told = new ArrayList<>();
        ProxyBuckets recording = new ProxyBuckets() {
            @Override
            public void penalize(String proxyId, String host, long millis) {
                told.add("penalize " + proxyId + " " + host + " " + millis);
            }

            @Override
            public void throttled(String proxyId, String host) {
                told.add("throttled " + proxyId + " " + host);
            }
        };
        ProxyPool adaptivePool = new ProxyPool(ProxySource.text("http://h:1 id=p1, http://h:2 id=p2"), 1, 5_000,
                recording, nanos::get);
        FetchOutcome adaptive = new FetchOutcome(adaptivePool, stats, 4, RETRY_AFTER, true);

        // the host's own 429 (Via), no Retry-After: the pair's rate is cut, and the pair stays a candidate
        Exchange url = newUrl();
        adaptive.process(answered(url, "p1", 429, true));
        assertThat(told).containsExactly("throttled p1 target");
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rate cut) via p1");
        assertThat(adaptivePool.candidates(List.of(), "target")).containsExactlyInAnyOrder("p1", "p2");

        // with Retry-After the host named a time: cut and rest
        told.clear();
        Exchange named = answered(newUrl(), "p2", 429, true);
        named.getMessage().setHeader("Retry-After", "2");
        adaptive.process(named);
        assertThat(told).containsExactly("throttled p2 target", "penalize p2 target 2000");

        // a 429 without Via is the host's too (many proxies strip Via): cut, no rest
        told.clear();
        adaptive.process(answered(newUrl(), "p1", 429, false));
        assertThat(told).containsExactly("throttled p1 target");

        // the proxy's own 429 says so (Proxy-Status, RFC 9209), with Via or not: nothing about the host, no cut,
        // the pair rests as without the rate
        for (boolean via : new boolean[] {false, true}) {
            told.clear();
            Exchange own = answered(newUrl(), "p1", 429, via);
            own.getMessage().setHeader("Proxy-Status", "gateway; error=http_request_denied");
            adaptive.process(own);
            // (the second rest is longer: the pair's 429s repeat)
            assertThat(told).as("Via %s", via).singleElement().asString().startsWith("penalize p1 target ");
        }

        // the host's own 503 cuts (and is the URL's failure); the proxy's own 503 does not
        told.clear();
        adaptive.process(answered(newUrl(), "p1", 503, true));
        adaptive.process(answered(newUrl(), "p1", 503, false));
        assertThat(told).containsExactly("throttled p1 target");
        assertThat(adaptivePool.health().get("p1")).as("the proxy did its job").doesNotStartWith("DOWN");
    }

    @Test
    void withoutTheAdaptiveRateA429WithoutRetryAfterRestsThePairAndNothingIsCut() {
        Exchange url = newUrl();
        outcome.process(answered(url, "p1", 429, true));
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 1000 ms) via p1");
    }

    /**
     * p1, p2, p3 with a recording seam; what was told to the pairs' rests goes to {@code told}, and the pool keeps
     * the rests it is told ({@link PoolRests}, as without the throttle; with it a bucket is told the same).
     */
    private ProxyPool recordingPool(List<String> told) {
        PoolRests rests = new PoolRests(nanos::get);
        return new ProxyPool(ProxySource.text("http://h:1 id=p1, http://h:2 id=p2, http://h:3 id=p3"), 3, 5_000,
                new ProxyBuckets() {
                    @Override
                    public void penalize(String proxyId, String host, long millis) {
                        told.add("penalize " + proxyId + " " + host + " " + millis);
                        rests.penalize(proxyId, host, millis);
                    }

                    @Override
                    public long restingNanos(String proxyId, String host) {
                        return rests.restingNanos(proxyId, host);
                    }

                    @Override
                    public void throttled(String proxyId, String host) {
                        told.add("throttled " + proxyId + " " + host);
                    }
                }, nanos::get);
    }

    private static Exchange refused(Exchange url, String proxy, String retryAfter) {
        answered(url, proxy, 429, true).getMessage().setHeader("Retry-After", retryAfter);
        return url;
    }

    private void pagesPass(FetchOutcome outcome, String... proxies) {
        for (String proxy : proxies) {
            outcome.process(answered(newUrl(), proxy, 200, true));
        }
    }

    @Test
    void aUrlRefusedThroughASecondProxyWhileThePagesOfItsHostPassIsRefusedAloneAndRestsNoPairLong() {
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2", "p3");
        Exchange url = newUrl();

        // the first refusal cannot tell: the host's word, as always (cut, rest), but a pair that was passing
        // tells its bucket only one short penalty until the URL's next outcome says more
        outcome.process(refused(url, "p1", "31536000"));
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 60000 ms) via p1");
        assertThat(told).containsExactly("throttled p1 target", "penalize p1 target 1000");
        assertThat(pool.candidates(List.of(), "target")).containsExactlyInAnyOrder("p2", "p3");

        // the same URL refused through p2, which passes the host's pages too: the URL's own refusal. No cut, p2
        // rests one short penalty, and p1's minute is cut back to one short penalty from its start
        told.clear();
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        outcome.process(refused(url, "p2", "31536000"));
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 of this URL alone (refused through p1, p2"
                + " while other pages of the host passed through them; rests 1000 ms) via p2");
        assertThat(told).containsExactly("penalize p2 target 1000");
        assertThat(url.getProperty(Scrape.DONE, false, Boolean.class)).as("attempts are left").isFalse();
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(900));
        assertThat(pool.candidates(List.of(), "target")).as("one penalty after the first refusal")
                .containsExactlyInAnyOrder("p1", "p3");
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(pool.candidates(List.of(), "target")).containsExactlyInAnyOrder("p1", "p2", "p3");

        // its last attempts: refused alone again, then the dead letter with that reason; nobody was told more
        told.clear();
        outcome.process(refused(url, "p3", "31536000"));
        outcome.process(refused(url, "p1", "31536000"));
        assertThat(url.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.DEAD);
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 of this URL alone (refused through p1, p2,"
                + " p3 while other pages of the host passed through them; rests 1000 ms) via p1");
        assertThat(told).containsExactly("penalize p3 target 1000", "penalize p1 target 1000");
        assertThat(stats.failures()).as("a 429 is no failure of anyone").isZero();
    }

    @Test
    void aUrlRefusedAgainWhileTheHostRefusesOtherPagesTooIsTheHostsWordNotTheUrls() {
        // every pair passing the host's limit at once, as their rates start: the first wave of 429s. A URL refused
        // through p1 and then through p2, both of which were passing, is not refused alone when the host refused
        // another URL in between (through p3): the host refuses pages in general, and p2's rate is cut too
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = new FetchOutcome(pool, stats, 4, RETRY_AFTER, true);
        pagesPass(outcome, "p1", "p2", "p3");
        Exchange url = newUrl();
        outcome.process(answered(url, "p1", 429, true));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(20));
        outcome.process(answered(newUrl(), "p3", 429, true));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(20));
        outcome.process(answered(url, "p2", 429, true));
        assertThat(told).containsExactly("throttled p1 target", "throttled p3 target", "throttled p2 target");
        assertThat(url.getProperty(Scrape.REASON, String.class)).doesNotContain("alone");

        // the same with no other refusal in between is the URL's own, as before: no cut of p3
        told.clear();
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(20)); // forgiven, and passing again
        pagesPass(outcome, "p1", "p2", "p3");
        Exchange own = newUrl();
        outcome.process(answered(own, "p1", 429, true));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(20));
        outcome.process(answered(own, "p3", 429, true));
        assertThat(told).containsExactly("throttled p1 target");
        assertThat(own.getProperty(Scrape.REASON, String.class)).contains("of this URL alone");
    }

    @Test
    void aRefusalOfAPassingPairIsTheHostsWordOnceTheUrlsNextOutcomeSaysSo() {
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2");

        // fetched through p2 next: p1's refusal was about p1's address; its bucket gets the rest of the 30 s
        Exchange fetched = newUrl();
        outcome.process(refused(fetched, "p1", "30"));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        outcome.process(answered(fetched, "p2", 200, true));
        assertThat(told).containsExactly("throttled p1 target", "penalize p1 target 1000",
                "penalize p1 target 29900");

        // refused next through a pair that has not passed a page since the host's last 429 through it: the host's
        // word, p1's rest confirmed, both cut
        told.clear();
        Exchange other = newUrl();
        outcome.process(refused(other, "p2", "5"));
        // p2's rest is over and forgiven (example.forgiveAfter), but it has passed nothing since
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(16));
        Exchange url = newUrl();
        pagesPass(outcome, "p3");
        outcome.process(refused(url, "p3", "30"));
        outcome.process(refused(url, "p2", "30"));
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 30000 ms) via p2");
        assertThat(told).containsExactly("throttled p2 target", "penalize p2 target 1000", // other: pending
                "throttled p3 target", "penalize p3 target 1000", // url through p3: pending
                "throttled p2 target", "penalize p2 target 30000", "penalize p3 target 30000");
        assertThat(pool.candidates(List.of(), "target")).as("every pair rests its 30 s").isEmpty();
    }

    @Test
    void aUrlWhoseAttemptsEndWithoutThisStepSettlesItsPendingRefusalsOnce() {
        // no token after every retry, or a route failure (StoreUnavailable, RouteFailure): no 429 of its own follows
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2");
        Exchange url = newUrl();
        outcome.process(refused(url, "p1", "30")); // p1 was passing: pending, told one short penalty
        assertThat(told).last().isEqualTo("penalize p1 target 1000");
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        told.clear();
        outcome.ended(url);
        assertThat(told).containsExactly("penalize p1 target 29900");
        outcome.ended(url);
        assertThat(told).as("settled once").hasSize(1);
        assertThat(pool.candidates(List.of(), "target")).as("p1 rests the rest of its 30 s")
                .containsExactlyInAnyOrder("p2", "p3");
    }

    @Test
    void aPendingRefusalSettlesWhatIsLeftOfItsOwnRestNotOfALongerOneThePairGotSince() {
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2");
        Exchange url = newUrl();
        outcome.process(refused(url, "p1", "30")); // p1 was passing: pending, told one short penalty
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        // another URL refused through p1, which no longer passes: the host's word, the cap at once
        outcome.process(refused(newUrl(), "p1", "60"));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        told.clear();
        outcome.process(answered(url, "p2", 200, true));
        // 30 s from the first refusal, 200 ms ago; the minute told since stays, kept as the longer one
        assertThat(told).containsExactly("penalize p1 target 29800");
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(40));
        assertThat(pool.candidates(List.of(), "target")).as("p1 still rests its minute")
                .containsExactlyInAnyOrder("p2", "p3");
    }

    @Test
    void aPairThatTheHostRefusedAnotherPageWithinForgiveAfterIsAtItsLimitNotPassing() {
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2");
        outcome.process(refused(newUrl(), "p2", "1"));
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_500));
        pagesPass(outcome, "p2"); // pages pass again after the rest, as at a rate limit
        told.clear();
        Exchange url = newUrl();
        outcome.process(refused(url, "p1", "30"));
        outcome.process(refused(url, "p2", "30"));
        assertThat(url.getProperty(Scrape.REASON, String.class)).as("the host's word: p2 was refused 1.5 s ago")
                .startsWith("HTTP 429 (rests ");
        assertThat(told).startsWith("throttled p1 target", "penalize p1 target 1000", "throttled p2 target")
                .contains("penalize p1 target 30000");
    }

    @Test
    void aPairIsPassingOnlyForForgiveAfterAfterItsLastPage() {
        List<String> told = new ArrayList<>();
        ProxyPool pool = recordingPool(told);
        FetchOutcome outcome = outcomeOf(pool);
        pagesPass(outcome, "p1", "p2");
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(10)); // example.forgiveAfter
        Exchange url = newUrl();
        outcome.process(refused(url, "p1", "30"));
        outcome.process(refused(url, "p2", "30"));
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rests 30000 ms) via p2");
        assertThat(told).containsExactly("throttled p1 target", "penalize p1 target 30000",
                "throttled p2 target", "penalize p2 target 30000");
    }

    private Exchange newUrl() {
        Exchange exchange = new DefaultExchange(context);
        exchange.setProperty(Scrape.URL, "http://target/page");
        exchange.setProperty(Scrape.HOST, "target");
        exchange.setProperty(Scrape.START_NANOS, System.nanoTime());
        exchange.setProperty(Scrape.TRIED, new ArrayList<String>());
        return exchange;
    }

    /** The next attempt of {@code url} through {@code proxy}, as ProxyInUse leaves it. */
    private static Exchange attempt(Exchange url, String proxy) {
        url.getMessage().removeHeaders("*");
        url.removeProperty(Exchange.EXCEPTION_CAUGHT);
        @SuppressWarnings("unchecked")
        List<String> tried = url.getProperty(Scrape.TRIED, List.class);
        tried.add(proxy);
        url.setProperty(Scrape.ATTEMPTS, tried.size());
        url.setProperty(Scrape.PROXY, proxy);
        return url;
    }

    private static Exchange answered(Exchange url, String proxy, int status, boolean via) {
        attempt(url, proxy).getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        if (via) {
            url.getMessage().setHeader("Via", "1.1 " + proxy);
        }
        url.getMessage().setBody("body");
        return url;
    }

    private static Exchange failed(Exchange url, String proxy, Exception error) {
        attempt(url, proxy).setProperty(Exchange.EXCEPTION_CAUGHT, error);
        return url;
    }

    /** An outcome over {@code pool}: 4 attempts per URL, {@link #RETRY_AFTER}, neither adaptive nor steps. */
    private FetchOutcome outcomeOf(ProxyPool pool) {
        return new FetchOutcome(pool, stats, 4, RETRY_AFTER);
    }
}
