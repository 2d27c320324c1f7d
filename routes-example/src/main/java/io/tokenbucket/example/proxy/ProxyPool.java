package io.tokenbucket.example.proxy;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxies the URLs are spread over, with their health. Bound in the registry as {@value #BEAN}.
 *
 * <p>{@link #choose} hands out the available proxies in round robin, preferring one the URL has not tried
 * yet; {@link #candidates} lists them all for {@code tokenbucket:} to take the freest. A proxy is unavailable
 * while it is unhealthy (cooldown) and, when the pool keeps the pairs' rests itself ({@link PoolRests}: round
 * robin, with or without the throttle), for one host while that host rests it (a 429: {@link #penalize}). With the
 * freest choice a pair's rest is its bucket's alone ({@link ProxyBuckets}): the pool then offers a resting pair's
 * proxy for the host like any other, and the throttle passes it by for a free one. The list comes from a
 * {@link ProxySource}; {@link #refresh()} re-reads it when it changed, keeping the health of the proxies that
 * stay. Time is a nanosecond clock given to the constructor, so the tests need no sleeps.
 */
public class ProxyPool {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyPool";

    private static final Logger LOG = LoggerFactory.getLogger(ProxyPool.class);

    private final ProxySource source;
    private final int failuresToUnhealthy;
    private final long cooldownNanos;
    private final ProxyBuckets buckets;
    private final LongSupplier clock;
    private final RestBackoff.Policy restPolicy;
    private final AtomicLong turn = new AtomicLong();
    private volatile Map<String, Entry> entries = Map.of();
    private volatile List<String> orderedIds = List.of();
    private final List<Consumer<List<ProxyConfig>>> installListeners = new CopyOnWriteArrayList<>();

    /**
     * @param source              where the proxy list comes from
     * @param failuresToUnhealthy consecutive failures that make a proxy unhealthy, at least 1
     * @param cooldownMillis      how long an unhealthy proxy is left alone before it is tried again
     * @param buckets             what keeps the pairs' rests, told about penalties and consulted for the rests it
     *                            keeps ({@link PoolRests} in round robin, {@link ProxyBuckets#NONE} with the
     *                            freest choice)
     * @param clock               nanosecond clock ({@code System::nanoTime})
     */
    public ProxyPool(ProxySource source, int failuresToUnhealthy, long cooldownMillis, ProxyBuckets buckets,
                     LongSupplier clock) {
        this(source, failuresToUnhealthy, cooldownMillis, buckets, clock, RestBackoff.Policy.defaults());
    }

    /**
     * @param source              where the proxy list comes from
     * @param failuresToUnhealthy consecutive failures that make a proxy unhealthy, at least 1
     * @param cooldownMillis      how long an unhealthy proxy is left alone before it is tried again
     * @param buckets             what keeps the pairs' rests ({@link #ProxyPool(ProxySource, int, long, ProxyBuckets,
     *                            LongSupplier)})
     * @param clock               nanosecond clock ({@code System::nanoTime})
     * @param restPolicy          how a (proxy, host) pair's rests grow after repeated 429s
     */
    public ProxyPool(ProxySource source, int failuresToUnhealthy, long cooldownMillis, ProxyBuckets buckets,
              LongSupplier clock, RestBackoff.Policy restPolicy) {
        this.restPolicy = restPolicy;
        if (failuresToUnhealthy < 1) {
            throw new IllegalArgumentException("example.failuresToUnhealthy must be at least 1, was "
                    + failuresToUnhealthy);
        }
        this.source = source;
        this.failuresToUnhealthy = failuresToUnhealthy;
        this.cooldownNanos = TimeUnit.MILLISECONDS.toNanos(cooldownMillis);
        this.buckets = buckets;
        this.clock = clock;
        install(source.read());
    }

    /** Re-reads the proxy list if its source changed; a list that fails to parse is logged and ignored. */
    public void refresh() {
        if (!source.changed()) {
            return;
        }
        try {
            install(source.read());
        } catch (RuntimeException e) {
            LOG.warn("Proxy list {} not reloaded, keeping the current one: {}", source, e.getMessage());
            return;
        }
        List<ProxyConfig> installed = configs();
        installListeners.forEach(listener -> listener.accept(installed));
    }

    /**
     * Calls {@code listener} with the proxies now, and again with the whole list each time a changed list is
     * installed (on the thread that refreshed). It may be called twice with the same list.
     */
    public void onInstall(Consumer<List<ProxyConfig>> listener) {
        installListeners.add(listener);
        listener.accept(configs());
    }

    /** The proxies' configs, in turn order. */
    public List<ProxyConfig> configs() {
        Map<String, Entry> current = entries;
        return orderedIds.stream().map(current::get).filter(java.util.Objects::nonNull).map(Entry::config).toList();
    }

    /**
     * Installs the list. A proxy that left keeps its bucket: other instances may still use it, turns booked on it
     * may still be in flight, and an idle bucket expires by itself ({@link ProxyBuckets}).
     */
    private synchronized void install(List<ProxyConfig> configs) {
        Map<String, Entry> old = entries;
        Map<String, Entry> next = new LinkedHashMap<>();
        for (ProxyConfig config : configs) {
            if (next.containsKey(config.id())) {
                // a twin would share its bucket and silently get two turns per round
                throw new IllegalArgumentException("Proxy id " + config.id() + " appears twice in " + source);
            }
            Entry kept = old.get(config.id());
            ProxyHealth health = kept != null && kept.config.equals(config) ? kept.health
                    : new ProxyHealth(failuresToUnhealthy, cooldownNanos, restPolicy);
            next.put(config.id(), new Entry(config, health));
        }
        entries = Map.copyOf(next);
        orderedIds = List.copyOf(next.keySet());
        if (!old.isEmpty() || !next.isEmpty()) {
            LOG.info("Proxies from {}: {}", source, next.values().stream().map(e -> e.config).toList());
        }
    }

    /**
     * The next available proxy in round robin, preferring one not in {@code tried}; null when none is
     * available now (see {@link #millisUntilAvailable(String)}).
     */
    public ProxyConfig choose(Collection<String> tried) {
        return choose(tried, null);
    }

    /**
     * The next proxy available for {@code host} (null: any host) in round robin, preferring one not in
     * {@code tried}; null when none is available now (see {@link #millisUntilAvailable(String)}).
     */
    public ProxyConfig choose(Collection<String> tried, String host) {
        List<Entry> found = scan(tried, host);
        return found.isEmpty() ? null : found.get(0).config;
    }

    /**
     * The ids of the proxies available now that are not in {@code tried} (all available ones when every one
     * was tried: the same proxy again beats waiting), starting at the next turn so that proxies equally free
     * take turns; empty when none is available. {@code tokenbucket:} takes the freest of them
     * (header {@code CamelTokenBucketCandidates}).
     */
    public List<String> candidates(Collection<String> tried) {
        return candidates(tried, null);
    }

    /**
     * As {@link #candidates(Collection)}, of the proxies available for {@code host} (null: any host): a proxy
     * whose pair with that host rests in the pool's own rests ({@link PoolRests}) is no candidate for it, and still
     * one for every other host.
     */
    public List<String> candidates(Collection<String> tried, String host) {
        return scan(tried, host).stream().map(e -> e.config.id()).toList();
    }

    /**
     * The one scan behind {@link #choose} and {@link #candidates}: the entries available for {@code host} now,
     * starting at the next turn, those not in {@code tried} only unless every available one was tried (the same
     * proxy again beats waiting); empty when none is available. Takes one turn when the pool is not empty.
     */
    private List<Entry> scan(Collection<String> tried, String host) {
        List<String> ids = orderedIds;
        Map<String, Entry> current = entries;
        long now = clock.getAsLong();
        int n = ids.size();
        List<Entry> untried = new ArrayList<>(n);
        List<Entry> available = new ArrayList<>(n);
        long start = n == 0 ? 0 : turn.getAndIncrement();
        for (int i = 0; i < n; i++) {
            Entry e = current.get(ids.get((int) Math.floorMod(start + i, (long) n)));
            if (e != null && e.health.available(now) && (host == null
                    || buckets.restingNanos(e.config.id(), host) == 0)) {
                available.add(e);
                if (!tried.contains(e.config.id())) {
                    untried.add(e);
                }
            }
        }
        return untried.isEmpty() ? available : untried;
    }

    /**
     * Milliseconds until the first proxy becomes available for {@code host} again, as the pool sees it: healthy, or
     * out of its cooldown, and its pair not resting in the pool's own rests ({@link PoolRests}); -1 when the pool
     * is empty. With the throttle, the pairs' rests are the buckets' and count here as none.
     */
    public long millisUntilAvailable(String host) {
        long now = clock.getAsLong();
        long best = Long.MAX_VALUE;
        for (Entry e : entries.values()) {
            long resting = host == null ? 0 : buckets.restingNanos(e.config.id(), host);
            best = Math.min(best, Math.max(e.health.nanosUntilAvailable(now), resting));
        }
        return best == Long.MAX_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(best);
    }

    /** A fetch through the proxy got an answer that is not the proxy's fault. */
    public void success(String id) {
        success(id, null);
    }

    /**
     * A fetch through the proxy got {@code host}'s answer (null: unknown host): the proxy is healthy, and the
     * pair's 429s are forgiven (its next rest is what the host asks, not longer).
     */
    public void success(String id, String host) {
        Entry e = entries.get(id);
        if (e != null) {
            e.health.success(host);
        }
    }

    /**
     * A failure that is the proxy's ({@code FetchOutcome} says which are). Its bucket is left alone: the turns
     * booked on it stay booked, a penalty stays, and it refills by itself during the cooldown.
     */
    public void failure(String id, String reason) {
        Entry e = entries.get(id);
        if (e != null && e.health.failure(clock.getAsLong())) {
            LOG.warn("Proxy {} is unhealthy after {} failures in a row (last: {}); retried in {} ms", id,
                    failuresToUnhealthy, reason, TimeUnit.NANOSECONDS.toMillis(cooldownNanos));
        }
    }

    /**
     * {@code host} answered 429 through this proxy, asking for {@code askedMillis} (its {@code Retry-After},
     * capped): the pair (proxy, host) rests, for that or, while its 429s keep coming, longer
     * ({@link RestBackoff}); the proxy stays available for other hosts. The rest goes to what keeps the pairs'
     * rests ({@link ProxyBuckets}): the pair's bucket, which the instances sharing it see too, or the pool's own.
     *
     * @return the rest in milliseconds (0 when the proxy is no longer in the pool)
     */
    public long penalize(String id, String host, long askedMillis) {
        return penalize(id, host, askedMillis, buckets);
    }

    /** As {@link #penalize(String, String, long)}, the pair's bucket told through {@code tell}. */
    public long penalize(String id, String host, long askedMillis, ProxyBuckets tell) {
        Entry e = entries.get(id);
        if (e == null) {
            return 0;
        }
        long millis = e.health.penalize(clock.getAsLong(), host, askedMillis);
        tell.penalize(id, host, millis);
        return millis;
    }

    /**
     * A page of {@code host} got a 2xx through the proxy: the pair passes the host's pages, the evidence
     * {@link #refused} needs before it calls a 429 one URL's own.
     */
    public void passed(String id, String host) {
        Entry e = entries.get(id);
        if (e != null && host != null) {
            e.health.passed(clock.getAsLong(), host);
        }
    }

    /**
     * One 429 that a host sent for a URL, as {@link #refused} judged it. A URL keeps the list of its own
     * ({@code FetchOutcome}).
     *
     * @param proxy      the proxy it came through
     * @param atNanos    when it was judged, on the pool's clock
     * @param restMillis the rest it gave the (proxy, host) pair from {@code atNanos}, 0 for none
     * @param passing    whether the pair passed the host's other pages just before it ({@link ProxyHealth#passing})
     * @param alone      whether it was judged the URL's own refusal rather than the host's word about the pair
     * @param pending    whether the pair's rest was told only one short penalty of a longer rest, the rest of it
     *                   owed once the URL's next outcome confirms the 429 as the host's word ({@link #settle})
     */
    public record Refusal(String proxy, long atNanos, long restMillis, boolean passing, boolean alone,
                          boolean pending) {

        Refusal settled() {
            return new Refusal(proxy, atNanos, restMillis, passing, alone, false);
        }
    }

    /**
     * {@code host} itself answered 429 to a URL through this proxy (no {@code Proxy-Status}), asking for
     * {@code askedMillis} (its {@code Retry-After}, capped; negative: no rest, the adaptive rate's cut alone).
     * {@code urlRefusals} are the URL's earlier such 429s; the new one is judged, its effects applied, and the
     * list updated (earlier refusals it settles are replaced), but the new one is not added: the caller adds the
     * answer.
     *
     * <p>The rule: the 429 is <em>the URL's own</em> when the pair passed the host's other pages just before it
     * (a 2xx through it within {@code example.forgiveAfter}, and no other 429 of the host through it for as long:
     * {@link ProxyHealth#passing}) and the same URL was refused before, through another proxy, whose pair passed
     * the host's pages then too. Those earlier refusals then no longer count against their pairs' passing. Then this
     * pair rests at most one short penalty ({@code example.penalty}, less when the host asked for less), without
     * backoff, and the rests this URL's earlier refusals started on passing pairs stay one short penalty from their
     * start (never having been told more), their backoff starting over. Otherwise the 429 is <em>the host's
     * word</em> about the pair: the pair rests as {@link #penalize} says and counts as refused. A pair that was
     * passing cannot yet tell which it is: its rest's keeper is told one short penalty at once and the rest of the
     * rest at the URL's next outcome, unless that outcome finds the 429 to be the URL's own ({@link #settle}). The
     * host's word also cuts the pair's adaptive rate ({@link #throttled}); the URL's own cuts nothing. The earlier
     * refusals still pending are confirmed by a host's word now.
     *
     * @return the judgement, to add to the URL's list
     */
    public Refusal refused(String id, String host, long askedMillis, List<Refusal> urlRefusals) {
        return refused(id, host, askedMillis, urlRefusals, buckets);
    }

    /** As {@link #refused(String, String, long, List)}, the pairs' buckets told through {@code tell}. */
    public Refusal refused(String id, String host, long askedMillis, List<Refusal> urlRefusals, ProxyBuckets tell) {
        return refused(id, host, askedMillis, urlRefusals, tell, false);
    }

    /**
     * As {@link #refused(String, String, long, List, ProxyBuckets)}; {@code knownAlone}: the fleet already found this
     * URL's 429s to be its own (another instance, through the buckets' Redis), so this one is judged the URL's own
     * at once, whatever this pool has seen.
     */
    public Refusal refused(String id, String host, long askedMillis, List<Refusal> urlRefusals, ProxyBuckets tell,
                           boolean knownAlone) {
        long now = clock.getAsLong();
        Entry e = entries.get(id);
        if (e == null || host == null) {
            return new Refusal(id, now, 0, false, false, false);
        }
        long shortMillis = restPolicy.seedMillis();
        boolean passing = e.health.passing(now, host);
        boolean alone = knownAlone || passing && urlRefusals.stream().anyMatch(r -> r.passing()
                && !r.proxy().equals(id) && !refusedOthersAfter(host, r.atNanos(), urlRefusals));
        if (alone) {
            long rest = Math.min(Math.max(0, askedMillis), shortMillis);
            if (rest > 0) {
                tell.penalize(id, host, rest);
            }
            for (int i = 0; i < urlRefusals.size(); i++) {
                Refusal earlier = urlRefusals.get(i);
                Entry other = entries.get(earlier.proxy());
                if (earlier.passing() && !earlier.alone() && other != null) {
                    // one still pending was told one short penalty only, which stays its whole rest; a rest told in
                    // full cannot be taken back from a bucket, and its backoff stands with it
                    other.health.release(host, earlier.atNanos(), earlier.restMillis(), earlier.pending());
                    urlRefusals.set(i, earlier.settled());
                }
            }
            return new Refusal(id, now, rest, passing, true, false);
        }
        e.health.refused(now, host);
        throttled(id, host, tell);
        long rest = askedMillis < 0 ? 0 : e.health.penalize(now, host, askedMillis);
        boolean pending = passing && rest > shortMillis;
        if (rest > 0) {
            tell.penalize(id, host, pending ? shortMillis : rest);
        }
        settle(urlRefusals, host, tell);
        return new Refusal(id, now, rest, passing, false, pending);
    }

    /**
     * Whether the host refused another URL through any proxy after {@code since}: then it is refusing pages
     * in general (a wave of 429s as every pair passes the host's limit at once, as their rates start), not this
     * URL alone.
     */
    private boolean refusedOthersAfter(String host, long since, List<Refusal> urlRefusals) {
        java.util.function.LongPredicate own = t -> urlRefusals.stream().anyMatch(r -> r.atNanos() == t);
        return entries.values().stream().anyMatch(e -> e.health.refusedAfter(host, since, own));
    }

    /**
     * The URL's next outcome was no 429 of its own (a page, another failure, a 429 that is the host's word, or the
     * end of its attempts): each of its refusals still pending was the host's word after all, so the pair's rest's
     * keeper is told what is left of that refusal's own rest, counted from the refusal ({@link Refusal#atNanos} plus
     * {@link Refusal#restMillis}, rounded up to the millisecond); nothing when it is over. A longer rest the pair
     * got since (a later 429) is not shortened by it: the component's {@code penalize} keeps the longer of the debt
     * a bucket owes and the new penalty, and {@link PoolRests} keeps the later end. The list is updated.
     */
    public void settle(List<Refusal> urlRefusals, String host) {
        settle(urlRefusals, host, buckets);
    }

    /** As {@link #settle(List, String)}, the pairs' buckets told through {@code tell}. */
    public void settle(List<Refusal> urlRefusals, String host, ProxyBuckets tell) {
        long now = clock.getAsLong();
        for (int i = 0; i < urlRefusals.size(); i++) {
            Refusal r = urlRefusals.get(i);
            if (!r.pending()) {
                continue;
            }
            long left = r.atNanos() + r.restMillis() * 1_000_000L - now;
            if (left > 0 && entries.containsKey(r.proxy())) {
                tell.penalize(r.proxy(), host, TimeUnit.NANOSECONDS.toMillis(left + 999_999));
            }
            urlRefusals.set(i, r.settled());
        }
    }

    /**
     * {@code host} itself refused a request through this proxy (a 429 or 503 that the proxy forwarded): the pair's
     * adaptive rate is cut on every instance sharing its bucket ({@link ProxyBuckets#throttled}). The proxy's health
     * is not touched: the proxy did its job.
     */
    public void throttled(String id, String host) {
        throttled(id, host, buckets);
    }

    /** As {@link #throttled(String, String)}, the pair's bucket told through {@code tell}. */
    public void throttled(String id, String host, ProxyBuckets tell) {
        if (entries.containsKey(id)) {
            tell.throttled(id, host);
        }
    }

    /** What keeps the pairs' rests when the caller names nothing else: the seam the pool was built with. */
    public ProxyBuckets buckets() {
        return buckets;
    }

    /**
     * The health word of each proxy (healthy, probing, DOWN 4.2s), in pool order; when the pool keeps the pairs'
     * rests itself ({@link PoolRests}, in round robin) followed by "rests on N hosts" while any do. With the freest
     * choice the rests are the buckets' and the word says nothing of them (the table's 429s column counts them).
     */
    public Map<String, String> health() {
        long now = clock.getAsLong();
        Map<String, String> health = new LinkedHashMap<>();
        entries.forEach((id, e) -> {
            int resting = buckets.restingHosts(id);
            health.put(id, e.health.describe(now)
                    + (resting == 0 ? "" : ", rests on " + resting + (resting == 1 ? " host" : " hosts")));
        });
        Map<String, String> ordered = new LinkedHashMap<>();
        for (String id : orderedIds) {
            if (health.containsKey(id)) {
                ordered.put(id, health.get(id));
            }
        }
        return ordered;
    }

    /** The proxy ids in turn order. */
    public List<String> ids() {
        return orderedIds;
    }

    /** The config of a proxy, or null when it is no longer in the pool. */
    public ProxyConfig config(String id) {
        Entry e = entries.get(id);
        return e == null ? null : e.config;
    }

    private record Entry(ProxyConfig config, ProxyHealth health) {
    }
}
