package io.tokenbucket.example.proxy;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The (proxy, host) pairs' rests when the pool chooses in turn ({@code example.choose=roundrobin}, or
 * {@code example.throttle=false}, where no bucket keeps them): the pool hands a proxy out for a host only once its
 * pair's rest here is over. A penalty rests the pair until
 * {@code now + millis}, or keeps a longer rest already running, as the component's {@code penalize} keeps the
 * longer debt: the pool tells both the same things. This instance's view only, on the pool's nanosecond clock.
 * At most {@value ProxyHealth#MAX_HOSTS} hosts are remembered per proxy, as its {@link ProxyHealth} does, the
 * least recently used forgotten first (their rest ends early); a rest that is over is dropped when the health words
 * are counted, and every proxy's, also of those that left the proxy file, by a sweep every so many penalties
 * ({@value #SWEEP_MIN} or more): the pairs remembered stay about the rests running plus that many. Synchronized:
 * attempts report on many threads.
 */
public final class PoolRests implements ProxyBuckets {

    /** The fewest penalties between two sweeps of the rests that ended. */
    static final int SWEEP_MIN = 1_024;

    private final LongSupplier clock;
    // proxy id -> host -> when the pair's rest ends (nanos)
    private final Map<String, Map<String, Long>> until = new HashMap<>();
    private int sinceSweep;
    private int sweepAfter = SWEEP_MIN;

    /** @param clock nanosecond clock, the pool's ({@code System::nanoTime}) */
    public PoolRests(LongSupplier clock) {
        this.clock = clock;
    }

    @Override
    public synchronized void penalize(String proxyId, String host, long millis) {
        if (proxyId == null || host == null || millis <= 0) {
            return;
        }
        long end = clock.getAsLong() + Math.min(millis, 86_400_000L) * 1_000_000L; // at most a day: no overflow
        until.computeIfAbsent(proxyId, id -> new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
                return size() > ProxyHealth.MAX_HOSTS;
            }
        }).merge(host, end, (old, next) -> next - old > 0 ? next : old);
        if (++sinceSweep >= sweepAfter) {
            sweep();
        }
    }

    /**
     * Forgets the rests that ended, of every proxy: those of a proxy that left the file are read by nobody any more.
     * Run after as many penalties as pairs were left by the last sweep (at least {@value #SWEEP_MIN}), so it costs
     * O(1) a penalty and the ended rests kept stay at most about as many as the running ones plus that minimum.
     */
    private void sweep() {
        long now = clock.getAsLong();
        int left = 0;
        for (var proxies = until.values().iterator(); proxies.hasNext(); ) {
            Map<String, Long> hosts = proxies.next();
            hosts.values().removeIf(end -> end - now <= 0);
            if (hosts.isEmpty()) {
                proxies.remove();
            }
            left += hosts.size();
        }
        sinceSweep = 0;
        sweepAfter = Math.max(SWEEP_MIN, left);
    }

    @Override
    public synchronized long restingNanos(String proxyId, String host) {
        Map<String, Long> hosts = until.get(proxyId);
        Long end = hosts == null || host == null ? null : hosts.get(host);
        return end == null ? 0 : Math.max(0, end - clock.getAsLong());
    }

    /** The (proxy, host) pairs remembered now, their rests running or ended. */
    synchronized int pairs() {
        return until.values().stream().mapToInt(Map::size).sum();
    }

    @Override
    public synchronized int restingHosts(String proxyId) {
        Map<String, Long> hosts = until.get(proxyId);
        if (hosts == null) {
            return 0;
        }
        long now = clock.getAsLong();
        hosts.values().removeIf(end -> end - now <= 0);
        if (hosts.isEmpty()) {
            until.remove(proxyId);
        }
        return hosts.size();
    }
}
