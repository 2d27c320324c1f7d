package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Route;
import org.apache.camel.support.RoutePolicySupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Back-pressure from {@code tokenbucket:} endpoints to a route's consumer: a route policy that suspends the consumer
 * while the endpoints it watches hold {@link #setMaxWaiting maxWaiting} waiting exchanges or more, and resumes it once
 * they hold {@link #setResumeWaiting resumeWaiting} or fewer. A queue consumer (JMS, AMQP, Kafka, seda) then leaves
 * the backlog in its broker or queue instead of parking it in this JVM as waiting exchanges, and other instances on
 * the same queue take what this one does not.
 *
 * <p>One line in a route:
 * {@code from("jms:queue:urls?asyncConsumer=true&receiveTimeout=50").routePolicy(new TokenBucketBackPressure())};
 * in YAML, a bean of this type and {@code routePolicy: <its name>} on the route. Alone it works: it watches every
 * {@code tokenbucket:} endpoint of the Camel context, suspends at 1,000 waiting exchanges and resumes at half that.
 *
 * <p>Checked when each exchange of the route begins (so at most the consumer's concurrent exchanges pass the mark
 * before the consumer is suspended) and, while suspended, every {@link #setCheckInterval checkInterval} and when an
 * exchange of the route is done. A consumer that cannot be suspended is stopped and started again (Camel's
 * {@link RoutePolicySupport#suspendOrStopConsumer}). How soon a resumed consumer takes messages again is its own:
 * a stopped JMS listener (camel-jms suspends by stopping it) within its {@code receiveTimeout}, a suspended seda
 * consumer within its {@code pollTimeout} (1 s each by default): give them short ones
 * ({@code jms:queue:urls?receiveTimeout=50}, {@code seda:urls?pollTimeout=10}), or the route idles between marks.
 */
public class TokenBucketBackPressure extends RoutePolicySupport {

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketBackPressure.class);

    private int maxWaiting = 1000;
    private int resumeWaiting = -1;
    private String endpoints;
    private Duration checkInterval = Duration.ofMillis(20);

    private Route route;
    /** The watched endpoints, once found; read on every exchange, so replaced whole, never changed. */
    private volatile List<TokenBucketEndpoint> watched = List.of();
    private boolean suspended;
    private ScheduledExecutorService checker;
    private ScheduledFuture<?> checks;
    private final AtomicLong suspensions = new AtomicLong();

    /** A policy with the defaults: every {@code tokenbucket:} endpoint, suspend at 1,000 waiting, resume at 500. */
    public TokenBucketBackPressure() {
    }

    /**
     * @param maxWaiting    the waiting exchanges at which the consumer is suspended
     * @param resumeWaiting the waiting exchanges at or below which it is resumed
     */
    public TokenBucketBackPressure(int maxWaiting, int resumeWaiting) {
        this.maxWaiting = maxWaiting;
        this.resumeWaiting = resumeWaiting;
    }

    /** The waiting exchanges (of every watched endpoint together) at which the consumer is suspended; default 1000. */
    public int getMaxWaiting() {
        return maxWaiting;
    }

    /** @see #getMaxWaiting() */
    public void setMaxWaiting(int maxWaiting) {
        this.maxWaiting = maxWaiting;
    }

    /**
     * The waiting exchanges (of every watched endpoint together) at or below which a suspended consumer is resumed;
     * default half of {@code maxWaiting}.
     */
    public int getResumeWaiting() {
        return resumeWaiting < 0 ? maxWaiting / 2 : resumeWaiting;
    }

    /** @see #getResumeWaiting() */
    public void setResumeWaiting(int resumeWaiting) {
        this.resumeWaiting = resumeWaiting;
    }

    /**
     * The endpoints to watch: a comma-separated list of {@code tokenbucket:} URIs as the routes write them (or just
     * their names, {@code proxies} for {@code tokenbucket:proxies?...}); default: every {@code tokenbucket:} endpoint
     * of the Camel context.
     */
    public String getEndpoints() {
        return endpoints;
    }

    /** @see #getEndpoints() */
    public void setEndpoints(String endpoints) {
        this.endpoints = endpoints;
    }

    /** How often a suspended consumer's endpoints are checked to resume it; default 20 ms. */
    public Duration getCheckInterval() {
        return checkInterval;
    }

    /** @see #getCheckInterval() */
    public void setCheckInterval(Duration checkInterval) {
        this.checkInterval = checkInterval;
    }

    /** How many times this policy suspended its consumer. */
    public long getSuspensions() {
        return suspensions.get();
    }

    /** Whether the consumer is suspended by this policy now. */
    public synchronized boolean isSuspended() {
        return suspended;
    }

    /** The waiting exchanges of the watched endpoints now, together. */
    public int getWaiting() {
        int waiting = 0;
        for (TokenBucketEndpoint endpoint : watchedEndpoints()) {
            waiting += endpoint.getWaitingCount();
        }
        return waiting;
    }

    @Override
    public void onInit(Route route) {
        super.onInit(route);
        this.route = route;
        if (maxWaiting < 1) {
            throw new IllegalArgumentException("TokenBucketBackPressure maxWaiting must be at least 1, was "
                    + maxWaiting + " (route " + route.getRouteId() + ")");
        }
        if (getResumeWaiting() >= maxWaiting) {
            throw new IllegalArgumentException("TokenBucketBackPressure resumeWaiting must be below maxWaiting ("
                    + maxWaiting + "), was " + resumeWaiting + " (route " + route.getRouteId() + ")");
        }
        if (checkInterval == null || checkInterval.toMillis() < 1) {
            throw new IllegalArgumentException("TokenBucketBackPressure checkInterval must be at least 1 ms, was "
                    + checkInterval + " (route " + route.getRouteId() + ")");
        }
    }

    @Override
    public void onStart(Route route) {
        watched = List.of();
        watchedEndpoints();
    }

    @Override
    public void onExchangeBegin(Route route, Exchange exchange) {
        if (getWaiting() >= maxWaiting) {
            suspendConsumer();
        }
    }

    @Override
    public void onExchangeDone(Route route, Exchange exchange) {
        if (isSuspended()) {
            check();
        }
    }

    @Override
    public void onStop(Route route) {
        cancelChecks();
    }

    @Override
    protected void doStop() throws Exception {
        cancelChecks();
        if (checker != null) {
            route.getCamelContext().getExecutorServiceManager().shutdownNow(checker);
            checker = null;
        }
        super.doStop();
    }

    private void suspendConsumer() {
        synchronized (this) {
            if (suspended) {
                return;
            }
            suspended = true;
            suspensions.incrementAndGet();
            if (checker == null) {
                checker = route.getCamelContext().getExecutorServiceManager()
                        .newSingleThreadScheduledExecutor(this, "TokenBucketBackPressure");
            }
            long millis = checkInterval.toMillis();
            checks = checker.scheduleWithFixedDelay(this::check, millis, millis, TimeUnit.MILLISECONDS);
        }
        LOG.debug("Route {}: {} exchanges waiting at tokenbucket endpoints, at least maxWaiting {}: suspending its"
                + " consumer", route.getRouteId(), getWaiting(), maxWaiting);
        try {
            suspendOrStopConsumer(route.getConsumer());
        } catch (Exception e) {
            handleException(e);
        }
    }

    /** Resumes the consumer when the waiting exchanges are back at {@code resumeWaiting} or below. */
    private void check() {
        int waiting = getWaiting();
        synchronized (this) {
            if (!suspended || waiting > getResumeWaiting()) {
                return;
            }
            suspended = false;
            cancelChecks();
        }
        LOG.debug("Route {}: {} exchanges waiting, at most resumeWaiting {}: resuming its consumer",
                route.getRouteId(), waiting, getResumeWaiting());
        try {
            resumeOrStartConsumer(route.getConsumer());
        } catch (Exception e) {
            handleException(e);
        }
    }

    private synchronized void cancelChecks() {
        if (checks != null) {
            checks.cancel(false);
            checks = null;
        }
    }

    /**
     * The watched endpoints, looked for until the context has one (a route's own are there when it starts; one that
     * a {@code toD} makes comes later).
     */
    private List<TokenBucketEndpoint> watchedEndpoints() {
        List<TokenBucketEndpoint> found = watched;
        if (!found.isEmpty() || route == null) {
            return found;
        }
        CamelContext context = route.getCamelContext();
        List<String> wanted = endpoints == null || endpoints.isBlank() ? null
                : List.of(endpoints.trim().split("\\s*,\\s*"));
        List<TokenBucketEndpoint> all = new ArrayList<>();
        for (Endpoint e : context.getEndpoints()) {
            if (e instanceof TokenBucketEndpoint tb && (wanted == null || wanted.stream().anyMatch(w ->
                    w.equals(tb.getName()) || w.contains(":") && context.hasEndpoint(w) == tb))) {
                all.add(tb);
            }
        }
        watched = List.copyOf(all);
        return watched;
    }
}
