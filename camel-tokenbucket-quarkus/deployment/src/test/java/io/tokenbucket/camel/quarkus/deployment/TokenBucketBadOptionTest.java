package io.tokenbucket.camel.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.quarkus.test.QuarkusUnitTest;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A bad {@code camel.component.tokenbucket.*} value in application.properties fails the start, naming the option. */
class TokenBucketBadOptionTest {

    @RegisterExtension
    static final QuarkusUnitTest APP = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(Routes.class))
            .overrideConfigKey("camel.component.tokenbucket.capacity", "0")
            .assertException(failure -> assertThat(failure).hasStackTraceContaining("capacity")
                    .hasStackTraceContaining("was 0"));

    @Test
    void theApplicationDoesNotStart() {
        fail("the application started with capacity=0");
    }

    /** One route with a tokenbucket endpoint, which takes the component's options. */
    public static class Routes extends RouteBuilder {
        @Override
        public void configure() {
            from("direct:in").to("tokenbucket:x");
        }
    }
}
