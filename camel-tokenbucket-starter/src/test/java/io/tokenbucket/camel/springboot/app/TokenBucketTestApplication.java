package io.tokenbucket.camel.springboot.app;

import org.apache.camel.builder.RouteBuilder;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** A small Spring Boot application using the starter: its application.yaml configures the component. */
@SpringBootApplication
public class TokenBucketTestApplication {

    @Bean
    RouteBuilder routes() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:a").routeId("a").to("tokenbucket:x");
                // a URI option wins over the component's default from application.yaml
                from("direct:b").routeId("b").to("tokenbucket:y?capacity=3");
                // exchanges that wait (one token an hour), failures counted: TokenBucketStarterStopTest
                from("direct:slow").routeId("slow").errorHandler(deadLetterChannel("mock:failed"))
                        .to("tokenbucket:slow?mode=delay&capacity=1&refillPeriod=1h&maxWaiting=10000")
                        .to("mock:passed");
            }
        };
    }
}
