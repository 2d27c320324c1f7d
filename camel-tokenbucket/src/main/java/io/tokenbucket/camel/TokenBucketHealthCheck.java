package io.tokenbucket.camel;

import java.util.Map;
import java.util.function.Supplier;

import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * Readiness of a Redis-backed endpoint: DOWN while Redis does not answer a PING within {@code storeTimeout},
 * UP when it does. Registered with Camel's producer health checks (when camel-health is present), with id
 * {@code tokenbucket-<name>}. Readiness only, never liveness: a Redis outage is the store policy's business
 * ({@code onStoreError}), and restarting the application would not mend it. The PING is one per shared
 * connection and its answer is reused for a second, so a health request over many endpoints of a frozen Redis
 * waits one {@code storeTimeout}, not one per endpoint.
 */
final class TokenBucketHealthCheck implements HealthCheck {

    private final TokenBucketEndpoint endpoint;
    private final Supplier<Throwable> probe;
    private volatile boolean enabled = true;

    /**
     * @param probe asks the store once; answers null when it answered, the failure otherwise
     */
    TokenBucketHealthCheck(TokenBucketEndpoint endpoint, Supplier<Throwable> probe) {
        this.endpoint = endpoint;
        this.probe = probe;
    }

    @Override
    public String getGroup() {
        return "producers";
    }

    @Override
    public String getId() {
        return "tokenbucket-" + endpoint.getName();
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
                .detail("store", endpoint.getStoreDescription())
                .detail("onStoreError", endpoint.getConfiguration().getOnStoreError().name());
        Throwable failure = probe.get();
        if (failure == null) {
            return result.up().build();
        }
        String why = failure.getMessage() != null ? failure.getMessage() : failure.getClass().getSimpleName();
        return result.down().message(endpoint.getStoreDescription() + ": " + endpoint.storeBinding().redact(why)).error(failure)
                .build();
    }
}
