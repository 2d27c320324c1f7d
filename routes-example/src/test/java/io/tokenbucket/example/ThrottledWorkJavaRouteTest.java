package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.camel.BeanInject;
import org.apache.camel.EndpointInject;
import org.apache.camel.Produce;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.Test;

/** The Java DSL route, started by Camel Main with the application's properties and a mock as results. */
@CamelMainTest(configurationClasses = ExampleConfiguration.class,
               properties = { "example.dsl=java", "example.results=mock:results" })
class ThrottledWorkJavaRouteTest {

    @EndpointInject("mock:results")
    MockEndpoint results;

    @Produce
    ProducerTemplate template;

    @BeanInject(ProxyStats.BEAN)
    ProxyStats stats;

    @Test
    void throttlesEachProxyOnItsOwnAndDeliversEveryUrlOnce() throws Exception {
        // no resource behind it: the route was built by ThrottledWorkRoute, not loaded from YAML
        assertThat(results.getCamelContext().getRoute(ThrottledWorkRoute.ROUTE_ID).getSourceResource()).isNull();
        ThrottleExpectations.sendTwelveAndVerify(template, results, stats);
    }
}
