package io.tokenbucket.store;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Bounds untrusted key values before they become map keys or Redis keys.
 *
 * <p>A key of at most {@link #MAX_LENGTH} characters is used as it is. A longer one, one that starts with
 * {@link #HASH_PREFIX} itself, and one with an unpaired surrogate is replaced by {@code sha256:} and the hex SHA-256
 * of its UTF-8 bytes (71 characters), so a 1 MB header value costs 71 characters of memory, two long keys share a
 * bucket only if their hashes collide, and no short key can be sent that is a long key's stored form. UTF-8 writes
 * an unpaired surrogate as {@code ?}, so such a key is hashed from its UTF-16 code units instead, after a byte no
 * UTF-8 text holds: {@code bob\uD800} neither shares {@code bob?}'s Redis key nor another such key's hash.
 */
public final class BucketKeys {

    /** Keys up to this many characters are kept as they are. */
    public static final int MAX_LENGTH = 128;

    /** The prefix of a hashed key. */
    public static final String HASH_PREFIX = "sha256:";

    private BucketKeys() {
    }

    /**
     * The key itself when it is at most {@link #MAX_LENGTH} characters long, does not start with
     * {@link #HASH_PREFIX} and has no unpaired surrogate, its hashed form otherwise.
     */
    public static String bound(String key) {
        boolean wellFormed = wellFormed(key);
        if (key.length() <= MAX_LENGTH && !key.startsWith(HASH_PREFIX) && wellFormed) {
            return key;
        }
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
        if (wellFormed) {
            sha.update(key.getBytes(StandardCharsets.UTF_8));
        } else {
            sha.update((byte) 0xFF);
            for (int i = 0; i < key.length(); i++) {
                char c = key.charAt(i);
                sha.update((byte) (c >> 8));
                sha.update((byte) c);
            }
        }
        return HASH_PREFIX + HexFormat.of().formatHex(sha.digest());
    }

    /** Whether every surrogate of {@code key} is in a pair, so that UTF-8 carries the key as it is. */
    private static boolean wellFormed(String key) {
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }
}
