package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.tokenbucket.camel.producer.TokenBucketTimer;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.console.DevConsole;
import org.apache.camel.support.DefaultExchange;
import org.apache.camel.test.junit5.CamelTestSupport;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Waiters released late, on clocks only the test moves: the world's (the local buckets') and the timer's, which lags
 * behind it while the timer is "stalled" (a JVM or machine that stopped). A waiter released past its lateness bound
 * reserves again instead of going out beside the tokens refilled during the stall; within the bound it goes on.
 * Capacity 3 per 1.5 s: one token every 500 ms, so the bound is max(100 ms, 500 ms) = 500 ms.
 */
class TokenBucketLateReleaseTest extends CamelTestSupport {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long INTERVAL = 500 * MS;
    private static final String URI = "tokenbucket:late?capacity=3&refillAmount=3&refillPeriod=1500ms";

    /** The world's time and the timer's view of it; the timer polls its view every 2 ms while it waits. */
    static final class StallClock implements TokenBucketTimer.Clock {
        final AtomicLong world = new AtomicLong(System.nanoTime());
        final AtomicLong seen = new AtomicLong(world.get());

        @Override
        public long nanoTime() {
            return seen.get();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, Math.min(nanos, 2 * MS));
        }

        /** The world moves on by {@code nanos}; the timer sees it only at {@link #catchUp()}. */
        void stall(long nanos) {
            world.addAndGet(nanos);
        }

        void catchUp() {
            seen.set(world.get());
        }

        /** The world and the timer move on together. */
        void advance(long nanos) {
            catchUp();
            seen.set(world.addAndGet(nanos));
        }
    }

    private final StallClock clock = new StallClock();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    /** The world's time at which each exchange completed (passed, or failed), in completion order. */
    private final ConcurrentLinkedQueue<Long> doneAt = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Map.Entry<Exchange, Long>> done = new ConcurrentLinkedQueue<>();
    private final List<Exchange> sent = new ArrayList<>();

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext context = super.createCamelContext();
        TokenBucketComponent component = new TokenBucketComponent();
        component.shared().useClocks(clock, clock.world::get);
        context.addComponent("tokenbucket", component);
        context.getRegistry().bind("meters", meters);
        return context;
    }

    private void send(String uri, int count) throws Exception {
        send(uri, count, Map.of(TokenBucketConstants.KEY, "k"));
    }

    private void send(String uri, int count, Map<String, Object> headers) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri).createAsyncProducer();
        producer.start();
        for (int i = 0; i < count; i++) {
            Exchange exchange = new DefaultExchange(context);
            exchange.getMessage().setHeaders(new HashMap<>(headers));
            sent.add(exchange);
            producer.process(exchange, doneSync -> {
                long at = clock.world.get();
                done.add(Map.entry(exchange, at));
                doneAt.add(at);
            });
        }
    }

    private TokenBucketEndpoint endpoint(String uri) {
        return context.getEndpoint(uri, TokenBucketEndpoint.class);
    }

    private void awaitDone(int count) {
        await().atMost(Duration.ofSeconds(10)).until(() -> doneAt.size() >= count);
    }

    /** How many exchanges completed at each instant of the world's clock. */
    private Map<Long, Integer> perInstant() {
        Map<Long, Integer> counts = new TreeMap<>();
        doneAt.forEach(t -> counts.merge(t, 1, Integer::sum));
        return counts;
    }

    /** Every window of the completions holds at most capacity + its length / interval: the bucket's own bound. */
    private void assertWithinLimit(long capacity) {
        List<Long> times = doneAt.stream().sorted().toList();
        for (int i = 0; i < times.size(); i++) {
            for (int j = i; j < times.size(); j++) {
                long span = times.get(j) - times.get(i);
                assertThat((long) (j - i + 1)).as("completions %s: %d within %d ms", perInstant(), j - i + 1,
                        span / MS).isLessThanOrEqualTo(capacity + span / INTERVAL);
            }
        }
    }

    @Test
    void aWaiterReleasedPastItsBoundReservesAgainBehindTheRefilledBurst() throws Exception {
        lateWaitersReserveAgain(URI);
    }

    @Test
    void aLateWaiterOfAnAdaptiveKeyReservesAgain() throws Exception {
        lateWaitersReserveAgain(URI + "&adaptive=true");
    }

    private void lateWaitersReserveAgain(String uri) throws Exception {
        send(uri, 6); // 3 at once, 3 booked at +500, +1000, +1500 ms
        awaitDone(3);
        clock.stall(3000 * MS); // the bucket refills its burst while the timer stands still
        send(uri, 3); // arrivals after the stall take the refilled burst
        awaitDone(6);
        clock.catchUp(); // the timer releases the 3 waiters 1.5 to 2.5 s late
        TokenBucketEndpoint endpoint = endpoint(uri);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> endpoint.getRebookedCount() + endpoint.getDelayedCount() >= 3);
        assertThat(perInstant()).as("without re-booking the late 3 go out beside the burst")
                .allSatisfy((t, n) -> assertThat(n).isLessThanOrEqualTo(3));
        assertThat(endpoint.getRebookedCount()).isEqualTo(3);
        assertThat(meters.get("tokenbucket.rebooked").tag("endpoint", "late").functionCounter().count())
                .isEqualTo(3.0);
        assertThat(new TokenBucketDevConsole() {
            {
                setCamelContext(context);
            }
        }.call(DevConsole.MediaType.TEXT).toString()).contains("abandoned: 0, rebooked: 3,");
        for (int n = 7; n <= 9; n++) { // the re-booked go one per interval, as new arrivals would
            clock.advance(INTERVAL);
            awaitDone(n);
        }
        assertWithinLimit(3);
        assertThat(sent).allSatisfy(e -> assertThat(e.getException()).isNull());
        assertThat(endpoint.getDelayedCount()).isEqualTo(3);
        assertThat(endpoint.getRejectedCount()).isZero();
    }

    @Test
    void aLateWaiterOfCandidatesReservesAgainOnTheFreestAndItsKeyHeaderFollows() throws Exception {
        Map<String, Object> candidates = Map.of(TokenBucketConstants.CANDIDATES, List.of("a", "b"));
        send(URI, 12, candidates); // 3 at once on each, 3 booked on each at +500, +1000, +1500 ms
        awaitDone(6);
        clock.stall(3000 * MS);
        send(URI, 6, candidates); // the refilled bursts of both
        awaitDone(12);
        clock.catchUp();
        TokenBucketEndpoint endpoint = endpoint(URI);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> endpoint.getRebookedCount() + endpoint.getDelayedCount() >= 6);
        for (int n = 14; n <= 18; n += 2) { // two a token interval: one on each key
            clock.advance(INTERVAL);
            awaitDone(n);
        }
        assertThat(sent).allSatisfy(e -> assertThat(e.getException()).isNull());
        Map<String, Map<Long, Integer>> perKey = new TreeMap<>(); // by the key each exchange's header names
        done.forEach(d -> perKey.computeIfAbsent(d.getKey().getMessage().getHeader(TokenBucketConstants.KEY,
                String.class), k -> new TreeMap<>()).merge(d.getValue(), 1, Integer::sum));
        assertThat(perKey).containsOnlyKeys("a", "b");
        perKey.values().forEach(counts -> {
            assertThat(counts.values()).as("per instant on one key %s", perKey).allSatisfy(n ->
                    assertThat(n).isLessThanOrEqualTo(3));
            assertThat(counts.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(9);
        });
        assertThat(endpoint.getRebookedCount()).isEqualTo(6);
    }

    @Test
    void aWaiterReleasedWithinItsBoundGoesOn() throws Exception {
        send(URI, 4); // 3 at once, 1 booked at +500 ms
        awaitDone(3);
        clock.stall(INTERVAL + 400 * MS); // released 400 ms late: under the 500 ms interval
        clock.catchUp();
        awaitDone(4);
        TokenBucketEndpoint endpoint = endpoint(URI);
        assertThat(endpoint.getRebookedCount()).isZero();
        assertThat(endpoint.getDelayedCount()).isEqualTo(1);
    }

    @Test
    void aNegativeMaxLatenessNeverReservesAgain() throws Exception {
        String uri = URI + "&maxLateness=-1";
        send(uri, 6);
        awaitDone(3);
        clock.stall(3000 * MS);
        clock.catchUp();
        awaitDone(6);
        assertThat(endpoint(uri).getRebookedCount()).isZero();
    }

    @Test
    void aLateWaiterWhoseMaxWaitHasPassedIsRefusedAsANewArrivalWouldBe() throws Exception {
        String uri = URI + "&maxWait=2s";
        send(uri, 6); // the 3 waiters are booked within their maxWait
        awaitDone(3);
        clock.stall(3000 * MS);
        send(uri, 3); // the refilled burst goes to new arrivals
        awaitDone(6);
        clock.catchUp();
        awaitDone(9); // the late ones find no token and no maxWait left
        TokenBucketEndpoint endpoint = endpoint(uri);
        assertThat(endpoint.getRebookedCount()).isEqualTo(3);
        assertThat(sent.subList(3, 6)).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketRejectedException.class));
        assertThat(endpoint.getDelayedCount()).isZero();
    }
}
