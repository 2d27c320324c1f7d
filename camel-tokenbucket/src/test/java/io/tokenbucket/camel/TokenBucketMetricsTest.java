package io.tokenbucket.camel;

import io.tokenbucket.camel.observe.TokenBucketMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Micrometer meters, seen where an operator sees them: a Prometheus scrape. */
class TokenBucketMetricsTest extends TokenBucketTestSupport {

    private final PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    @Override
    protected RoutesBuilder createRouteBuilder() {
        // camel-micrometer's name for its registry: the component finds it there
        context.getRegistry().bind(TokenBucketMetrics.CAMEL_REGISTRY_NAME, prometheus);
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:metered").to("tokenbucket:metered?capacity=2&refillAmount=2&refillPeriod=1s"
                        + "&maxWait=600ms&metricsPerKey=true&metricsMaxKeys=2");
                from("direct:adaptive").to("tokenbucket:adaptive?capacity=2&adaptive=true&adaptiveHold=1h");
            }
        };
    }

    @Test
    void theRegistryIsFoundUnderCamelMicrometersName() {
        assertThat(TokenBucketMetrics.CAMEL_REGISTRY_NAME)
                .isEqualTo(org.apache.camel.component.micrometer.MicrometerConstants.METRICS_REGISTRY_NAME);
    }

    private void send(String key) {
        template.request("direct:metered", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, key));
    }

    @Test
    void countersTimerAndGaugeReachAPrometheusScrape() throws Exception {
        send("a");
        send("a");
        // sent together: the first waits 500 ms, the second would wait 1000 ms, over maxWait (a stall of under
        // 400 ms between the sends above and these changes nothing)
        Sent two = sendAsync("direct:metered", 2, java.util.Map.of(TokenBucketConstants.KEY, "a"));
        assertThat(two.done().await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        send("b");
        send("c"); // a third key: over metricsMaxKeys, counted only in the totals
        String scrape = prometheus.scrape();
        // the outcomes add up: 6 exchanges, 4 at once, 1 after a wait, 1 rejected
        assertThat(scrape)
                .contains("tokenbucket_exchanges_total{endpoint=\"metered\",outcome=\"immediate\"} 4.0")
                .contains("tokenbucket_exchanges_total{endpoint=\"metered\",outcome=\"delayed\"} 1.0")
                .contains("tokenbucket_exchanges_total{endpoint=\"metered\",outcome=\"rejected\"} 1.0")
                .contains("tokenbucket_exchanges_total{endpoint=\"metered\",outcome=\"store_error\"} 0.0")
                .contains("tokenbucket_exchanges_total{endpoint=\"metered\",outcome=\"abandoned\"} 0.0")
                .contains("tokenbucket_store_fallbacks_total{endpoint=\"metered\"} 0.0")
                .contains("tokenbucket_wait_seconds_count{endpoint=\"metered\"} 1")
                .contains("tokenbucket_local_keys{endpoint=\"metered\"} 3.0")
                .contains("tokenbucket_key_exchanges_total{endpoint=\"metered\",key=\"a\",outcome=\"admitted\"} 3.0")
                .contains("tokenbucket_key_exchanges_total{endpoint=\"metered\",key=\"a\",outcome=\"rejected\"} 1.0")
                .contains("key=\"b\"")
                .doesNotContain("key=\"c\"");
        // one meaning of admitted: JMX and the dev console count immediate plus delayed
        TokenBucketEndpoint metered = context.getEndpoints().stream()
                .filter(e -> e instanceof TokenBucketEndpoint t && t.getName().equals("metered"))
                .map(TokenBucketEndpoint.class::cast).findFirst().orElseThrow();
        assertThat(metered.getAdmittedCount()).isEqualTo(5);
        assertThat(metered.getDelayedCount()).isEqualTo(1);
    }

    @Test
    void theLocalKeysGaugeStillReadsAfterAGarbageCollection() {
        send("a");
        // the gauge reads a function that nothing but the meter holds: a weakly held one would read NaN once
        // collected
        System.gc();
        assertThat(prometheus.scrape()).containsPattern("tokenbucket_local_keys\\{endpoint=\"metered\"} [0-9]")
                .doesNotContain("tokenbucket_local_keys{endpoint=\"metered\"} NaN");
    }

    @Test
    void throttledSignalsAndTheLowestRateAreOneMeterEachWhateverTheKeys() {
        for (String key : new String[] {"h1", "h1", "h2"}) {
            template.request("direct:adaptive", e -> {
                e.getMessage().setHeader(TokenBucketConstants.KEY, key);
                e.getMessage().setHeader(TokenBucketConstants.OPERATION, "throttled");
            });
        }
        String scrape = prometheus.scrape();
        assertThat(scrape)
                .contains("tokenbucket_rate_signals_total{endpoint=\"adaptive\",outcome=\"cut\"} 2.0")
                .contains("tokenbucket_rate_signals_total{endpoint=\"adaptive\",outcome=\"ignored\"} 1.0")
                .contains("tokenbucket_rate_lowest{endpoint=\"adaptive\"} 0.5")
                .doesNotContain("key=\"h1\"");
    }
}
