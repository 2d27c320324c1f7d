package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Redis ACL users against the commands the reference lists: a user with exactly them runs rate-only and in-flight
 * endpoints, readiness UP; a user without one of them fails the start (or, for {@code SUBSCRIBE}, which the start
 * cannot wait for, makes readiness DOWN with the reason), and a permission taken away at runtime fails the exchanges
 * that need it under every {@code onStoreError} policy: a refusal is never answered by {@code allow} or {@code local}.
 */
class TokenBucketRedisAclTest extends TokenBucketTestSupport {

    private static final String ADMIN_PASSWORD = "admin-Pa55word";
    private static final String USER_PASSWORD = "limiter-Pa55";
    /** What a rate-only endpoint needs, as the reference lists it (HELLO is optional: see {@link #helloIsOptional}). */
    private static final List<String> RATE = List.of("hello", "evalsha", "eval", "time", "get", "set", "del");
    /** What an endpoint with in-flight limits needs besides. */
    private static final List<String> IN_FLIGHT = List.of("publish", "subscribe");

    private static RedisHandle redis;
    private CapturedStderr stderr;

    @BeforeAll
    static void startRedis() {
        // the default user needs a password, so that only the users made here get in without the admin's
        redis = RedisServers.standalone("requirepass " + ADMIN_PASSWORD);
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void freshRedis() {
        redis.command("FLUSHALL");
        redis.command("SCRIPT", "FLUSH"); // so that every test loads the script, by EVAL, as a fresh Redis does
        stderr = new CapturedStderr();
        HealthCheckHelper.getHealthCheckRepository(context, "producers").setEnabled(true);
    }

    @AfterEach
    void restoreStderr() {
        stderr.close();
    }

    /**
     * Creates (or resets) ACL user {@code name} with exactly {@code commands}, its keys and channels limited to the
     * component's default prefix, and answers a Redis URI that logs in as it.
     */
    private static String user(String name, List<String> commands) {
        List<String> acl = new ArrayList<>(List.of("ACL", "SETUSER", name, "reset", "resetchannels", "on",
                ">" + USER_PASSWORD, "~tokenbucket:*", "&tokenbucket:*"));
        commands.forEach(c -> acl.add("+" + c));
        redis.command(acl.toArray(String[]::new));
        return "redis://" + name + ":" + USER_PASSWORD + "@127.0.0.1:" + redis.port();
    }

    private static List<String> without(List<String> commands, String missing) {
        return commands.stream().filter(c -> !c.equals(missing)).toList();
    }

    private static List<String> all() {
        List<String> all = new ArrayList<>(RATE);
        all.addAll(IN_FLIGHT);
        return all;
    }

    private HealthCheck.Result readiness(String name) {
        // every check's result ("full"): the default exposure leaves some out when all are UP
        return HealthCheckHelper.invokeReadiness(context, "full").stream()
                .filter(r -> r.getCheck().getId().equals("tokenbucket-" + name)).findFirst()
                .orElseThrow(() -> new AssertionError("no health check tokenbucket-" + name));
    }

    /** Why a route to {@code uri} failed to start, all its causes' messages; fails when it started. */
    private static String startMessages(String uri) throws Exception {
        DefaultCamelContext other = new DefaultCamelContext();
        try {
            other.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:x").to(uri);
                }
            });
            other.start();
            throw new AssertionError(uri + " started");
        } catch (AssertionError e) {
            throw e;
        } catch (Exception e) {
            return messages(e);
        } finally {
            other.stop();
        }
    }

    @Test
    void aUserWithTheListedCommandsRunsRateOnlyAndInFlightEndpoints() throws Exception {
        String rateOnly = "tokenbucket:rate?store=redis&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=2s"
                + "&redisUri=" + user("rate", RATE);
        assertThat(template.request(rateOnly, e -> { }).getException()).isNull();
        assertThat(template.request(rateOnly, e -> { }).getException())
                .isInstanceOf(TokenBucketRejectedException.class); // the one token was taken in Redis
        assertThat(readiness("rate").getState()).isEqualTo(HealthCheck.State.UP);

        TokenBucketGates gates = new TokenBucketGates();
        String inFlight = "tokenbucket:slots?store=redis&maxInFlight=1&maxWait=20s&storeTimeout=2s&redisUri="
                + user("slots", all());
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:slots").to(inFlight).process(gates);
            }
        });
        gates.close("a");
        Future<Exchange> a = template.asyncSend("direct:slots", e -> e.getMessage().setBody("a"));
        await().atMost(Duration.ofSeconds(10)).until(() -> gates.order().contains("a"));
        Future<Exchange> b = template.asyncSend("direct:slots", e -> e.getMessage().setBody("b"));
        TokenBucketEndpoint slots = context.getEndpoint(inFlight, TokenBucketEndpoint.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> slots.getSlotWaitingCount() == 1);
        redis.command("CONFIG", "RESETSTAT");
        gates.open("a"); // a's release publishes to b's subscription: b has a ticket
        assertThat(a.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(b.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(gates.order()).containsExactly("a", "b");
        assertThat((String) redis.command("INFO", "commandstats")).contains("cmdstat_publish:calls=1");
        assertThat(readiness("slots").getState()).isEqualTo(HealthCheck.State.UP);
        assertThat(slots.getStoreErrorCount()).isZero();
        assertThat(stderr.text()).doesNotContain("refused");
    }

    @ParameterizedTest
    @ValueSource(strings = {"evalsha", "eval", "time", "get", "set", "del"})
    void aRateOnlyEndpointWithoutACommandItNeedsDoesNotStart(String missing) throws Exception {
        String failure = startMessages("tokenbucket:rate?store=redis&storeTimeout=2s&onStoreError=allow&redisUri="
                + user("no-" + missing, without(RATE, missing)));
        assertThat(failure).contains("refuses what this endpoint needs").contains("onStoreError does not apply")
                .doesNotContain(USER_PASSWORD);
        if (!missing.equals("time")) { // TIME is the script's first call, refused without a name on Redis 6.2
            assertThat(failure.toLowerCase()).contains(missing);
        }
    }

    /** Lettuce tries HELLO first and, refused, logs in with AUTH (which every user may run) on RESP2. */
    @Test
    void helloIsOptional() {
        String uri = "tokenbucket:rate?store=redis&storeTimeout=2s&redisUri="
                + user("no-hello", without(RATE, "hello"));
        assertThat(template.request(uri, e -> { }).getException()).isNull();
        assertThat(readiness("rate").getState()).isEqualTo(HealthCheck.State.UP);
    }

    @Test
    void aRateOnlyEndpointNeedsNoPublishNorSubscribe() {
        String uri = "tokenbucket:rate?store=redis&storeTimeout=2s&redisUri=" + user("rate", RATE);
        assertThat(template.request(uri, e -> { }).getException()).isNull();
        assertThat(readiness("rate").getState()).isEqualTo(HealthCheck.State.UP);
    }

    @Test
    void anInFlightEndpointWithoutPublishDoesNotStart() throws Exception {
        String failure = startMessages("tokenbucket:slots?store=redis&maxInFlight=2&storeTimeout=2s"
                + "&onStoreError=allow&redisUri=" + user("no-publish", without(all(), "publish")));
        assertThat(failure).contains("refuses what this endpoint needs").contains("PUBLISH");
    }

    @Test
    void anInFlightEndpointWithoutSubscribeIsDownWithTheReason() {
        String uri = "tokenbucket:slots?store=redis&maxInFlight=2&storeTimeout=2s&redisUri="
                + user("no-subscribe", without(all(), "subscribe"));
        context.getEndpoint(uri); // started: the subscription is made in the background
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            HealthCheck.Result result = readiness("slots");
            assertThat(result.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(result.getMessage()).hasValueSatisfying(m -> assertThat(m).contains("subscribe"));
        });
        assertThat(stderr.text()).contains("WARN").contains("tokenbucket:slots: redis at redis://***@127.0.0.1")
                .contains("refused a call").contains("subscribe");
    }

    @ParameterizedTest
    @EnumSource(TokenBucketStoreErrorPolicy.class)
    void aPermissionTakenAwayAtRuntimeFailsTheExchangesUnderEveryPolicy(TokenBucketStoreErrorPolicy policy) {
        String uri = "tokenbucket:rate?store=redis&capacity=100&storeTimeout=2s&onStoreError=" + policy
                + "&redisUri=" + user("rate", RATE);
        assertThat(template.request(uri, e -> { }).getException()).isNull();
        assertThat(readiness("rate").getState()).isEqualTo(HealthCheck.State.UP); // an answer kept for a second
        redis.command("ACL", "SETUSER", "rate", "-evalsha");
        try {
            for (int i = 0; i < 3; i++) { // not once and then a bypass to the policy: every time
                Exchange refused = template.request(uri, e -> { });
                assertThat(refused.getException()).isInstanceOf(TokenBucketStoreException.class);
                assertThat(refused.getException().getMessage()).contains("refused the call")
                        .contains("'evalsha'").contains("onStoreError does not apply");
            }
            TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
            assertThat(endpoint.getFallbackCount()).isZero();
            assertThat(endpoint.getStoreErrorCount()).isEqualTo(3);
            assertThat(endpoint.getStoreRefusalCount()).isEqualTo(3);
            assertThat(endpoint.isInStoreFallback()).isFalse();
            assertThat(new TokenBucketDevConsole() {
                {
                    setCamelContext(context);
                }
            }.call(org.apache.camel.console.DevConsole.MediaType.TEXT).toString())
                    .contains("store errors: 3, fallbacks: 0, refusals: 3");
            // at once: a refused call makes the next check ask Redis again, whatever answer it kept
            HealthCheck.Result result = readiness("rate");
            assertThat(result.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(result.getMessage()).hasValueSatisfying(m -> assertThat(m).contains("'evalsha'"));
            assertThat(stderr.text()).contains("WARN").contains("tokenbucket:rate: redis at redis://***@127.0.0.1")
                    .contains("refused a call");
        } finally {
            redis.command("ACL", "SETUSER", "rate", "+evalsha");
        }
        assertThat(template.request(uri, e -> { }).getException()).isNull();
        await().atMost(Duration.ofSeconds(10)).until(() -> readiness("rate").getState() == HealthCheck.State.UP);
    }

    /**
     * An in-flight endpoint whose user loses {@code PUBLISH} while it runs, under {@code allow}: each release with
     * waiters is refused its PUBLISH (the slot is freed all the same, the script's writes stand), and the waiters
     * take the freed slots one by one, never more than maxInFlight at once: the refusal does not send the endpoint
     * to its policy, which would admit everything.
     */
    @Test
    void anInFlightEndpointThatLosesPublishNeverAdmitsBeyondItsLimit() throws Exception {
        String uri = "tokenbucket:slots?store=redis&maxInFlight=2&maxWait=30s&storeTimeout=2s&onStoreError=allow"
                + "&redisUri=" + user("slots", all());
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        TokenBucketGates gates = new TokenBucketGates();
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:slots").to(uri).process(e -> most.accumulateAndGet(running.incrementAndGet(), Math::max))
                        .process(gates).process(e -> running.decrementAndGet());
            }
        });
        TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
        redis.command("ACL", "SETUSER", "slots", "-publish");
        int count = 8;
        List<Future<Exchange>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            gates.close(Integer.toString(i));
            int body = i;
            sent.add(template.asyncSend("direct:slots", e -> e.getMessage().setBody(Integer.toString(body))));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> gates.order().size() == 2
                && endpoint.getSlotWaitingCount() == count - 2);
        for (int opened = 0; opened < count; opened++) {
            gates.open(gates.order().get(opened));
            int next = Math.min(count, opened + 3);
            await().atMost(Duration.ofSeconds(10)).until(() -> gates.order().size() == next);
            assertThat(most.get()).as("exchanges past the endpoint at once").isLessThanOrEqualTo(2);
        }
        for (Future<Exchange> f : sent) {
            assertThat(f.get(10, TimeUnit.SECONDS).getException()).isNull();
        }
        assertThat(endpoint.getFallbackCount()).isZero();
        assertThat(stderr.text()).contains("refused a call").containsIgnoringCase("publish");
    }
}
