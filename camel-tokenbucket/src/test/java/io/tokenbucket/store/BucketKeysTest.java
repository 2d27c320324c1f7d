package io.tokenbucket.store;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class BucketKeysTest {

    @Test
    void shortKeysAreKeptAsTheyAre() {
        String key = "p".repeat(BucketKeys.MAX_LENGTH);
        assertThat(BucketKeys.bound(key)).isSameAs(key);
        assertThat(BucketKeys.bound("proxy-1")).isEqualTo("proxy-1");
    }

    @Test
    void longKeysAreHashedToAFixedLength() {
        String huge = "x".repeat(1 << 20);
        String bounded = BucketKeys.bound(huge);
        assertThat(bounded).startsWith(BucketKeys.HASH_PREFIX).hasSize(BucketKeys.HASH_PREFIX.length() + 64);
        assertThat(BucketKeys.bound(huge)).isEqualTo(bounded);
        assertThat(BucketKeys.bound(huge + "y")).isNotEqualTo(bounded);
    }
}
