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

    @Test
    void noShortKeyCanBeSentThatIsALongKeysStoredForm() {
        String stored = BucketKeys.bound("z".repeat(500));
        // sent as it is, it would share the long key's bucket under its own (other) limits
        assertThat(BucketKeys.bound(stored)).isNotEqualTo(stored).startsWith(BucketKeys.HASH_PREFIX);
        assertThat(BucketKeys.bound("sha256:")).isNotEqualTo("sha256:");
    }

    @Test
    void keysThatDifferOnlyInUnpairedSurrogatesKeepApart() {
        // UTF-8 (Redis keys, the hash of long keys) writes every unpaired surrogate as '?'
        String high = "bob\uD800";
        String low = "bob\uDFFF";
        assertThat(BucketKeys.bound(high)).startsWith(BucketKeys.HASH_PREFIX).isNotEqualTo(BucketKeys.bound(low))
                .isNotEqualTo(BucketKeys.bound("bob?"));
        String longHigh = "x".repeat(200) + "\uD800";
        assertThat(BucketKeys.bound(longHigh)).isNotEqualTo(BucketKeys.bound("x".repeat(200) + "\uDBFF"))
                .isNotEqualTo(BucketKeys.bound("x".repeat(200) + "?"));
        assertThat(BucketKeys.bound("pair \uD83D\uDE00")).isEqualTo("pair \uD83D\uDE00");
    }
}
