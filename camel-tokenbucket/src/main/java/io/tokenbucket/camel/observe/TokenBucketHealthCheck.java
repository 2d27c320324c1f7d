package io.tokenbucket.camel.observe;

import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import io.tokenbucket.camel.producer.TokenBucketServices;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckResultBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Readiness of a Redis-backed endpoint: DOWN while Redis does not answer within {@code storeTimeout} or refuses
 * what the endpoint needs (a missing ACL permission, a refused {@code SUBSCRIBE} of an endpoint with in-flight
 * limits), UP when it answers and allows it. Registered with Camel's producer health checks (when camel-health is
 * present), with id {@code tokenbucket-<name>}. Readiness only, never liveness: a Redis outage is the store
 * policy's business ({@code onStoreError}), and restarting the application would not mend it. The probe sends
 * only commands the endpoint sends anyway (no {@code PING}): first one per shared connection, whose answer is
 * reused for a second, so a health request over many endpoints of a frozen Redis waits one {@code storeTimeout},
 * not one per endpoint; then, when Redis answered it, the endpoint's own (its script's commands on its keys).
 *
 * <p>A DOWN result says why in one line, its message and its detail {@code reason}
 * ({@code redis at redis://host:6379: Connection refused}),
 * and carries no exception: health pages ({@code show-details: always}) and the probes' own logging would print
 * its stack trace on every probe. The check logs one line when the endpoint's state changes (WARN when it goes
 * DOWN, INFO when it is UP again), not one per probe.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketHealthCheck implements HealthCheck {

    private final TokenBucketServices services;
    private final Supplier<Throwable> probe;
    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketHealthCheck.class);

    private volatile boolean enabled = true;
    /** The last state reported (null before the first call), so that only a change is logged. */
    private final AtomicReference<Boolean> up = new AtomicReference<>();

    /**
     * @param services the services of the endpoint checked
     * @param probe    asks the store once; answers null when it answered, the failure otherwise
     */
    public TokenBucketHealthCheck(TokenBucketServices services, Supplier<Throwable> probe) {
        this.services = services;
        this.probe = probe;
    }

    @Override
    public String getGroup() {
        return "producers";
    }

    @Override
    public String getId() {
        return "tokenbucket-" + services.name();
    }

    @Override
    public boolean isEnabled() {
        return enabled;
    }

    @Override
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public boolean isLiveness() {
        return false; // a Redis outage is handled by onStoreError; restarting Camel would not help
    }

    @Override
    public Result call(Map<String, Object> options) {
        HealthCheckResultBuilder result = HealthCheckResultBuilder.on(this)
                .detail("store", services.storeBinding().description())
                .detail("onStoreError", services.configuration().getOnStoreError().name());
        Throwable failure = probe.get();
        if (failure == null) {
            if (Boolean.FALSE.equals(up.getAndSet(true))) {
                LOG.info("tokenbucket:{} is UP again: {} answers", services.name(), services.storeBinding().description());
            }
            return result.up().build();
        }
        String why = failure.getMessage() != null ? failure.getMessage() : failure.getClass().getSimpleName();
        // one line: a message may span several (a Redis error reply, a nested cause)
        String reason = services.storeBinding().description() + ": " + services.storeBinding().redact(why)
                .replaceAll("\\s*\\R\\s*", " ").strip();
        if (!Boolean.FALSE.equals(up.getAndSet(false))) {
            LOG.warn("tokenbucket:{} is DOWN: {}", services.name(), reason);
        }
        // the message, and the same as a detail: Camel Spring Boot's health page shows the details only
        return result.down().message(reason).detail("reason", reason).build();
    }
}
