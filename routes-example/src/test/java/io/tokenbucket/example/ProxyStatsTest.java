package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import io.tokenbucket.camel.TokenBucketConstants;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The per-proxy counting and the summary table. */
class ProxyStatsTest {

    private final CamelContext context = new DefaultCamelContext();

    @AfterEach
    void close() throws Exception {
        context.close();
    }

    @Test
    void countsPerProxyAndAveragesTheWaits() {
        ProxyStats stats = new ProxyStats();
        stats.record(passed("p2", 0));
        stats.record(passed("p1", 0));
        stats.record(passed("p1", 500));
        stats.record(passed("p1", 1000));

        assertThat(stats.total()).isEqualTo(4);
        assertThat(stats.counts()).containsExactly(Map.entry("p1", 3L), Map.entry("p2", 1L));
        String[] lines = stats.summary().split("\\R");
        assertThat(lines[0]).contains("proxy", "count", "rate/s", "mean wait ms");
        assertThat(lines[1].split("\\s+")).startsWith("p1", "3").endsWith("500"); // (0 + 500 + 1000) / 3
        assertThat(lines[2].split("\\s+")).startsWith("p2", "1").endsWith("0");
        assertThat(lines[3].split("\\s+")).startsWith("all", "4").endsWith("375");
        assertThat(lines[4]).startsWith("4 passed in ");
    }

    @Test
    void anEmptyTableStillRenders() {
        assertThat(new ProxyStats().summary()).contains("all", "0 passed in 0.00 s");
    }

    private Exchange passed(String proxy, long waited) {
        Exchange exchange = new DefaultExchange(context);
        exchange.getMessage().setHeader(ProxyStats.PROXY_HEADER, proxy);
        exchange.getMessage().setHeader(TokenBucketConstants.WAITED, waited);
        return exchange;
    }
}
