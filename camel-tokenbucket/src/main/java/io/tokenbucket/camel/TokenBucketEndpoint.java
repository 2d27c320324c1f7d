package io.tokenbucket.camel;

import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Limit;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.Category;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.DefaultEndpoint;

/**
 * Throttles exchanges per key with a token bucket, in memory or in Redis: each exchange takes its cost in
 * tokens from the bucket of its key (a header) and waits, fails or is marked when they are not there yet.
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "tokenbucket", title = "Token Bucket", syntax = "tokenbucket:name",
             producerOnly = true, remote = false, category = { Category.CORE, Category.CLUSTERING },
             headersClass = TokenBucketConstants.class)
public class TokenBucketEndpoint extends DefaultEndpoint {

    @UriPath(description = "The limiter name. Endpoints with the same name share their buckets; keys are"
            + " scoped to the name.")
    @Metadata(required = true)
    private final String name;

    @UriParam
    private final TokenBucketConfiguration configuration;

    private Limit limit;
    private BucketStore store;
    private AutoCloseable storeLease;
    private String storeDescription = "local";

    TokenBucketEndpoint(String uri, TokenBucketComponent component, String name,
                        TokenBucketConfiguration configuration) {
        super(uri, component);
        this.name = name;
        this.configuration = configuration;
    }

    /** Checks the options once they are all set; a bad one fails endpoint creation, naming it. */
    void validate() {
        limit = configuration.validate();
    }

    @Override
    public TokenBucketComponent getComponent() {
        return (TokenBucketComponent) super.getComponent();
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        if (limit == null) {
            validate();
        }
        if (configuration.getStore() == TokenBucketStoreType.redis) {
            TokenBucketRedisStores.Opened opened = TokenBucketRedisStores.open(this, getComponent().redisConnections());
            store = opened.store();
            storeLease = opened.lease();
            storeDescription = opened.where();
        } else {
            store = getComponent().localStore(name);
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (storeLease != null) {
            storeLease.close();
            storeLease = null;
        }
        super.doStop();
    }

    @Override
    public Producer createProducer() {
        return new TokenBucketProducer(this);
    }

    @Override
    public Consumer createConsumer(Processor processor) {
        throw new UnsupportedOperationException("tokenbucket: is a producer only: use it in to(...), not from(...)");
    }

    /** The limiter name. */
    public String getName() {
        return name;
    }

    /** The endpoint's options. */
    public TokenBucketConfiguration getConfiguration() {
        return configuration;
    }

    /** The limit in nanosecond ticks, as validated from the options. */
    Limit limit() {
        return limit;
    }

    /** The buckets of this endpoint's limiter. */
    BucketStore store() {
        return store;
    }

    /** Where this endpoint's buckets live, for messages: {@code local} or {@code redis at redis://***@host:6379}. */
    String describeStore() {
        return storeDescription;
    }

    /** The limit in the user's terms, for messages: {@code capacity 5, refill 5 per 1000 ms}. */
    String describeLimit() {
        return "capacity " + limit.capacity() + ", refill " + limit.refillTokens() + " per "
                + TimeUnit.NANOSECONDS.toMillis(limit.refillPeriod()) + " ms";
    }
}
