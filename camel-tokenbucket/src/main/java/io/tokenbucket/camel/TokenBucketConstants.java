package io.tokenbucket.camel;

import org.apache.camel.spi.Metadata;

/** The message headers the {@code tokenbucket:} endpoint reads and writes. */
public final class TokenBucketConstants {

    /** The default header holding the bucket key; another header can be named with the {@code keyHeader} option. */
    @Metadata(label = "producer", description = "The bucket key (for example a proxy id), when the keyHeader option"
            + " is left at its default. Exchanges with the same key share one bucket. Keys longer than 128"
            + " characters are replaced by their SHA-256 hash.", javaType = "String")
    public static final String KEY = "CamelTokenBucketKey";

    @Metadata(label = "producer", description = "The cost of this exchange in tokens, overriding the tokens option;"
            + " a whole number from 1 to the capacity.", javaType = "Long")
    public static final String TOKENS = "CamelTokenBucketTokens";

    @Metadata(label = "producer", description = "Set in check mode: true when the tokens were granted (and"
            + " consumed), false when they were not (nothing consumed).", javaType = "Boolean")
    public static final String ALLOWED = "CamelTokenBucketAllowed";

    @Metadata(label = "producer", description = "Set on every exchange that passes: milliseconds it waited for"
            + " its tokens.", javaType = "Long")
    public static final String WAITED = "CamelTokenBucketWaited";

    @Metadata(label = "producer", description = "Set on every exchange that passes: whole tokens left in the bucket"
            + " after this exchange.", javaType = "Long")
    public static final String REMAINING = "CamelTokenBucketRemaining";

    private TokenBucketConstants() {
    }
}
