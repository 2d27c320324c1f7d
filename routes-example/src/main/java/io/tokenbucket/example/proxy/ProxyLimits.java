package io.tokenbucket.example.proxy;

import io.tokenbucket.camel.TokenBucketLimitResolver;

/**
 * The keys of the throttle's three kinds of bucket and their limits: the one place that knows both. Bound as
 * {@value #BEAN} and named by the throttle URI ({@code limitResolver=#proxyLimits}), so one static endpoint
 * ({@code ScraperRoute.THROTTLE}) serves every proxy, pair and host: what one atomic step over all of them needs.
 * A changed limit in the proxy file applies to the proxy's next exchange.
 *
 * <ul>
 * <li>a proxy: its id ({@link ProxyConfig#id()}, which holds no whitespace), with its own limit
 *     ({@code limit=N/period} in the proxy file), or null for the endpoint's default ({@code example.proxyLimit});</li>
 * <li>a (proxy, host) pair: {@link #pairKey} {@code "pair <proxy id> <host key>"}, with {@code example.pairLimit}
 *     when it is set: the most one proxy's address may send to one host, the ceiling of the pair's adaptive rate
 *     ({@code example.adaptive}, for these keys only: {@link #ADAPTIVE_KEYS}), which finds the host's real limit
 *     below it. Unset, it gets its proxy's rate with twice its burst: a pair's requests are some of its proxy's,
 *     charged in the same step, so the pair's bucket holds nothing back by itself and only a penalty or a cut of
 *     its adaptive rate makes it wait;</li>
 * <li>a target host: {@link #hostKey} {@code "host <host key>"}, with {@code example.hostLimit}.</li>
 * </ul>
 * A proxy id has no space and a {@code HostKey} none either, so the three kinds can never share a key, whatever
 * the ids are ({@code host}, {@code pair} and {@code a,b} included), and the glob {@code pair *} matches the pairs
 * and nothing else.
 */
public class ProxyLimits implements TokenBucketLimitResolver.Text {

    /** The registry name the throttle URI refers to. */
    public static final String BEAN = "proxyLimits";

    /** The start of every {@link #hostKey}. */
    static final String HOST_PREFIX = "host ";

    /** The start of every {@link #pairKey}. */
    static final String PAIR_PREFIX = "pair ";

    /**
     * The throttle's {@code adaptiveKeys} with {@code example.adaptive}: the pairs' keys, and no proxy's or host's
     * (a 429 is one host's word about one proxy's address).
     */
    public static final String ADAPTIVE_KEYS = PAIR_PREFIX + "*";

    private final ProxyPool pool;
    private final long defaultCapacity;
    private final long defaultPeriodMs;
    private final String pairLimit;
    /** Every host's limits: example.hostLimit, with example.hostInFlight; null when neither is set. */
    private final String hostLimit;

    /**
     * @param pool            where the proxies' limits come from
     * @param defaultCapacity the N of {@code example.proxyLimit}: the bucket of a proxy without {@code limit=}
     * @param defaultPeriodMs the period of {@code example.proxyLimit}, in milliseconds
     * @param pairLimit       {@code example.pairLimit}: every pair's limits in the component's {@code limits}
     *                        syntax ({@code 12/1s:2}); empty: its proxy's rate with twice its burst
     * @param hostLimit       {@code example.hostLimit}: every host's limits ({@link #hostKey}), in that syntax
     * @param hostInFlight    {@code example.hostInFlight}: the most requests to one host at once, across every
     *                        proxy (and, with Redis, every instance); 0 for none
     */
    public ProxyLimits(ProxyPool pool, long defaultCapacity, long defaultPeriodMs, String pairLimit,
                       String hostLimit, long hostInFlight) {
        this.hostLimit = hostLimits(hostLimit, hostInFlight);
        this.pool = pool;
        this.defaultCapacity = defaultCapacity;
        this.defaultPeriodMs = defaultPeriodMs;
        this.pairLimit = pairLimit == null ? "" : pairLimit.strip();
    }

    /**
     * Every host's limits in the component's syntax: {@code example.hostLimit} and, with {@code example.hostInFlight},
     * its {@code N in flight} item (alone when hostLimit is unset); null when neither is set.
     */
    public static String hostLimits(String hostLimit, long hostInFlight) {
        String rate = hostLimit == null ? "" : hostLimit.strip();
        if (hostInFlight <= 0) {
            return rate.isEmpty() ? null : rate;
        }
        return (rate.isEmpty() ? "" : rate + ",") + hostInFlight + " in flight";
    }

    /**
     * The key of a target host's bucket, an all-of key of every acquire of the throttle ({@code ProxyChooser}):
     * {@code "host <host key>"}.
     */
    public static String hostKey(String host) {
        return HOST_PREFIX + host;
    }

    /**
     * The key of a (proxy, host) pair's bucket, charged with its proxy's in the proxy's candidate group
     * ({@code ProxyChooser}) and what a 429 penalizes ({@link BucketSteps}):
     * {@code "pair <proxy id> <host key>"}.
     */
    public static String pairKey(String proxyId, String host) {
        return PAIR_PREFIX + proxyId + " " + host;
    }

    @Override
    public String limitsFor(String key) {
        if (key.startsWith(HOST_PREFIX)) {
            return hostLimit;
        }
        boolean pair = key.startsWith(PAIR_PREFIX);
        // a pair's proxy id runs to the space before the host key; a key of no kind (none of the route's) is
        // taken as a proxy's: unknown, the endpoint's default
        int space = pair ? key.indexOf(' ', PAIR_PREFIX.length()) : -1;
        ProxyConfig config = pool.config(pair ? key.substring(PAIR_PREFIX.length(), space < 0 ? key.length() : space)
                : key);
        boolean own = config != null && config.capacity() >= 1;
        if (!pair) {
            long inFlight = config == null ? 0 : config.inFlight();
            if (inFlight == 0) {
                return own ? config.capacity() + "/" + config.refillPeriodMs() + "ms" : null;
            }
            return (own ? config.capacity() + "/" + config.refillPeriodMs() : defaultCapacity + "/" + defaultPeriodMs)
                    + "ms," + inFlight + " in flight";
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
