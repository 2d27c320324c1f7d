package io.tokenbucket.camel.redis;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

import io.tokenbucket.camel.TokenBucketStoreErrorPolicy;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.StoreRefusedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports what becomes of a Redis-backed endpoint's store calls, so that every failure and every fallback is seen
 * in the log, not only in the counters: one WARN when the endpoint enters its {@code onStoreError} policy (Redis
 * does not answer) and one INFO when it leaves it, with the reason, how long it lasted and how many calls the policy
 * answered; one WARN when Redis refuses a call ({@link StoreRefusedException}: a permission, a script error), which
 * fails its exchange under every policy.
 *
 * <p>Rate-limited to one report of each kind per {@link #REPORT_INTERVAL_NANOS}: an outage that begins within it
 * after a reported one is reported once the interval has passed, if it still lasts then (it is noticed on the
 * primary's next try, at least once a second); one that ends before is not logged, and the next WARN counts it.
 * Likewise a refusal within the interval after a reported one is counted into the next report.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketStoreWatcher implements FallbackBucketStore.Watcher {

    /** The shortest time between two reports of an outage, or of a refusal: one minute. */
    static final long REPORT_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketStoreWatcher.class);

    private final String name;
    private final String where;
    private final TokenBucketStoreErrorPolicy policy;
    private final UnaryOperator<String> redact;
    private final LongSupplier policyCalls;
    private final LongSupplier clock;
    private final Runnable onRefusal;

    // guarded by this: failures are not the hot path (an outage is tried once a second)
    private boolean inOutage;
    private long outageStart;
    private long policyCallsAtStart;
    private boolean outageReported;
    private boolean outageEverReported;
    private long lastOutageReport;
    private int unreportedOutages;
    private boolean refusalEverReported;
    private long lastRefusalReport;
    private long unreportedRefusals;
    /** The last refusal of the release channel's {@code SUBSCRIBE}, null once a subscription was made. */
    private volatile Throwable subscribeRefused;

    /**
     * @param name        the endpoint's name
     * @param where       where the store is, for messages ({@code redis at redis://***@host:6379})
     * @param policy      the endpoint's onStoreError
     * @param redact      removes the URI's secrets from a text
     * @param policyCalls the calls the policy answered so far (fallbacks; under {@code fail} the exchanges failed)
     * @param clock       a monotonic nanosecond clock
     * @param onRefusal   runs on every refusal (the readiness probe then asks Redis again at its next check)
     */
    public TokenBucketStoreWatcher(String name, String where, TokenBucketStoreErrorPolicy policy,
                                   UnaryOperator<String> redact, LongSupplier policyCalls, LongSupplier clock,
                                   Runnable onRefusal) {
        this.onRefusal = onRefusal;
        this.name = name;
        this.where = where;
        this.policy = policy;
        this.redact = redact;
        this.policyCalls = policyCalls;
        this.clock = clock;
    }

    @Override
    public synchronized void failed(Throwable cause) {
        long now = clock.getAsLong();
        if (cause instanceof StoreRefusedException) {
            onRefusal.run();
            if (refusalEverReported && now - lastRefusalReport < REPORT_INTERVAL_NANOS) {
                unreportedRefusals++;
                return;
            }
            LOG.warn("tokenbucket:{}: {} refused a call: {}; every call that needs what was refused fails (an"
                    + " acquire fails its exchange), whatever onStoreError ({}): a refusal is not an outage, waiting"
                    + " will not mend it{}", name, where, reason(cause), policy,
                    unreportedRefusals == 0 ? "" : " (" + unreportedRefusals + " more refused since the last report)");
            refusalEverReported = true;
            lastRefusalReport = now;
            unreportedRefusals = 0;
            return;
        }
        if (!inOutage) {
            inOutage = true;
            outageStart = now;
            policyCallsAtStart = policyCalls.getAsLong();
            outageReported = false;
        }
        if (!outageReported && (!outageEverReported || now - lastOutageReport >= REPORT_INTERVAL_NANOS)) {
            LOG.warn("tokenbucket:{}: {} does not answer ({}){}; onStoreError={}: {} until it answers again{}", name,
                    where, reason(cause), now == outageStart ? "" : " for " + millis(now - outageStart) + " ms",
                    policy, meanwhile(), unreportedOutages == 0 ? "" : " (" + unreportedOutages
                            + " shorter outages since the last report were not logged)");
            outageReported = true;
            outageEverReported = true;
            lastOutageReport = now;
            unreportedOutages = 0;
        }
    }

    @Override
    public synchronized void answered() {
        if (!inOutage) {
            return;
        }
        inOutage = false;
        if (!outageReported) {
            unreportedOutages++;
            return;
        }
        long calls = policyCalls.getAsLong() - policyCallsAtStart;
        LOG.info("tokenbucket:{}: {} answers again after {} ms; onStoreError={} {} {} meanwhile", name, where,
                millis(clock.getAsLong() - outageStart), policy, policy == TokenBucketStoreErrorPolicy.fail
                        ? "failed" : "answered", calls + (policy == TokenBucketStoreErrorPolicy.fail ? " exchanges"
                        : " calls"));
    }

    /** The release channel's {@code SUBSCRIBE} was refused ({@code cause}), or made at last (null). */
    void subscribeRefused(Throwable cause) {
        subscribeRefused = cause;
        if (cause != null) {
            failed(cause);
        }
    }

    /** Why the release channel cannot be subscribed to, null when nothing refused it (or it is subscribed now). */
    Throwable subscriptionRefusal() {
        return subscribeRefused;
    }

    private String meanwhile() {
        return switch (policy) {
            case fail -> "exchanges fail";
            case allow -> "exchanges are admitted without a token";
            case local -> "exchanges are throttled by this instance's local buckets";
        };
    }

    private String reason(Throwable cause) {
        String why = cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName();
        return redact.apply(why).replaceAll("\\s*\\R\\s*", " ").strip();
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
