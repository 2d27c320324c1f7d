package io.tokenbucket.camel;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.camel.Consumer;
import org.apache.camel.Exchange;
import org.apache.camel.Route;
import org.apache.camel.spi.InflightRepository;
import org.apache.camel.throttling.ThrottlingInflightRoutePolicy;

/**
 * Back-pressure from a route to its consumer: Camel's {@link ThrottlingInflightRoutePolicy} (suspend the route's
 * consumer while more than {@code maxInflightExchanges} of its exchanges are in flight, default 1000; resume it at
 * {@code resumePercentOfMax} of that, default 70), fit for routes whose exchanges wait in {@code tokenbucket:}
 * endpoints. A waiting exchange is in flight, so a queue consumer (JMS, AMQP, Kafka, seda) leaves the backlog in its
 * broker or queue, where other instances take it, instead of parking it in this JVM. Two differences from Camel's:
 * <ul>
 * <li>It checks as each exchange begins, so at most the consumer's concurrent exchanges pass the mark. Camel's checks
 * only when an exchange is done: while the first exchanges wait for tokens, the consumer takes the whole backlog.</li>
 * <li>It resumes only a consumer that it suspended. Camel's also resumes one that a graceful route stop suspended,
 * when an exchange completes during the stop, and the stopping route takes more messages.</li>
 * </ul>
 * One line in a route: {@code from("jms:queue:urls?receiveTimeout=50").routePolicy(new TokenBucketBackPressure(200))};
 * in YAML, a bean of this type and {@code routePolicy: <its name>}. How soon a resumed consumer takes messages again
 * is its own: a JMS listener (camel-jms suspends by stopping it) within its {@code receiveTimeout}, a seda consumer
 * within its {@code pollTimeout} (1 s each by default), so give them short ones.
 */
public class TokenBucketBackPressure extends ThrottlingInflightRoutePolicy {

    /** The consumers this policy suspended and has not resumed; guarded by {@code this}. */
    private final Set<Consumer> held = new HashSet<>();
    private final AtomicLong suspensions = new AtomicLong();

    /** A policy with Camel's defaults: suspend past 1,000 exchanges in flight, resume at 700. */
    public TokenBucketBackPressure() {
    }

    /** @param maxInflightExchanges the exchanges in flight past which the consumer is suspended */
    public TokenBucketBackPressure(int maxInflightExchanges) {
        setMaxInflightExchanges(maxInflightExchanges);
    }

    /** How many times this policy suspended a consumer. */
    public long getSuspensions() {
        return suspensions.get();
    }

    @Override
    public void setResumePercentOfMax(int resumePercentOfMax) {
        if (resumePercentOfMax < 0 || resumePercentOfMax > 100) {
            throw new IllegalArgumentException("TokenBucketBackPressure resumePercentOfMax must be 0 to 100, was "
                    + resumePercentOfMax);
        }
        super.setResumePercentOfMax(resumePercentOfMax);
    }

    @Override
    public void onInit(Route route) {
        if (getMaxInflightExchanges() < 1) {
            throw new IllegalArgumentException("TokenBucketBackPressure maxInflightExchanges must be at least 1, was "
                    + getMaxInflightExchanges() + " (route " + route.getRouteId() + ")");
        }
        super.onInit(route);
    }

    @Override
    public void onExchangeBegin(Route route, Exchange exchange) {
        InflightRepository inflight = route.getCamelContext().getInflightRepository();
        // the route counts this exchange in flight after its policies have begun it, the context before
        int size = getScope() == ThrottlingScope.Context ? inflight.size() : inflight.size(route.getRouteId()) + 1;
        if (size > getMaxInflightExchanges()) {
            try {
                if (suspendOrStopConsumer(route.getConsumer())) {
                    getLogger().log("Throttling consumer: " + size + " > " + getMaxInflightExchanges()
                            + " inflight exchanges by suspending consumer: " + route.getConsumer());
                }
            } catch (Exception e) {
                handleException(e);
            }
        }
    }

    @Override
    public synchronized boolean suspendOrStopConsumer(Consumer consumer) throws Exception {
        boolean suspended = !held.contains(consumer) && super.suspendOrStopConsumer(consumer);
        if (suspended) {
            held.add(consumer);
            suspensions.incrementAndGet();
        }
        return suspended;
    }

    @Override
    public synchronized boolean resumeOrStartConsumer(Consumer consumer) throws Exception {
        return held.remove(consumer) && super.resumeOrStartConsumer(consumer);
    }

    /** Camel stops the route: its consumer is Camel's to start again. */
    @Override
    public synchronized void onStop(Route route) {
        held.remove(route.getConsumer());
    }

    /** Camel suspends the route: its consumer is Camel's to resume. */
    @Override
    public synchronized void onSuspend(Route route) {
        held.remove(route.getConsumer());
    }
}
