package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.Properties;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** The DSL choice; the happy paths are covered by the route tests. */
class ExampleConfigurationTest {

    @Test
    void anUnknownDslIsRejectedByName() throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            Properties properties = new Properties();
            properties.setProperty("example.proxies", "p1");
            properties.setProperty("example.dsl", "xml");
            context.getPropertiesComponent().setInitialProperties(properties);
            assertThatIllegalArgumentException().isThrownBy(() -> new ExampleConfiguration().configure(context))
                    .withMessage("example.dsl must be java or yaml, was 'xml'");
        }
    }
}
