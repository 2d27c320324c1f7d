package io.tokenbucket.camel;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.Route;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.component.seda.SedaEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.RoutePolicy;
import org.apache.camel.support.service.ServiceSupport;
import org.apache.camel.throttling.ThrottlingInflightRoutePolicy;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@link TokenBucketBackPressure} on a real seda queue (and a real Artemis queue): with it, the backlog stays in the
 * queue and the waiting exchanges stay near the mark; without it, the whole backlog waits in the JVM. Beside it, what
 * Camel's {@link ThrottlingInflightRoutePolicy} alone does: it takes the whole backlog while every exchange waits, and
 * resumes the consumer of a route that is stopping. Waiting counts are sampled from the endpoint by a thread of the
 * test, not taken from the policy.
 */
class TokenBucketBackPressureTest {

    private static final int MESSAGES = 2_000;

    /** What one run saw: the most exchanges waiting at the endpoint, the largest seda backlog, the suspensions. */
    private record Run(int mostWaiting, int largestBacklog, long suspensions) {
    }

    /** The route in YAML, the policy a bean of its own with the marks of the Java test. */
    private static final String YAML = """
            - beans:
                - name: backPressure
                  type: io.tokenbucket.camel.TokenBucketBackPressure
                  properties:
                    maxInflightExchanges: 100
                    resumePercentOfMax: 20
            - route:
                id: urls
                routePolicy: backPressure
                from:
                  uri: seda:urls?size=10000&pollTimeout=10
                  steps:
                    - to: tokenbucket:fetch?capacity=10&refillAmount=2000&refillPeriod=1s
                    - to: mock:fetched
            """;

    private static Run run(RoutePolicy policy) throws Exception {
        return run(policy, null, MESSAGES);
    }

    private static Run run(RoutePolicy policy, String yaml, int messages) throws Exception {
        return run(policy, yaml, messages, false);
    }

    /** @param dynamic the throttle as a {@code toD}, whose endpoint the context makes at the first message */
    private static Run run(RoutePolicy policy, String yaml, int messages, boolean dynamic)
            throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            if (yaml != null) {
                org.apache.camel.support.PluginHelper.getRoutesLoader(context)
                        .loadRoutes(org.apache.camel.support.ResourceHelper.fromString("routes.yaml", yaml));
            } else {
                context.addRoutes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        // 2,000 a second after a burst of 10: the 2,000 messages take about a second to pass; a
                        // suspended seda consumer looks again every pollTimeout (1 s by default), hence 10 ms
                        var route = from("seda:urls?size=10000&pollTimeout=10").routeId("urls");
                        if (policy != null) {
                            route.routePolicy(policy);
                        }
                        if (dynamic) {
                            // a tokenbucket endpoint there from the start, which never binds, and the throttle
                            // itself made by toD at the first message: the policy must find the second too
                            route.to("tokenbucket:gate?capacity=1000000&refillAmount=1000000&refillPeriod=1s")
                                    .toD("tokenbucket:${header.limiter}?capacity=10&refillAmount=2000&refillPeriod=1s")
                                    .to("mock:fetched");
                        } else {
                            route.to("tokenbucket:fetch?capacity=10&refillAmount=2000&refillPeriod=1s")
                                    .to("mock:fetched");
                        }
                    }
                });
            }
            context.start();
            MockEndpoint fetched = context.getEndpoint("mock:fetched", MockEndpoint.class);
            fetched.expectedMessageCount(messages);
            String throttleUri = "tokenbucket:fetch?capacity=10&refillAmount=2000&refillPeriod=1s";
            SedaEndpoint queue = context.getEndpoint("seda:urls?size=10000&pollTimeout=10", SedaEndpoint.class);
            AtomicInteger mostWaiting = new AtomicInteger();
            AtomicInteger largestBacklog = new AtomicInteger();
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    if (context.hasEndpoint(throttleUri) instanceof TokenBucketEndpoint throttle) {
                        mostWaiting.accumulateAndGet(throttle.getWaitingCount(), Math::max);
                    }
                    largestBacklog.accumulateAndGet(queue.getCurrentQueueSize(), Math::max);
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000);
                }
            });
            sampler.start();
            try (ProducerTemplate template = context.createProducerTemplate()) {
                for (int i = 0; i < messages; i++) {
                    template.sendBodyAndHeader("seda:urls?size=10000&pollTimeout=10", "url " + i, "limiter", "fetch");
                }
                fetched.assertIsSatisfied(TimeUnit.SECONDS.toMillis(30));
            } finally {
                sampler.interrupt();
                sampler.join();
            }
            RoutePolicy used = yaml != null
                    ? context.getRegistry().lookupByNameAndType("backPressure", TokenBucketBackPressure.class) : policy;
            Run run = new Run(mostWaiting.get(), largestBacklog.get(),
                    used instanceof TokenBucketBackPressure ours ? ours.getSuspensions() : 0);
            System.out.printf("back-pressure %s: %s%n", used == null ? "off" : used.getClass().getSimpleName()
                    + (yaml != null ? " (YAML)" : ""), run);
            return run;
        }
    }

    /** A policy at 100 in flight, resuming at 20. */
    private static TokenBucketBackPressure at100() {
        TokenBucketBackPressure policy = new TokenBucketBackPressure(100);
        policy.setResumePercentOfMax(20);
        return policy;
    }

    /** Whether {@code route}'s consumer is suspended now. */
    private static boolean suspended(Route route) {
        return ((ServiceSupport) route.getConsumer()).isSuspended();
    }

    @Test
    void theConsumerIsSuspendedAtTheMarkAndTheBacklogStaysInTheQueue() throws Exception {
        Run without = run(null);
        Run with = run(at100());

        // without it, the seda consumer hands the backlog to the throttle, where it waits in the heap (how much of it
        // depends on how fast the test feeds the queue: far more than the mark in any case)
        assertThat(without.mostWaiting()).as("most waiting without the policy").isGreaterThan(MESSAGES / 4);
        // with it, one exchange at most (seda's one consumer) passes the mark before the consumer is suspended
        assertThat(with.mostWaiting()).as("most waiting with maxInflightExchanges 100").isBetween(20, 101);
        assertThat(with.largestBacklog()).as("largest backlog left in the queue").isGreaterThan(MESSAGES / 2);
        assertThat(with.suspensions()).as("suspensions").isPositive();
    }

    /**
     * Camel's policy checks only when an exchange is done: while none is (every one waits for a token), it takes the
     * whole backlog; this one holds the consumer at the mark.
     */
    @Test
    void whileEveryExchangeWaitsCamelsPolicyTakesTheWholeBacklogAndThisOneHoldsAtTheMark() throws Exception {
        ThrottlingInflightRoutePolicy camels = new ThrottlingInflightRoutePolicy();
        camels.setMaxInflightExchanges(100);
        assertThat(inFlightAfter300(camels)).as("in flight with Camel's policy at 100").isEqualTo(299);
        assertThat(inFlightAfter300(at100())).as("in flight with this policy at 100").isBetween(100, 101);
    }

    /**
     * The exchanges in flight once a seda route has taken what it takes of 300 messages: its bucket lets the first
     * pass, and the others wait an hour.
     */
    private static int inFlightAfter300(RoutePolicy policy) throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("seda:urls?pollTimeout=10").routeId("urls").routePolicy(policy)
                            .to("tokenbucket:slow?capacity=1&refillPeriod=1h");
                }
            });
            context.start();
            try (ProducerTemplate template = context.createProducerTemplate()) {
                for (int i = 0; i < 300; i++) {
                    template.sendBody("seda:urls?pollTimeout=10", "url " + i);
                }
            }
            // all taken (the first is done), or held
            await().atMost(10, TimeUnit.SECONDS).until(() -> context.getInflightRepository().size("urls") == 299
                    || suspended(context.getRoute("urls")));
            context.getShutdownStrategy().setTimeout(1);
            return context.getInflightRepository().size("urls");
        }
    }

    @Test
    void theYamlRouteTakesThePolicyAsABean() throws Exception {
        Run yaml = run(null, YAML, MESSAGES);
        assertThat(yaml.mostWaiting()).as("most waiting, the YAML route's policy at 100").isBetween(20, 101);
        assertThat(yaml.suspensions()).as("suspensions").isPositive();
    }

    @Test
    void anEndpointMadeAfterTheRouteStartedIsCoveredToo() throws Exception {
        Run run = run(at100(), null, MESSAGES, true);
        assertThat(run.mostWaiting()).as("most waiting at a toD endpoint, at 100").isBetween(20, 101);
        assertThat(run.suspensions()).as("suspensions").isPositive();
    }

    @Test
    void onePolicyHoldsEachOfItsRoutesAtTheMarkAndServesANewContextAfterwards() throws Exception {
        TokenBucketBackPressure shared = at100();
        try (CamelContext context = new DefaultCamelContext()) {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    // one token an hour after a burst of 1: everything after each route's first message waits
                    from("seda:a?pollTimeout=10").routeId("a").routePolicy(shared)
                            .to("tokenbucket:a?capacity=1&refillPeriod=1h");
                    from("seda:b?pollTimeout=10").routeId("b").routePolicy(shared)
                            .to("tokenbucket:b?capacity=1&refillPeriod=1h");
                }
            });
            context.start();
            try (ProducerTemplate template = context.createProducerTemplate()) {
                for (int i = 0; i < 300; i++) {
                    template.sendBody("seda:a?pollTimeout=10", "a " + i);
                    template.sendBody("seda:b?pollTimeout=10", "b " + i);
                }
            }
            for (String id : new String[] {"a", "b"}) {
                await().atMost(10, TimeUnit.SECONDS).until(() -> suspended(context.getRoute(id)));
                assertThat(context.getInflightRepository().size(id)).as("in flight on route " + id).isBetween(100, 101);
            }
            context.getShutdownStrategy().setTimeout(1);
        }
        Run again = run(shared); // the same policy object on the route of a new context, the first one closed
        assertThat(again.mostWaiting()).as("most waiting, the policy in a new context").isBetween(20, 101);
    }

    @Test
    void aRouteStoppedWhileSuspendedStartsFreeAndIsHeldBackAgain() throws Exception {
        TokenBucketBackPressure policy = at100();
        String seda = "seda:urls?size=10000&pollTimeout=10";
        try (CamelContext context = new DefaultCamelContext()) {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    // one token an hour after a burst of 1: everything after the first message waits
                    from(seda).routeId("urls").routePolicy(policy)
                            .to("tokenbucket:slow?capacity=1&refillPeriod=1h").to("mock:fetched");
                }
            });
            context.start();
            TokenBucketEndpoint slow = context.getEndpoint("tokenbucket:slow?capacity=1&refillPeriod=1h",
                    TokenBucketEndpoint.class);
            try (ProducerTemplate template = context.createProducerTemplate()) {
                for (int i = 0; i < 300; i++) {
                    template.sendBody(seda, "url " + i);
                }
                await().atMost(10, TimeUnit.SECONDS).until(() -> suspended(context.getRoute("urls")));
                assertThat(slow.getWaitingCount()).as("waiting when suspended").isBetween(100, 101);

                context.getShutdownStrategy().setTimeout(1);
                context.getRouteController().stopRoute("urls"); // fails the waiting ones, tokens refunded
                // the failed ones end on the component's workers, and would count in flight after the start
                await().atMost(10, TimeUnit.SECONDS).until(() -> context.getInflightRepository().size("urls") == 0);

                context.getRouteController().startRoute("urls");
                // the backlog left in the queue is taken again, up to the mark, and held there
                await().atMost(10, TimeUnit.SECONDS).until(() -> policy.getSuspensions() == 2
                        && suspended(context.getRoute("urls")));
                assertThat(slow.getWaitingCount()).as("waiting when suspended again").isBetween(100, 101);
            }
        }
    }

    /**
     * A graceful stop of a route suspends its JMS consumer and waits for the exchanges in flight: Camel's policy
     * resumes the consumer as each completes, so the stopping route keeps taking messages from the broker until the
     * stop times out; this one leaves it suspended.
     */
    @Test
    void aGracefulStopTakesNoMoreMessagesWhereCamelsPolicyResumesTheConsumer() throws Exception {
        ThrottlingInflightRoutePolicy camels = new ThrottlingInflightRoutePolicy();
        camels.setMaxInflightExchanges(100);
        int takenByCamels = takenDuringAStop(camels);
        int takenByOurs = takenDuringAStop(at100());
        // about 20 (10 a second for 2 s) with Camel's; with this one, at most what each listener had received
        assertThat(takenByCamels).as("taken during the stop with Camel's policy").isGreaterThan(2 * LISTENERS);
        assertThat(takenByOurs).as("taken during the stop with this policy").isLessThanOrEqualTo(LISTENERS);
    }

    private static final int LISTENERS = 3;

    /** The messages a JMS route took while a graceful stop of 2 s waited for its exchanges. */
    private static int takenDuringAStop(RoutePolicy policy) throws Exception {
        try (TokenBucketBroker broker = TokenBucketBroker.start(); CamelContext context = new DefaultCamelContext()) {
            broker.addJms(context);
            for (int i = 0; i < 100; i++) {
                broker.send("urls", "url " + i, Map.of());
            }
            AtomicInteger begun = new AtomicInteger();
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    // listeners that wait for their exchanges: 10 messages a second pass the bucket
                    from("jms:queue:urls?receiveTimeout=50&concurrentConsumers=" + LISTENERS).routeId("urls")
                            .routePolicy(policy)
                            .process(e -> begun.incrementAndGet())
                            .to("tokenbucket:t?capacity=1&refillAmount=10&refillPeriod=1s");
                }
            });
            context.start();
            TokenBucketEndpoint bucket = context.getEndpoint("tokenbucket:t?capacity=1&refillAmount=10&refillPeriod=1s",
                    TokenBucketEndpoint.class);
            // exchanges waiting when the stop begins, so that some complete during it
            // (the listeners start their sessions first: seconds on a loaded machine)
            await().atMost(30, TimeUnit.SECONDS).pollInterval(1, TimeUnit.MILLISECONDS)
                    .until(() -> begun.get() >= 5 && bucket.getWaitingCount() >= 2);
            int before = begun.get();
            context.getRouteController().stopRoute("urls", 2, TimeUnit.SECONDS);
            int taken = begun.get() - before;
            System.out.printf("%s: %d messages taken during a graceful stop, %d left in the broker%n",
                    policy.getClass().getSimpleName(), taken,
                    broker.messageCount("urls"));
            return taken;
        }
    }

    @Test
    void theDefaultsWorkAloneAndBadMarksAreRefusedNamingTheOption() throws Exception {
        TokenBucketBackPressure defaults = new TokenBucketBackPressure();
        assertThat(defaults.getMaxInflightExchanges()).isEqualTo(1000);
        assertThat(defaults.getResumePercentOfMax()).isEqualTo(70);
        // 6,000 messages: the backlog passes 1,000 even while the throttle takes 2,000 a second
        Run run = run(defaults, null, 3 * MESSAGES);
        assertThat(run.mostWaiting()).as("most waiting with the defaults").isBetween(700, 1001);
        assertThat(run.suspensions()).as("suspensions with the defaults").isPositive();

        assertThatThrownBy(() -> run(new TokenBucketBackPressure(0))).hasStackTraceContaining(
                "TokenBucketBackPressure maxInflightExchanges must be at least 1, was 0");
        assertThatThrownBy(() -> defaults.setResumePercentOfMax(101)).hasMessage(
                "TokenBucketBackPressure resumePercentOfMax must be 0 to 100, was 101");
    }
}
