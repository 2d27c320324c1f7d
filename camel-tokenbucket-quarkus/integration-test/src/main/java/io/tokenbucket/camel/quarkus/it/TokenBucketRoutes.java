package io.tokenbucket.camel.quarkus.it;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.apache.camel.builder.RouteBuilder;

/**
 * The application's routes. Every limit not in a URI comes from {@code camel.component.tokenbucket.*} in
 * application.properties (2 tokens a key, refilled hourly, the key in header {@code tenant}); the Redis URI comes
 * from the same prefix, set by the tests for the redis-server they start.
 */
@ApplicationScoped
public class TokenBucketRoutes extends RouteBuilder {

    @Inject
    Admissions admissions;

    @Override
    public void configure() {
        from("direct:local").routeId("local")
                .to("tokenbucket:local?mode=reject")
                .process(admissions.record("local"));
        from("direct:paced").routeId("paced")
                .to("tokenbucket:paced?capacity=1&refillPeriod=100ms")
                .process(admissions.record("paced"));
        from("direct:redis").routeId("redis")
                .to("tokenbucket:shared?store=redis&mode=reject")
                .process(admissions.record("redis"));
    }
}
