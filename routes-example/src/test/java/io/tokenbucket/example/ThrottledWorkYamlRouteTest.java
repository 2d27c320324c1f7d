package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.camel.BeanInject;
import org.apache.camel.EndpointInject;
import org.apache.camel.Produce;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.Route;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.Test;

/** The YAML DSL route, loaded by Camel Main through camel-yaml-dsl; held to the same expectations. */
@CamelMainTest(configurationClasses = ExampleConfiguration.class,
               properties = { "example.dsl=yaml", "example.results=mock:results" })
class ThrottledWorkYamlRouteTest {

    @EndpointInject("mock:results")
    MockEndpoint results;

    @Produce
    ProducerTemplate template;

    @BeanInject(ProxyStats.BEAN)
    ProxyStats stats;

    @Test
    void throttlesEachProxyOnItsOwnAndDeliversEveryUrlOnce() throws Exception {
        Route route = results.getCamelContext().getRoute(ThrottledWorkRoute.ROUTE_ID);
        assertThat(results.getCamelContext().getRoutes()).hasSize(1); // the Java route was left out
        assertThat(route.getSourceResource()).isNotNull();
        assertThat(route.getSourceResource().getLocation()).isEqualTo(ExampleConfiguration.YAML_ROUTE);
        ThrottleExpectations.sendTwelveAndVerify(template, results, stats);
    }
}
