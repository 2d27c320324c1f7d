package io.tokenbucket.camel.springboot;

import io.tokenbucket.store.redis.RedisConnections;

/**
 * The value of a secret option of {@code camel.component.tokenbucket.*} ({@code redis-uri}, whose user info may hold
 * a password), as {@link TokenBucketComponentConfiguration} holds it: a type, not a {@code String}, so that nothing
 * that prints a bean's properties shows the secret. Camel's {@code bean} dev console (served as
 * {@code /actuator/camel/bean}) prints every property of every bean in the registry by its {@code toString()},
 * without Camel's sanitizer, and the configuration properties bean is one of those beans.
 *
 * <p>{@link #toString()} is what the component shows of a Redis URI: the URI rebuilt from Lettuce's parse of it,
 * its user and password as {@code ***} ({@code redis://***@10.0.0.5:6379}), or a note that it does not parse. The
 * class has no public accessor of the text (and no bean property at all, so JSON writers that walk getters find
 * nothing); only this package reads it, to hand it to the component.
 */
public final class TokenBucketSecret {

    private final String text;

    private TokenBucketSecret(String text) {
        this.text = text;
    }

    /**
     * The secret {@code text}, as Spring binds the property; null stays null.
     *
     * @param text the option's text as given
     */
    public static TokenBucketSecret of(String text) {
        return text == null ? null : new TokenBucketSecret(text);
    }

    /** The text as given, for the component only: never log or show it. */
    String reveal() {
        return text;
    }

    /** What may be shown: the Redis URI without credentials ({@link RedisConnections#describe}). */
    @Override
    public String toString() {
        return RedisConnections.describe(text).described();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof TokenBucketSecret secret && secret.text.equals(text);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }
}
