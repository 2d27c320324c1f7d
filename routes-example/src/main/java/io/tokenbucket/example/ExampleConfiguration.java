package io.tokenbucket.example;

import java.util.Locale;

import org.apache.camel.CamelConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.support.PluginHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sets up what both DSLs need: binds the {@link ProxyPool} (from {@code example.proxies}) and the
 * {@link ProxyStats}, then adds the route in the DSL that {@code example.dsl} names ({@code java} or
 * {@code yaml}).
 *
 * <p>The choice is made here rather than with {@code camel.main.routes-include-pattern} alone because the Java
 * route must then also be left out, and Camel Main has no property for "add this RouteBuilder only if". The
 * application and the tests both start from this class, so they load routes the same way.
 */
public class ExampleConfiguration implements CamelConfiguration {

    /** Where the YAML version of the route lives. */
    public static final String YAML_ROUTE = "classpath:routes/throttled-work.yaml";

    private static final Logger LOG = LoggerFactory.getLogger(ExampleConfiguration.class);

    @Override
    public void configure(CamelContext context) throws Exception {
        ProxyPool pool = ProxyPool.parse(context.resolvePropertyPlaceholders("{{example.proxies}}"));
        context.getRegistry().bind(ProxyPool.BEAN, pool);
        context.getRegistry().bind(ProxyStats.BEAN, new ProxyStats());

        String dsl = context.resolvePropertyPlaceholders("{{example.dsl:java}}").trim().toLowerCase(Locale.ROOT);
        switch (dsl) {
            case "java" -> context.addRoutes(new ThrottledWorkRoute());
            case "yaml" -> PluginHelper.getRoutesLoader(context)
                    .loadRoutes(PluginHelper.getResourceLoader(context).resolveResource(YAML_ROUTE));
            default -> throw new IllegalArgumentException("example.dsl must be java or yaml, was '" + dsl + "'");
        }
        LOG.info("Route {} in the {} DSL, proxies {}", ThrottledWorkRoute.ROUTE_ID, dsl, pool.ids());
    }
}
