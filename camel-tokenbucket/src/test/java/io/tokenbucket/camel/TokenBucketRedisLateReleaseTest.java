package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.camel.producer.TokenBucketTimer;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Waiters released late on a real redis-server: the component's timer stands still (a JVM that stopped) while Redis's
 * clock runs on and the bucket refills; arrivals then take the refilled burst, and the late waiters, released when the
 * timer catches up, reserve again behind them instead of going out beside them. Capacity 3 per 1.5 s: a token every
 * 500 ms, so half an interval is the real-time tolerance of the one timing assertion.
 */
class TokenBucketRedisLateReleaseTest extends TokenBucketRedisTestSupport {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    /** The system clock, which the timer stops reading while stalled. */
    static final class StalledTimerClock implements TokenBucketTimer.Clock {
        volatile long stalledAt = System.nanoTime();
        volatile boolean stalled;

        @Override
        public long nanoTime() {
            return stalled ? stalledAt : System.nanoTime();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, Math.min(nanos, 2 * MS));
        }
    }

    private final StalledTimerClock clock = new StalledTimerClock();
    /** When each exchange completed ({@link System#nanoTime()}). */
    private final ConcurrentLinkedQueue<Long> doneAt = new ConcurrentLinkedQueue<>();
    private final List<Exchange> sent = new ArrayList<>();

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext context = super.createCamelContext();
        TokenBucketComponent component = new TokenBucketComponent();
        component.shared().useClocks(clock, System::nanoTime);
        context.addComponent("tokenbucket", component);
        return context;
    }

    private String uri() {
        return "tokenbucket:late?store=redis&redisUri=" + redis.uri()
                + "&capacity=3&refillAmount=3&refillPeriod=1500ms";
    }

    private void send(int count) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri()).createAsyncProducer();
        producer.start();
        for (int i = 0; i < count; i++) {
            Exchange exchange = new DefaultExchange(context);
            exchange.getMessage().setHeaders(new HashMap<>(Map.of(TokenBucketConstants.KEY, "k")));
            sent.add(exchange);
            producer.process(exchange, doneSync -> doneAt.add(System.nanoTime()));
        }
    }

    private void awaitDone(int count) {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(5))
                .until(() -> doneAt.size() >= count);
    }

    private long remaining() {
        Exchange peek = send(uri(), Map.of(TokenBucketConstants.KEY, "k", TokenBucketConstants.OPERATION, "peek"));
        return peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @Test
    void lateWaitersReserveAgainBehindTheBurstRefilledWhileTheTimerStood() throws Exception {
        clock.stalledAt = System.nanoTime();
        clock.stalled = true;
        send(6); // 3 at once, 3 booked 500, 1000 and 1500 ms ahead
        awaitDone(3);
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> remaining() == 3);
        send(3); // the refilled burst goes to arrivals after the stall
        awaitDone(6);
        long caughtUp = System.nanoTime();
        clock.stalled = false; // the timer releases the 3 waiters 1.5 s late or more
        awaitDone(9);

        TokenBucketEndpoint endpoint = context.getEndpoint(uri(), TokenBucketEndpoint.class);
        // after the stall: the 3 arrivals, then the 3 re-booked ones a token interval apart; without re-booking all 6
        // within milliseconds. No 4 of them within half an interval (the bucket allows 3, plus one per interval).
        List<Long> after = doneAt.stream().sorted().skip(3).toList();
        for (int i = 0; i + 3 < after.size(); i++) {
            assertThat((after.get(i + 3) - after.get(i)) / MS).as("ms between completions %d and %d after the stall"
                    + " (timer caught up %d ms after the first)", i, i + 3, (caughtUp - after.get(0)) / MS)
                    .isGreaterThanOrEqualTo(250);
        }
        assertThat(endpoint.getRebookedCount()).isEqualTo(3);
        assertThat(sent).allSatisfy(e -> assertThat(e.getException()).isNull());
    }
}
