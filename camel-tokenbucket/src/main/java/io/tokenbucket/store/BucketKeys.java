package io.tokenbucket.store;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Bounds untrusted key values before they become map keys or Redis keys.
 *
 * <p>A key of at most {@link #MAX_LENGTH} characters is used as it is. A longer one, and one that starts with
 * {@link #HASH_PREFIX} itself, is replaced by {@code sha256:} and the hex SHA-256 of its UTF-8 bytes (71
 * characters), so a 1 MB header value costs 71 characters of memory, two long keys share a bucket only if their
 * hashes collide, and no short key can be sent that is a long key's stored form.
 */
public final class BucketKeys {

    /** Keys up to this many characters are kept as they are. */
    public static final int MAX_LENGTH = 128;

    /** The prefix of a hashed key. */
    public static final String HASH_PREFIX = "sha256:";

    private BucketKeys() {
    }

    /**
     * The key itself when it is at most {@link #MAX_LENGTH} characters long and does not start with
     * {@link #HASH_PREFIX}, its hashed form otherwise.
     */
    public static String bound(String key) {
        if (key.length() <= MAX_LENGTH && !key.startsWith(HASH_PREFIX)) {
            return key;
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return HASH_PREFIX + HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
