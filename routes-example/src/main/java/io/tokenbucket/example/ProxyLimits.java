package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketLimitResolver;

/**
 * Gives each proxy's bucket the proxy's own limit ({@code limit=N/period} in the proxy file), or null for the
 * endpoint's default ({@code example.capacity} per {@code example.refillPeriod}). Bound as {@value #BEAN} and
 * named by the throttle URI ({@code limitResolver=#proxyLimits}), so one static endpoint serves every proxy:
 * what the freest choice needs, since it weighs all candidates in one call. A changed limit in the proxy file
 * applies to the proxy's next exchange.
 *
 * <p>A (proxy, host) pair's bucket ({@link ScraperRoute#PAIRS}, key {@code "<proxy id> <host key>"}) gets its
 * proxy's rate with twice its burst: a pair's requests are some of its proxy's, which the proxy's bucket has
 * admitted already, so the pair's bucket holds nothing back by itself (the extra burst absorbs the few
 * milliseconds between the proxy's grant and the pair's) and only a penalty (and, once the component has it,
 * the adaptive rate) makes it wait.
 */
public class ProxyLimits implements TokenBucketLimitResolver {

    /** The registry name the throttle URI refers to. */
    public static final String BEAN = "proxyLimits";

    private final ProxyPool pool;
    private final long defaultCapacity;
    private final long defaultPeriodMs;

    /**
     * @param pool            where the proxies' limits come from
     * @param defaultCapacity {@code example.capacity}: the bucket of a proxy without {@code limit=}
     * @param defaultPeriodMs {@code example.refillPeriod} in milliseconds
     */
    public ProxyLimits(ProxyPool pool, long defaultCapacity, long defaultPeriodMs) {
        this.pool = pool;
        this.defaultCapacity = defaultCapacity;
        this.defaultPeriodMs = defaultPeriodMs;
    }

    @Override
    public String limitsFor(String key) {
        int space = key.indexOf(' ');
        ProxyConfig config = pool.config(space < 0 ? key : key.substring(0, space));
        boolean own = config != null && config.capacity() >= 1;
        if (space < 0) {
            return own ? config.capacity() + "/" + config.refillPeriodMs() + "ms" : null;
        }
        long capacity = own ? config.capacity() : defaultCapacity;
        long periodMs = own ? config.refillPeriodMs() : defaultPeriodMs;
        long burst = capacity > Long.MAX_VALUE / 2 ? capacity : capacity * 2;
        return capacity + "/" + periodMs + "ms:" + burst;
    }
}
