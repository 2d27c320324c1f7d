package io.tokenbucket.camel;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.component.seda.SedaEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@link TokenBucketBackPressure} on a real seda queue: with it, the backlog stays in the queue and the waiting
 * exchanges stay near the mark; without it, the whole backlog waits in the JVM. Waiting counts are sampled from the
 * endpoint by a thread of the test, not taken from the policy.
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
                    maxWaiting: 100
                    resumeWaiting: 20
            - route:
                id: urls
                routePolicy: backPressure
                from:
                  uri: seda:urls?size=10000&pollTimeout=10
                  steps:
                    - to: tokenbucket:fetch?capacity=10&refillAmount=2000&refillPeriod=1s
                    - to: mock:fetched
            """;

    private static Run run(TokenBucketBackPressure policy) throws Exception {
        return run(policy, null, MESSAGES);
    }

    private static Run run(TokenBucketBackPressure policy, String yaml, int messages) throws Exception {
        return run(policy, yaml, messages, false);
    }

    /** @param dynamic the throttle as a {@code toD}, whose endpoint the context makes at the first message */
    private static Run run(TokenBucketBackPressure policy, String yaml, int messages, boolean dynamic)
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
            TokenBucketBackPressure used = yaml != null
                    ? context.getRegistry().lookupByNameAndType("backPressure", TokenBucketBackPressure.class) : policy;
            Run run = new Run(mostWaiting.get(), largestBacklog.get(), used == null ? 0 : used.getSuspensions());
            System.out.printf("back-pressure %s: %s%n", used == null ? "off" : used.getMaxWaiting() + "/"
                    + used.getResumeWaiting() + (yaml != null ? " (YAML)" : ""), run);
            return run;
        }
    }

    @Test
    void theConsumerIsSuspendedAtTheMarkAndTheBacklogStaysInTheQueue() throws Exception {
        Run without = run(null);
        TokenBucketBackPressure policy = new TokenBucketBackPressure(100, 20);
        Run with = run(policy);

        // without it, the seda consumer hands the whole backlog to the throttle, where it waits in the heap
        assertThat(without.mostWaiting()).as("most waiting without the policy").isGreaterThan(MESSAGES / 2);
        // with it, one exchange at most (seda's one consumer) passes the mark before the consumer is suspended
        assertThat(with.mostWaiting()).as("most waiting with maxWaiting 100").isBetween(50, 101);
        assertThat(with.largestBacklog()).as("largest backlog left in the queue").isGreaterThan(MESSAGES / 2);
        assertThat(with.suspensions()).as("suspensions").isPositive();
        assertThat(policy.isSuspended()).as("suspended after the run").isFalse();
    }

    @Test
    void theYamlRouteTakesThePolicyAsABean() throws Exception {
        Run yaml = run(null, YAML, MESSAGES);
        assertThat(yaml.mostWaiting()).as("most waiting, the YAML route's policy at 100").isBetween(50, 101);
        assertThat(yaml.suspensions()).as("suspensions").isPositive();
    }

    @Test
    void anEndpointMadeAfterTheRouteStartedIsWatchedToo() throws Exception {
        TokenBucketBackPressure policy = new TokenBucketBackPressure(100, 20);
        Run run = run(policy, null, MESSAGES, true);
        assertThat(run.mostWaiting()).as("most waiting at a toD endpoint, maxWaiting 100").isBetween(50, 101);
        assertThat(run.suspensions()).as("suspensions").isPositive();
    }

    @Test
    void onePolicyOnTwoRoutesOfOneContextFailsTheStartAndOneRouteAfterAnotherIsFine() throws Exception {
        TokenBucketBackPressure shared = new TokenBucketBackPressure(100, 20);
        try (CamelContext context = new DefaultCamelContext()) {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("seda:a").routeId("a").routePolicy(shared).to("mock:a");
                    from("seda:b").routeId("b").routePolicy(shared).to("mock:b");
                }
            });
            assertThatThrownBy(context::start).hasStackTraceContaining("A TokenBucketBackPressure is the policy of"
                    + " one route: it is already route a's, so route b needs one of its own");
        }
        TokenBucketBackPressure policy = new TokenBucketBackPressure(100, 20);
        Run first = run(policy);
        Run again = run(policy); // the same policy object on the route of a new context, the first one closed
        assertThat(first.mostWaiting()).isBetween(50, 101);
        assertThat(again.mostWaiting()).as("most waiting, the policy's second route").isBetween(50, 101);
        assertThat(policy.isSuspended()).isFalse();
    }

    @Test
    void aRouteStoppedWhileSuspendedStartsFreeAndIsHeldBackAgain() throws Exception {
        TokenBucketBackPressure policy = new TokenBucketBackPressure(100, 20);
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
            try (ProducerTemplate template = context.createProducerTemplate()) {
                for (int i = 0; i < 300; i++) {
                    template.sendBody(seda, "url " + i);
                }
                await().atMost(10, TimeUnit.SECONDS).until(policy::isSuspended);
                assertThat(policy.getWaiting()).as("waiting when suspended").isBetween(100, 101);

                context.getShutdownStrategy().setTimeout(1);
                context.getRouteController().stopRoute("urls"); // fails the waiting ones, tokens refunded
                assertThat(policy.isSuspended()).as("suspended once Camel stopped the route").isFalse();

                context.getRouteController().startRoute("urls");
                // the backlog left in the queue is taken again, up to the mark, and held there
                await().atMost(10, TimeUnit.SECONDS).until(policy::isSuspended);
                assertThat(policy.getSuspensions()).as("suspensions, one before the stop and one after").isEqualTo(2);
                assertThat(policy.getWaiting()).as("waiting when suspended again").isBetween(100, 101);
            }
        }
    }

    @Test
    void theDefaultsWorkAloneAndBadMarksFailTheRouteStartNamingTheOption() throws Exception {
        TokenBucketBackPressure defaults = new TokenBucketBackPressure();
        assertThat(defaults.getMaxWaiting()).isEqualTo(1000);
        assertThat(defaults.getResumeWaiting()).isEqualTo(500);
        // 6,000 messages: the backlog passes 1,000 even while the throttle takes 2,000 a second
        Run run = run(defaults, null, 3 * MESSAGES);
        assertThat(run.mostWaiting()).as("most waiting with the defaults").isBetween(500, 1001);
        assertThat(run.suspensions()).as("suspensions with the defaults").isPositive();

        assertThatThrownBy(() -> run(new TokenBucketBackPressure(0, 0))).hasStackTraceContaining(
                "TokenBucketBackPressure maxWaiting must be at least 1, was 0");
        assertThatThrownBy(() -> run(new TokenBucketBackPressure(10, 10))).hasStackTraceContaining(
                "TokenBucketBackPressure resumeWaiting must be below maxWaiting (10), was 10");
    }
}
