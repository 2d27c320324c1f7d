package io.tokenbucket.example.fetch;

import java.util.Locale;

import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.http.base.HttpHeaderFilterStrategy;

/**
 * Which message headers camel-http sends to the target as HTTP headers: camel-http's own choice (no {@code Camel*}
 * header, no hop-by-hop header), and never the route's bookkeeping header {@value ProxyStats#PROXY_HEADER}: the
 * proxy's id (by default its {@code host:port}) is the scraper's business, not the target's. Set on camel-http's
 * component, so every fetch endpoint uses it.
 */
public class ScrapeHeaders extends HttpHeaderFilterStrategy {

    @Override
    protected void initialize() {
        super.initialize();
        getOutFilter().add(ProxyStats.PROXY_HEADER.toLowerCase(Locale.ROOT));
    }
}
