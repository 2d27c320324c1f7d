package io.tokenbucket.camel;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.camel.CamelContext;
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
 * exchange of the route is done (on the policy's own thread, never the component's timer). A consumer that cannot be suspended is stopped and started again (Camel's
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

    private volatile Route route;
    /** The watched endpoints; read on every exchange, so replaced whole when looked for again, never changed. */
    private volatile List<TokenBucketEndpoint> watched = List.of();
    /** Whether this policy holds its consumer suspended; changed with the consumer, under {@link #transition}. */
    private volatile boolean suspended;
    /** Held while the consumer is suspended or resumed, so that the flag and the consumer never disagree. */
    private final ReentrantLock transition = new ReentrantLock();
    /** The number of the context's endpoints when the watched ones were looked for. */
    private volatile int endpointCount = -1;
    private volatile ScheduledExecutorService checker;
    /** Whether a check is queued on {@link #checker} for an exchange that ended. */
    private final AtomicBoolean checkQueued = new AtomicBoolean();
    private final AtomicReference<ScheduledFuture<?>> checks = new AtomicReference<>();
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
    public boolean isSuspended() {
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
        Route before = this.route;
        if (before != null && before.getCamelContext() == route.getCamelContext()
                && !before.getRouteId().equals(route.getRouteId())) {
            throw new IllegalArgumentException("A TokenBucketBackPressure is the policy of one route: it is already"
                    + " route " + before.getRouteId() + "'s, so route " + route.getRouteId() + " needs one of its"
                    + " own (in YAML, a bean of its own)");
        }
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
        forget();
        endpointCount = -1;
        watchedEndpoints();
    }

    @Override
    public void onExchangeBegin(Route route, Exchange exchange) {
        if (!suspended && getWaiting() >= maxWaiting) {
            suspendConsumer();
        }
    }

    /**
     * Queues a check on this policy's own thread once the waiting exchanges are at the resume mark: an exchange may end
     * on the component's timer or worker threads, which must not wait for a consumer to resume (a JMS listener
     * container starting again).
     */
    @Override
    public void onExchangeDone(Route route, Exchange exchange) {
        ScheduledExecutorService c = checker;
        if (suspended && c != null && getWaiting() <= getResumeWaiting() && checkQueued.compareAndSet(false, true)) {
            try {
                c.execute(() -> {
                    checkQueued.set(false);
                    check();
                });
            } catch (RejectedExecutionException stopped) {
                checkQueued.set(false); // the policy stopped: nothing to resume
            }
        }
    }

    /** Camel stops the route: its consumer is Camel's to start again, not this policy's. */
    @Override
    public void onStop(Route route) {
        forget();
    }

    /** Camel suspends the route: its consumer is Camel's to resume, not this policy's. */
    @Override
    public void onSuspend(Route route) {
        forget();
    }

    /**
     * Drops this policy's hold on the consumer, without touching it, and without waiting for a transition under way
     * (Camel may be stopping the consumer on this thread): a suspension racing with it does nothing to a route that
     * is not started, and the next start forgets again.
     */
    private void forget() {
        suspended = false;
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

    /**
     * Suspends the consumer of a started route, on the thread of the exchange that found the mark passed, so that
     * the consumer takes no more before it is suspended.
     */
    private void suspendConsumer() {
        transition.lock();
        try {
            if (suspended || !routeStarted()) {
                return;
            }
            suspended = true;
            suspensions.incrementAndGet();
            if (checker == null) {
                checker = route.getCamelContext().getExecutorServiceManager()
                        .newSingleThreadScheduledExecutor(this, "TokenBucketBackPressure");
            }
            long millis = checkInterval.toMillis();
            cancelChecks();
            checks.set(checker.scheduleWithFixedDelay(this::check, millis, millis, TimeUnit.MILLISECONDS));
            LOG.debug("Route {}: {} exchanges waiting at tokenbucket endpoints, at least maxWaiting {}: suspending"
                    + " its consumer", route.getRouteId(), getWaiting(), maxWaiting);
            suspendOrStopConsumer(route.getConsumer());
        } catch (Exception e) {
            handleException(e);
        } finally {
            transition.unlock();
        }
    }

    /**
     * Resumes the consumer when the waiting exchanges are back at {@code resumeWaiting} or below. Runs on this
     * policy's thread. Never waits for a transition under way (a suspension on the consumer's thread): the next check
     * comes within {@code checkInterval}.
     */
    private void check() {
        if (!transition.tryLock()) {
            return;
        }
        try {
            int waiting = getWaiting();
            if (!suspended || waiting > getResumeWaiting() || !routeStarted()) {
                return;
            }
            suspended = false;
            cancelChecks();
            LOG.debug("Route {}: {} exchanges waiting, at most resumeWaiting {}: resuming its consumer",
                    route.getRouteId(), waiting, getResumeWaiting());
            resumeOrStartConsumer(route.getConsumer());
        } catch (Exception e) {
            handleException(e);
        } finally {
            transition.unlock();
        }
    }

    /** Whether Camel has the route started (not stopping, stopped or suspended by Camel). */
    private boolean routeStarted() {
        Route r = route;
        return r != null && r.getCamelContext().getRouteController().getRouteStatus(r.getRouteId()).isStarted();
    }

    private void cancelChecks() {
        ScheduledFuture<?> scheduled = checks.getAndSet(null);
        if (scheduled != null) {
            scheduled.cancel(false);
        }
    }

    /**
     * The watched endpoints, looked for again whenever the context's endpoints have changed in number (a route's own
     * are there when it starts; one that a {@code toD} makes, or a route added later, comes later).
     */
    private List<TokenBucketEndpoint> watchedEndpoints() {
        Route r = route;
        if (r == null) {
            return watched;
        }
        CamelContext context = r.getCamelContext();
        int count = context.getEndpointRegistry().size();
        if (count == endpointCount) {
            return watched;
        }
        List<String> wanted = endpoints == null || endpoints.isBlank() ? null
                : List.of(endpoints.trim().split("\\s*,\\s*"));
        watched = context.getEndpoints().stream().filter(e -> e instanceof TokenBucketEndpoint tb
                && (wanted == null || wanted.stream().anyMatch(w -> w.equals(tb.getName())
                || w.contains(":") && context.hasEndpoint(w) == tb))).map(TokenBucketEndpoint.class::cast).toList();
        endpointCount = count;
        return watched;
    }
}
