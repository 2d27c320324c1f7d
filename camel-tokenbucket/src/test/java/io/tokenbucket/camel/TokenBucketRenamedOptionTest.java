package io.tokenbucket.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.main.Main;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A removed option names the one that replaced it: in an endpoint URI and as a Camel Main component property. */
class TokenBucketRenamedOptionTest {

    @ParameterizedTest
    @CsvSource({"tokens, cost", "refillTokens, refillAmount"})
    void inAUri(String old, String successor) throws Exception {
        assertThat(TokenBucketTestSupport.startFailure("tokenbucket:r?" + old + "=3"))
                .hasMessage(old + " is no longer an option: it was renamed " + successor + " (same meaning and values)");
    }

    @Test
    void asACamelMainComponentProperty() {
        Main main = new Main();
        main.configure().withJmxEnabled(false);
        main.configure().addRoutesBuilder(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:a").to("tokenbucket:a");
            }
        });
        main.addInitialProperty("camel.component.tokenbucket.tokens", "3");
        try {
            assertThatThrownBy(main::start).hasStackTraceContaining("tokens is no longer an option: it was renamed cost");
        } finally {
            main.stop();
        }
    }
}
