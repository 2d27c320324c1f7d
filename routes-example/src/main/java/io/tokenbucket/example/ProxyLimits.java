package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketLimitResolver;

/**
 * Gives each proxy's bucket the proxy's own limit ({@code limit=N/period} in the proxy file), or null for the
 * endpoint's default ({@code example.capacity} per {@code example.refillPeriod}). Bound as {@value #BEAN} and
 * named by the throttle URI ({@code limitResolver=#proxyLimits}), so one static endpoint serves every proxy:
 * what the freest choice needs, since it weighs all candidates in one call. A changed limit in the proxy file
 * applies to the proxy's next exchange.
 *
 * <p>A (proxy, host) pair's bucket ({@link ScraperRoute#PAIRS}, key {@code "<proxy id> <host key>"}) gets
 * {@code example.pairLimit} when it is set: the most one proxy's address may send to one host, the ceiling of the
 * pair's adaptive rate ({@code example.adaptive}), which finds the host's real limit below it. Unset, it gets its
 * proxy's rate with twice its burst: a pair's requests are some of its proxy's, which the proxy's bucket has
 * admitted already, so the pair's bucket holds nothing back by itself (the extra burst absorbs the few
 * milliseconds between the proxy's grant and the pair's) and only a penalty or a cut of its adaptive rate makes
 * it wait.
 *
 * <p>A target host's bucket ({@link #hostKey}, {@code "host <host key>"}, charged with the proxy's in one atomic
 * acquire) gets {@code example.hostLimit}.
 */
public class ProxyLimits implements TokenBucketLimitResolver {

    /** The registry name the throttle URI refers to. */
    public static final String BEAN = "proxyLimits";

    /** The start of every {@link #hostKey}; {@code host} is the one proxy id refused. */
    static final String HOST_PREFIX = ProxyConfig.RESERVED_ID + " ";

    private final ProxyPool pool;
    private final long defaultCapacity;
    private final long defaultPeriodMs;
    private final String pairLimit;
    private final String hostLimit;

    /**
     * Pairs at their proxy's rate.
     *
     * @param pool            where the proxies' limits come from
     * @param defaultCapacity {@code example.capacity}: the bucket of a proxy without {@code limit=}
     * @param defaultPeriodMs {@code example.refillPeriod} in milliseconds
     */
    public ProxyLimits(ProxyPool pool, long defaultCapacity, long defaultPeriodMs) {
        this(pool, defaultCapacity, defaultPeriodMs, "");
    }

    /**
     * @param pool            where the proxies' limits come from
     * @param defaultCapacity {@code example.capacity}: the bucket of a proxy without {@code limit=}
     * @param defaultPeriodMs {@code example.refillPeriod} in milliseconds
     * @param pairLimit       {@code example.pairLimit}: every pair's limits in the component's {@code limits}
     *                        syntax ({@code 12/1s:2}); empty: its proxy's rate with twice its burst
     */
    public ProxyLimits(ProxyPool pool, long defaultCapacity, long defaultPeriodMs, String pairLimit) {
        this(pool, defaultCapacity, defaultPeriodMs, pairLimit, "");
    }

    /**
     * @param pool            where the proxies' limits come from
     * @param defaultCapacity {@code example.capacity}: the bucket of a proxy without {@code limit=}
     * @param defaultPeriodMs {@code example.refillPeriod} in milliseconds
     * @param pairLimit       {@code example.pairLimit}: every pair's limits in the component's {@code limits}
     *                        syntax ({@code 12/1s:2}); empty: its proxy's rate with twice its burst
     * @param hostLimit       {@code example.hostLimit}: every host's limits ({@link #hostKey}), in that syntax
     */
    public ProxyLimits(ProxyPool pool, long defaultCapacity, long defaultPeriodMs, String pairLimit,
                       String hostLimit) {
        this.hostLimit = hostLimit == null ? "" : hostLimit.strip();
        this.pool = pool;
        this.defaultCapacity = defaultCapacity;
        this.defaultPeriodMs = defaultPeriodMs;
        this.pairLimit = pairLimit == null ? "" : pairLimit.strip();
    }

    /**
     * The key of a target host's bucket on the proxies' endpoint, an all-of key of every acquire there
     * ({@link ProxyChooser}): {@code "host <host key>"}. A proxy id has no space, and {@code host} is no proxy id
     * ({@link ProxyConfig} refuses it), so it is neither a proxy's key nor a pair's.
     */
    public static String hostKey(String host) {
        return HOST_PREFIX + host;
    }

    @Override
    public String limitsFor(String key) {
        if (key.startsWith(HOST_PREFIX)) {
            return hostLimit.isEmpty() ? null : hostLimit;
        }
        int space = key.indexOf(' ');
        ProxyConfig config = pool.config(space < 0 ? key : key.substring(0, space));
        boolean own = config != null && config.capacity() >= 1;
        if (space < 0) {
            return own ? config.capacity() + "/" + config.refillPeriodMs() + "ms" : null;
        }
        if (!pairLimit.isEmpty()) {
            return pairLimit;
        }
        long capacity = own ? config.capacity() : defaultCapacity;
        long periodMs = own ? config.refillPeriodMs() : defaultPeriodMs;
        long burst = capacity > Long.MAX_VALUE / 2 ? capacity : capacity * 2;
        return capacity + "/" + periodMs + "ms:" + burst;
    }
}
