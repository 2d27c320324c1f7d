package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.springboot.TokenBucketComponentAutoConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.Endpoint;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.test.spring.junit5.CamelSpringBootTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** The test application with application.yaml: capacity 7, refill-period 2s, mode reject. */
@CamelSpringBootTest
@SpringBootTest(classes = TokenBucketTestApplication.class)
class TokenBucketStarterApplicationTest {

    @Autowired
    CamelContext camelContext;

    @Autowired
    ProducerTemplate producer;

    @Autowired
    TokenBucketComponentAutoConfiguration autoConfiguration;

    @Test
    void applicationYamlConfiguresTheRoutesEndpoint() {
        assertThat(autoConfiguration).isNotNull();
        TokenBucketEndpoint endpoint = routeEndpoint("tokenbucket:x");
        TokenBucketConfiguration configuration = endpoint.getConfiguration();
        assertThat(configuration.getCapacity()).isEqualTo(7);
        assertThat(configuration.getRefillPeriod()).isEqualTo(2000);
        assertThat(configuration.getMode()).isEqualTo(TokenBucketMode.reject);
        // the options application.yaml leaves alone keep the component's defaults
        assertThat(configuration.getRefillAmount()).isEqualTo(7);
        assertThat(configuration.getCost()).isEqualTo(1);
        assertThat(configuration.getKeyHeader()).isEqualTo("CamelTokenBucketKey");
        assertThat(configuration.getStoreTimeout()).isEqualTo(1000);
        assertThat(configuration.getMaxWait()).isNull();
        assertThat(configuration.getRedisUri()).isNull();
        assertThat(camelContext.getComponent("tokenbucket", TokenBucketComponent.class).getConfiguration()
                .getCapacity()).isEqualTo(7);
    }

    @Test
    void theEighthExchangeIsRejected() {
        for (int i = 1; i <= 7; i++) {
            producer.sendBody("direct:a", "exchange " + i);
        }
        assertThatThrownBy(() -> producer.sendBody("direct:a", "exchange 8"))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);
    }

    @Test
    void aUriOptionWinsOverTheComponentDefault() {
        TokenBucketConfiguration configuration = routeEndpoint("tokenbucket:y?capacity=3").getConfiguration();
        assertThat(configuration.getCapacity()).isEqualTo(3);
        assertThat(configuration.getMode()).isEqualTo(TokenBucketMode.reject);
    }

    /** The endpoint the route created at startup (hasEndpoint creates none). */
    private TokenBucketEndpoint routeEndpoint(String uri) {
        assertThat(camelContext.getRouteController().getRouteStatus("a").isStarted()).isTrue();
        Endpoint endpoint = camelContext.hasEndpoint(uri);
        assertThat(endpoint).as(uri).isInstanceOf(TokenBucketEndpoint.class);
        return (TokenBucketEndpoint) endpoint;
    }
}
