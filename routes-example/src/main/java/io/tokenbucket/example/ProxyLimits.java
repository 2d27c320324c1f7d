package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketLimitResolver;

/**
 * Gives each proxy's bucket the proxy's own limit ({@code limit=N/period} in the proxy file), or null for the
 * endpoint's default ({@code example.capacity} per {@code example.refillPeriod}). Bound as {@value #BEAN} and
 * named by the throttle URI ({@code limitResolver=#proxyLimits}), so one static endpoint serves every proxy:
 * what the freest choice needs, since it weighs all candidates in one call. A changed limit in the proxy file
 * applies to the proxy's next exchange.
 */
public class ProxyLimits implements TokenBucketLimitResolver {

    /** The registry name the throttle URI refers to. */
    public static final String BEAN = "proxyLimits";

    private final ProxyPool pool;

    /** @param pool where the proxies' limits come from */
    public ProxyLimits(ProxyPool pool) {
        this.pool = pool;
    }

    @Override
    public String limitsFor(String proxyId) {
        ProxyConfig config = pool.config(proxyId);
        if (config == null || config.capacity() < 1) {
            return null;
        }
        return config.capacity() + "/" + config.refillPeriodMs() + "ms";
    }
}
