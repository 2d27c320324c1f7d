package io.tokenbucket.camel.quarkus;

import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.apache.camel.CamelContext;
import org.apache.camel.health.HealthCheck.Kind;
import org.apache.camel.health.HealthCheck.Result;
import org.apache.camel.health.HealthCheck.State;
import org.apache.camel.health.HealthCheckHelper;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * The tokenbucket endpoints' readiness on Quarkus's health endpoint ({@code /q/health/ready}), in an application
 * that has {@code quarkus-smallrye-health} (the extension adds this bean only then).
 *
 * <p>One check, {@code camel-tokenbucket}: DOWN while any Redis-backed endpoint's Camel check
 * ({@code tokenbucket-<name>}) is DOWN, UP otherwise (no Redis endpoint, or Redis answers), with each endpoint's
 * state, and the reason when DOWN, as data. It reports what Camel's health registry holds, so Camel's own switch
 * applies as for every producer check: {@code camel.health.producers-enabled=true}. Readiness only, as the Camel
 * check: a Redis outage is the store policy's business ({@code onStoreError}), and a restart would not mend it.
 */
@Readiness
@ApplicationScoped
public class TokenBucketReadinessCheck implements HealthCheck {

    /** The name of the check on Quarkus's health endpoint. */
    public static final String NAME = "camel-tokenbucket";
    private static final String CHECK_PREFIX = "tokenbucket-";

    @Inject
    CamelContext camel;

    @Override
    public HealthCheckResponse call() {
        HealthCheckResponseBuilder response = HealthCheckResponse.named(NAME).up();
        // Camel's filter excludes what it matches: everything but the readiness checks of tokenbucket endpoints
        for (Result result : HealthCheckHelper.invoke(camel,
                check -> Map.of(org.apache.camel.health.HealthCheck.CHECK_KIND, Kind.READINESS),
                check -> !check.isReadiness() || !check.getId().startsWith(CHECK_PREFIX), null)) {
            String id = result.getCheck().getId();
            response.withData(id, result.getState().name());
            if (result.getState() == State.DOWN) {
                response.down();
                result.getMessage().ifPresent(why -> response.withData(id + ".reason", why));
            }
        }
        return response.build();
    }
}
