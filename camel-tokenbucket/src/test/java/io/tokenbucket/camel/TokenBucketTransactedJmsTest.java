package io.tokenbucket.camel;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

import io.tokenbucket.camel.producer.TokenBucketTimer;
import org.apache.camel.CamelContext;
import org.apache.camel.Processor;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.jms.connection.JmsTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A transacted JMS route through the endpoint, on a real broker: {@code from("jms:queue:in?transacted=true")
 * .to("tokenbucket:...").to("jms:queue:out").process(p)}, where {@code p} fails the first delivery of 5 of 20
 * messages, which the broker then delivers again. The queue {@code out} must hold each message once: a send made on
 * a delivery that rolled back belongs to its transaction and goes with it.
 *
 * <p>camel-jms's {@code transacted=true} alone does not mark the exchange transacted; its session is bound to the
 * listener's thread, so a route that goes on on another thread sends outside the transaction. The plain endpoint does
 * that after a wait and after any Redis answer, and {@code out} holds the failed deliveries' sends too (the case
 * {@code none}, which shows the test can fail); {@code synchronous=true}, or Camel's {@code transacted()} policy, keep
 * the route on the listener's thread. Camel's own {@code throttle} is the control.
 *
 * <p>Nothing depends on how fast the machine runs: the local bucket's time moves only to a waiter's release
 * ({@link WaiterClock}), so every delivery after the first waits; with the in-flight limit, the exchange holding the
 * slot keeps it until another waits for it (or no other message is left), so every delivery after the first waits.
 */
class TokenBucketTransactedJmsTest extends TokenBucketRedisTestSupport {

    private static final int MESSAGES = 20;
    private static final AtomicInteger QUEUES = new AtomicInteger();
    private static final long STEP = TimeUnit.MILLISECONDS.toNanos(100);
    private static TokenBucketBroker broker;

    /**
     * The system's clock until {@link #freeze}; then a time that moves only when the timer waits for a deadline at
     * most one token interval ahead while an exchange waits: it jumps to that deadline. No token refills between a
     * release and the next arrival, however long the machine takes between them.
     */
    static final class WaiterClock implements TokenBucketTimer.Clock, LongSupplier {
        private final AtomicLong world = new AtomicLong();
        private volatile boolean frozen;
        private volatile IntSupplier waiting = () -> 0;

        void freeze(IntSupplier waiting) {
            this.waiting = waiting;
            world.set(System.nanoTime());
            frozen = true;
        }

        @Override
        public long nanoTime() {
            return frozen ? world.get() : System.nanoTime();
        }

        @Override
        public long getAsLong() {
            return nanoTime();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            if (frozen && nanos <= STEP && waiting.getAsInt() > 0) {
                world.addAndGet(nanos); // the timer read the clock just before: this is its deadline
            } else {
                // polls while frozen: a waiter that came meanwhile may not have woken the timer
                LockSupport.parkNanos(blocker, frozen ? Math.min(nanos, TimeUnit.MILLISECONDS.toNanos(5)) : nanos);
            }
        }
    }

    private final WaiterClock clock = new WaiterClock();

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext camel = super.createCamelContext();
        TokenBucketComponent component = new TokenBucketComponent();
        component.setTimerSpinMicros(0); // a frozen clock never reaches a deadline by spinning
        component.shared().useClocks(clock, clock);
        camel.addComponent("tokenbucket", component);
        return camel;
    }

    @BeforeAll
    static void startBroker() throws Exception {
        broker = TokenBucketBroker.start();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        broker.close();
    }

    /**
     * The step under test: {@code rate} a rate of one per 100 ms on the local store or on Redis, {@code inflight} one
     * exchange in flight at a time for 4 listeners; {@code throttle} is Camel's throttle at the same rate.
     */
    private static String step(String limit) {
        return switch (limit) {
            case "local" -> "tokenbucket:local?capacity=1&refillPeriod=100ms";
            case "redis" -> "tokenbucket:redis?capacity=1&refillPeriod=100ms&store=redis&redisUri=" + redis.uri();
            case "inflight" -> "tokenbucket:inflight?maxInFlight=1";
            default -> throw new IllegalArgumentException(limit);
        };
    }

    @ParameterizedTest(name = "{0}, {1}")
    @CsvSource({
        "local, none", "local, synchronous", "local, transacted",
        "redis, none", "redis, synchronous", "redis, transacted",
        "inflight, none", "inflight, synchronous", "inflight, transacted",
        "throttle, none", "local, yaml-synchronous", "local, yaml-transacted"})
    void theOutQueueHoldsEachMessageOnce(String limit, String how) throws Exception {
        boolean yaml = how.startsWith("yaml-");
        String keep = yaml ? how.substring("yaml-".length()) : how;
        int n = QUEUES.incrementAndGet();
        String in = "in-" + n;
        String out = "out-" + n;
        for (int i = 0; i < MESSAGES; i++) {
            broker.send(in, "m" + i, Map.of());
        }
        broker.addJms(context);
        context.getRegistry().bind("txm", new JmsTransactionManager(broker.connectionFactory()));
        Map<String, String> failedOnce = new ConcurrentHashMap<>(); // body: the thread its first delivery failed on
        AtomicInteger passed = new AtomicInteger();
        Processor failFirst = e -> {
            String body = e.getMessage().getBody(String.class);
            if (Integer.parseInt(body.substring(1)) % 4 == 0
                    && failedOnce.putIfAbsent(body, Thread.currentThread().getName()) == null) {
                throw new IllegalStateException("the first delivery of " + body + " fails");
            }
            passed.incrementAndGet();
        };
        // with the in-flight limit, the slot's holder keeps it until a delivery waits for it
        Processor p = "inflight".equals(limit) ? e -> {
            await().atMost(Duration.ofSeconds(20)).until(() -> broker.messageCount(in) <= 1
                    || context.getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                    .anyMatch(ep -> ((TokenBucketEndpoint) ep).getSlotWaitingCount() > 0));
            failFirst.process(e);
        } : failFirst;
        if ("local".equals(limit)) {
            clock.freeze(() -> context.getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                    .mapToInt(ep -> ((TokenBucketEndpoint) ep).getWaitingCount()).sum());
        }
        int listeners = "inflight".equals(limit) ? 4 : 1;
        String fromUri = "jms:queue:" + in + "?transacted=true&concurrentConsumers=" + listeners
                + "&receiveTimeout=100&errorHandlerLoggingLevel=OFF&errorHandlerLogStackTrace=false"
                + ("transacted".equals(keep) ? "&transactionManager=#txm" : "");
        String toUri = "throttle".equals(limit) ? null
                : step(limit) + ("synchronous".equals(keep) ? "&synchronous=true" : "");
        if (yaml) { // the reference's YAML routes
            context.getRegistry().bind("failFirst", p);
            PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.fromString("tx.yaml", """
                    - errorHandler:
                        noErrorHandler: {}
                    - route:
                        from:
                          uri: "%s"
                          steps:%s
                            - to: "%s"
                            - to: "jms:queue:%s"
                            - process:
                                ref: failFirst
                    """.formatted(fromUri, "transacted".equals(keep) ? "\n        - transacted: {}" : "", toUri, out)));
        } else {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    errorHandler(noErrorHandler()); // the failures are the test's own: the listener rolls back
                    RouteDefinition route = from(fromUri);
                    if ("transacted".equals(keep)) {
                        route.transacted();
                    }
                    if ("throttle".equals(limit)) {
                        route.throttle(1).totalRequestsMode().timePeriodMillis(100);
                    } else {
                        route.to(toUri);
                    }
                    route.to("jms:queue:" + out).process(p);
                }
            });
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> passed.get() == MESSAGES && broker.messageCount(in) == 0
                && context.getInflightRepository().size() == 0);
        List<String> received = broker.browse(out);
        List<String> all = IntStream.range(0, MESSAGES).mapToObj(i -> "m" + i).toList();
        assertThat(failedOnce).hasSize(5);
        assertThat(new HashSet<>(received)).as("nothing lost").containsExactlyInAnyOrderElementsOf(all);
        long onWorker = failedOnce.values().stream().filter(t -> t.contains("TokenBucketWorker")).count();
        if ("none".equals(keep) && !"throttle".equals(limit)) {
            // a delivery that waited (local, inflight) or had a Redis answer went on on the worker pool: its send
            // was committed at once, and stayed in out when the delivery rolled back; every delivery but the first
            // waits (local, inflight), so at least 4 of the 5 failed ones did
            assertThat(onWorker).as("rolled-back deliveries that went on on the worker pool")
                    .isGreaterThanOrEqualTo("redis".equals(limit) ? 1 : 4);
            assertThat(received).as("out: every message, and a ghost per such delivery")
                    .hasSize(MESSAGES + (int) onWorker);
        } else {
            assertThat(failedOnce.values()).as("the route stays on the listener's thread")
                    .allMatch(t -> t.contains("JmsConsumer"));
            assertThat(received).as("each message once").hasSize(MESSAGES);
        }
    }
}
