package io.tokenbucket.camel.producer;

import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.FallbackBucketStore;

/**
 * An endpoint's bucket store and what is bound to it while the endpoint runs: the store itself (the component's
 * local buckets of the limiter name, or a Redis store behind its {@code onStoreError} policy), the Redis
 * connection lease and the subscription to the releases of in-flight slots. {@link #open} binds them when the
 * endpoint starts, {@link #close()} gives them back when it stops; until the first open the store is null.
 *
 * <p>Also the one place that knows the store's concrete class: where it is ({@link #description()}), how to take
 * its secrets out of a text ({@link #redact}) and how many calls its failure policy answered ({@link #fallbacks()}).
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketStoreBinding {

    /**
     * An open Redis store with its failure policy, the lease to give back when the endpoint stops, where it is
     * (without credentials, for messages), a probe for the health check (null when Redis answers and lets the
     * endpoint run what it needs, else why not), what removes the URI's secrets from a text before it is shown,
     * what subscribes to the releases of in-flight slots, and whether the endpoint's keys have in-flight limits
     * (it then subscribes at once, so a refused SUBSCRIBE shows before a slot is waited for). Opened by
     * {@link io.tokenbucket.camel.redis.TokenBucketRedisStores}, which alone loads Lettuce.
     */
    public record Opened(FallbackBucketStore store, AutoCloseable lease, String where, Supplier<Throwable> probe,
                         UnaryOperator<String> redact, Function<Runnable, AutoCloseable> releases, boolean publishes) {
    }

    private volatile BucketStore store;
    /** The Redis store as opened (null for a local store), kept once closed: where it was stays readable. */
    private volatile Opened redis;
    private AutoCloseable releasesWatched; // guarded by this

    /** Binds the component's local buckets of the limiter name. */
    public void open(BucketStore local) {
        store = local;
    }

    /**
     * Binds an opened Redis store.
     *
     * @param onRelease wakes the waiters of the limiter name when another instance releases a slot
     */
    public void open(Opened opened, Runnable onRelease) {
        redis = opened;
        store = opened.store();
        if (opened.publishes()) { // at once, so that a refused SUBSCRIBE shows before a slot is waited for
            watchReleases(onRelease);
        }
    }

    /** Gives back the Redis lease and the subscription; the store stays readable. */
    public void close() throws Exception {
        synchronized (this) {
            if (releasesWatched != null) {
                releasesWatched.close();
                releasesWatched = null;
            }
        }
        if (redis != null) {
            redis.lease().close(); // a lease is given back once, however often it is closed
        }
    }

    /**
     * On a Redis store, calls {@code onRelease} whenever any instance releases an in-flight slot that waiters asked
     * for (the store publishes it), from the first call until the binding closes; once per binding. The subscription
     * is made in the background (never on the calling thread); until it is, the waiters' own poll finds the slots.
     */
    synchronized void watchReleases(Runnable onRelease) {
        if (releasesWatched == null && redis != null) {
            releasesWatched = redis.releases().apply(onRelease);
        }
    }

    /** The readiness probe of a Redis store (null when it answered, else why not); null for a local store. */
    public Supplier<Throwable> probe() {
        Opened opened = redis;
        return opened == null ? null : opened.probe();
    }

    /** The buckets of the endpoint's limiter; null before the endpoint first started. */
    public BucketStore store() {
        return store;
    }

    /** Where the buckets live, for messages: {@code local} or {@code redis at redis://***@host:6379}. */
    public String description() {
        Opened opened = redis;
        return opened == null ? "local" : opened.where();
    }

    /** {@code text} (a store failure's message) without the store's secrets, for messages; null stays null. */
    public String redact(String text) {
        Opened opened = redis;
        return opened == null ? text : opened.redact().apply(text);
    }

    /** Store calls answered by the {@code onStoreError} policy (allow or local) because Redis did not answer. */
    public long fallbacks() {
        return store instanceof FallbackBucketStore f ? f.fallbacks() : 0;
    }

    /** Store calls Redis refused (a permission, a script error): failed under every policy. */
    public long refusals() {
        return store instanceof FallbackBucketStore f ? f.refusals() : 0;
    }

    /** Whether the store is answered by its {@code onStoreError} policy now (Redis did not answer lately). */
    public boolean inFallback() {
        return store instanceof FallbackBucketStore f && f.isBypassing();
    }
}
