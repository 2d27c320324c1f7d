package io.tokenbucket.example;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The proxies the work is spread over, handed out in round robin. Bound in the registry as {@value #BEAN} so
 * that both DSLs choose a proxy the same way ({@code method("proxyPool", "next")}).
 *
 * <p>A later version skips unhealthy proxies here; callers only ever ask for {@link #next()}.
 */
public class ProxyPool {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyPool";

    private final List<String> ids;
    private final AtomicLong turn = new AtomicLong();

    /**
     * @param ids the proxy ids, in the order they take turns; at least one, no blanks, no duplicates
     */
    public ProxyPool(List<String> ids) {
        if (ids == null || ids.isEmpty()) {
            throw new IllegalArgumentException("example.proxies must name at least one proxy");
        }
        for (String id : ids) {
            if (id == null || id.isBlank()) {
                throw new IllegalArgumentException("example.proxies must not contain blank ids, was " + ids);
            }
        }
        if (new LinkedHashSet<>(ids).size() != ids.size()) {
            // a duplicate would share its bucket with its twin and silently get two turns per round
            throw new IllegalArgumentException("example.proxies must not repeat an id, was " + ids);
        }
        this.ids = List.copyOf(ids);
    }

    /** A pool from comma-separated ids such as {@code p1, p2,p3}; blanks around ids are ignored. */
    public static ProxyPool parse(String commaSeparated) {
        List<String> ids = new ArrayList<>();
        for (String part : String.valueOf(commaSeparated).split(",")) {
            if (!part.isBlank()) {
                ids.add(part.trim());
            }
        }
        return new ProxyPool(ids);
    }

    /** The id of the proxy whose turn it is; safe to call from many threads. */
    public String next() {
        return ids.get((int) Math.floorMod(turn.getAndIncrement(), (long) ids.size()));
    }

    /** The proxy ids in turn order. */
    public List<String> ids() {
        return ids;
    }
}
