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
 * are counted. Synchronized: attempts report on many threads.
 */
public final class PoolRests implements ProxyBuckets {

    private final LongSupplier clock;
    // proxy id -> host -> when the pair's rest ends (nanos)
    private final Map<String, Map<String, Long>> until = new HashMap<>();

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
    }

    @Override
    public synchronized long restingNanos(String proxyId, String host) {
        Map<String, Long> hosts = until.get(proxyId);
        Long end = hosts == null || host == null ? null : hosts.get(host);
        return end == null ? 0 : Math.max(0, end - clock.getAsLong());
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
