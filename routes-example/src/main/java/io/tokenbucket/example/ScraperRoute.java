package io.tokenbucket.example;

import org.apache.camel.builder.RouteBuilder;

/**
 * The throttled work in the Java DSL; {@code routes/throttled-work.yaml} is the same route in YAML.
 *
 * <p>Each URL from the queue gets the next proxy of the {@link ProxyPool} as its {@code proxyId} header, then
 * waits (holding no thread) in {@code tokenbucket:} until that proxy's bucket has a token, so each proxy is
 * throttled on its own while the others keep working. {@link ProxyStats} records what passed, and the
 * results endpoint receives it. The HTTP fetch through the proxy will go between the throttle and the record.
 */
public class ThrottledWorkRoute extends RouteBuilder {

    /** The route id, the same in both DSLs. */
    public static final String ROUTE_ID = "throttled-work";

    /** The throttle; requireKey makes a missing proxy id an error instead of a silently shared bucket. */
    public static final String THROTTLE = "tokenbucket:proxies?keyHeader=" + ProxyStats.PROXY_HEADER
            + "&requireKey=true&capacity={{example.capacity}}&refillPeriod={{example.refillPeriod}}";

    @Override
    public void configure() {
        from("{{example.queue}}").routeId(ROUTE_ID)
                .setHeader(ProxyStats.PROXY_HEADER, method(ProxyPool.BEAN, "next"))
                .to(THROTTLE)
                .to("bean:" + ProxyStats.BEAN + "?method=record")
                .to("{{example.results}}");
    }
}
