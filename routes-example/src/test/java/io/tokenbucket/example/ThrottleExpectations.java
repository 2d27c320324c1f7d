package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import io.tokenbucket.camel.TokenBucketConstants;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.component.mock.MockEndpoint;

/**
 * The behaviour both versions of the route must show, written once so the Java and the YAML route are held
 * to exactly the same assertions: 12 URLs over 3 proxies with a bucket of 2 per second per proxy.
 */
final class ThrottleExpectations {

    static final int URLS = 12;

    private ThrottleExpectations() {
    }

    static void sendTwelveAndVerify(ProducerTemplate template, MockEndpoint results, ProxyStats stats)
            throws Exception {
        List<String> urls = IntStream.rangeClosed(1, URLS).mapToObj(i -> "https://example.test/page/" + i).toList();
        results.expectedMessageCount(URLS);
        results.expectedBodiesReceivedInAnyOrder(urls);
        // stamps each arrival, so the elapsed time is measured to the arrival and not to the assertion (in a map:
        // the mock keeps a copy made before this processor runs)
        Map<String, Long> arrivedNanos = new ConcurrentHashMap<>();
        results.whenAnyExchangeReceived(e -> arrivedNanos.put(e.getMessage().getBody(String.class), System.nanoTime()));

        long start = System.nanoTime();
        for (String url : urls) {
            template.sendBody("{{example.queue}}", url);
        }
        // waits for the arrivals (not a sleep: returns as soon as all 12 are in), generous for a slow machine
        MockEndpoint.assertIsSatisfied(results.getCamelContext(), 20, TimeUnit.SECONDS);

        // 12 arrivals with 12 different bodies: every URL arrived, and exactly once
        List<Exchange> arrivals = results.getReceivedExchanges();
        assertThat(arrivals).hasSize(URLS);
        assertThat(arrivals).extracting(e -> e.getMessage().getBody(String.class))
                .containsExactlyInAnyOrderElementsOf(urls);

        // the single seda consumer takes the URLs in order, so the round robin is exact: page i -> p((i-1)%3+1)
        for (Exchange e : arrivals) {
            String body = e.getMessage().getBody(String.class);
            int page = Integer.parseInt(body.substring(body.lastIndexOf('/') + 1));
            assertThat(e.getMessage().getHeader(ProxyStats.PROXY_HEADER)).as("proxy of %s", body)
                    .isEqualTo("p" + ((page - 1) % 3 + 1));
        }

        Map<String, List<Exchange>> byProxy = new LinkedHashMap<>();
        for (Exchange e : arrivals) { // arrival order is kept within each proxy
            byProxy.computeIfAbsent(e.getMessage().getHeader(ProxyStats.PROXY_HEADER, String.class),
                    p -> new ArrayList<>()).add(e);
        }
        assertThat(byProxy).containsOnlyKeys("p1", "p2", "p3");
        for (Map.Entry<String, List<Exchange>> proxy : byProxy.entrySet()) {
            List<Long> waited = proxy.getValue().stream()
                    .map(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class)).toList();
            assertThat(waited).as("waits of %s in arrival order", proxy.getKey()).hasSize(4);
            // a full bucket of 2 lets the first two through at once ...
            assertThat(waited.subList(0, 2)).as("burst of %s", proxy.getKey()).containsOnly(0L);
            // ... then one token per 500 ms: the 3rd and 4th wait, the 4th longer than the 3rd
            assertThat(waited.get(2)).as("3rd of %s", proxy.getKey()).isPositive();
            assertThat(waited.get(3)).as("4th of %s", proxy.getKey()).isGreaterThan(waited.get(2));
            // the 4th needs two refilled tokens: a second after the bucket was first used, which is after start
            long fourth = arrivedNanos.get(proxy.getValue().get(3).getMessage().getBody(String.class));
            assertThat(TimeUnit.NANOSECONDS.toMillis(fourth - start)).as("4th of %s after", proxy.getKey())
                    .isGreaterThanOrEqualTo(900);
        }

        assertThat(stats.counts()).containsExactlyInAnyOrderEntriesOf(Map.of("p1", 4L, "p2", 4L, "p3", 4L));
        assertThat(stats.total()).isEqualTo(URLS);
    }
}
