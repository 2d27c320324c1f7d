package io.tokenbucket.example.fetch;

import java.time.Duration;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.store.redis.RedisConnections;
import org.apache.camel.support.service.ServiceSupport;

/**
 * The example's own connection to the buckets' Redis ({@code example.redisUri}), for what the instances of a fleet
 * share besides the buckets: the verdicts on URLs ({@link UrlVerdicts}) and the fleet's totals. Made the way the
 * component makes its own ({@link RedisConnections}: standalone or cluster URIs, reconnecting in the background,
 * commands timed out); a Camel service, bound as {@value #BEAN}. Without a URI it has no commands.
 */
public final class RedisLease extends ServiceSupport {

    /** The registry name. */
    public static final String BEAN = "exampleRedis";
    /** How long a command may take before it fails, in milliseconds. */
    public static final long TIMEOUT_MILLIS = 1000;

    private final String uri;
    private RedisConnections connections;
    private volatile RedisConnections.Lease lease;

    /** @param uri {@code example.redisUri}; blank: none */
    public RedisLease(String uri) {
        this.uri = uri;
    }

    @Override
    protected void doStart() {
        if (!uri.isBlank()) {
            connections = new RedisConnections();
            lease = connections.acquire(uri, Duration.ofMillis(TIMEOUT_MILLIS));
        }
    }

    @Override
    protected void doStop() {
        RedisConnections.Lease l = lease;
        lease = null;
        if (l != null) {
            l.close();
        }
        if (connections != null) {
            connections.close();
        }
    }

    /** The commands, null without a URI, before the start, or while the first connection has not opened yet. */
    public RedisClusterAsyncCommands<String, String> commands() {
        RedisConnections.Lease l = lease;
        return l == null ? null : l.commands();
    }
}
