package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
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

    private Limits limits;
    private volatile KeyLimits keyLimits;
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
        limits = configuration.validate();
    }

    /** The parsed keyLimits option, kept with the text it came from so a change at runtime is seen. */
    private record KeyLimits(String text, List<Map.Entry<Pattern, Limits>> entries) {
    }

    @Override
    public TokenBucketComponent getComponent() {
        return (TokenBucketComponent) super.getComponent();
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        if (limits == null) {
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

    /** The endpoint's limits in nanosecond ticks, as validated from the options. */
    Limits limits() {
        return limits;
    }

    /**
     * The limits of {@code key}: the limit resolver's answer, else the first keyLimits entry that matches,
     * else the endpoint's. Read on every exchange, so a change of either takes effect on the key's next one.
     */
    Limits limitsFor(String key) {
        TokenBucketLimitResolver resolver = configuration.getLimitResolver();
        if (resolver != null) {
            String text = resolver.limitsFor(key);
            if (text != null) {
                return TokenBucketLimitSpec.parse(text, "the limits the limitResolver gave key '" + key + "'");
            }
        }
        String text = configuration.getKeyLimits();
        if (text == null) {
            return limits;
        }
        KeyLimits parsed = keyLimits;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new KeyLimits(text, TokenBucketLimitSpec.parseKeyLimits(text));
            keyLimits = parsed;
        }
        for (Map.Entry<Pattern, Limits> entry : parsed.entries()) {
            if (entry.getKey().matcher(key).matches()) {
                return entry.getValue();
            }
        }
        return limits;
    }

    /** The buckets of this endpoint's limiter. */
    BucketStore store() {
        return store;
    }

    /** Where this endpoint's buckets live, for messages: {@code local} or {@code redis at redis://***@host:6379}. */
    String describeStore() {
        return storeDescription;
    }

    /** Limits in the user's terms, for messages: {@code capacity 5, refill 5 per 1000 ms}, joined by "; ". */
    static String describe(Limits limits) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < limits.size(); i++) {
            Limit limit = limits.get(i);
            text.append(i == 0 ? "" : "; ").append("capacity ").append(limit.capacity()).append(", refill ")
                    .append(limit.refillTokens()).append(" per ")
                    .append(TimeUnit.NANOSECONDS.toMillis(limit.refillPeriod())).append(" ms");
        }
        return text.toString();
    }
}
