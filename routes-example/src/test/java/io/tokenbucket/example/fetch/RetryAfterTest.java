package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code Retry-After} as untrusted input: both forms, capped, nonsense ignored; on a fixed clock. */
class RetryAfterTest {

    /** Sunday 1 June 2025, noon UTC. */
    private static final Clock NOW = Clock.fixed(Instant.parse("2025-06-01T12:00:00Z"), ZoneOffset.UTC);

    /** example.penalty=1s, example.maxRetryAfter=60s. */
    private final RetryAfter retryAfter = new RetryAfter(1_000, 60_000, NOW);

    @ParameterizedTest(name = "Retry-After: [{0}] rests {1} ms")
    @CsvSource(delimiter = '|', ignoreLeadingAndTrailingWhitespace = false, value = {
        // delay-seconds
        "0|0",
        "5|5000",
        " 5 |5000",
        "60|60000",
        "61|60000",
        "31536000|60000",
        "99999999999999999999999999999999|60000",
        "0000000000000000000000000000007|7000",
        // IMF-fixdate: until then, 0 when past, capped
        "Sun, 01 Jun 2025 12:00:30 GMT|30000",
        "sun, 01 jun 2025 12:00:30 gmt|30000",
        "Sun, 01 Jun 2025 11:59:00 GMT|0",
        "Fri, 31 Dec 9999 23:59:59 GMT|60000",
        // RFC 850, two-digit year: up to 50 years ahead is this century, beyond is the last one
        "Sunday, 01-Jun-25 12:00:10 GMT|10000",
        "Saturday, 01-Jun-75 12:00:00 GMT|60000",
        "Monday, 01-Jun-76 12:00:00 GMT|0",
        // asctime, day padded with a space
        "Sun Jun  1 12:00:20 2025|20000",
        // nonsense: the default penalty
        "|1000",
        "   |1000",
        "-1|1000",
        "+5|1000",
        "1.5|1000",
        "1e9|1000",
        "5s|1000",
        "soon|1000",
        "١٢|1000",
        "Sun, 31 Feb 2025 12:00:00 GMT|1000",
        "Sun, 01 Jun 2025 25:00:00 GMT|1000",
        "Sun, 01 Jun 2025 12:00:30 +0000|1000",
        "Sun, 01 Jun 2025 12:00:30 GMT, 5|1000",
        "2025-06-01T12:00:30Z|1000",
    })
    void readsTheSecondsAndTheThreeDateFormsCapsThemAndIgnoresNonsense(String header, long millis) {
        assertThat(retryAfter.millis(header == null ? "" : header)).isEqualTo(millis);
    }

    @Test
    void noHeaderIsTheDefaultPenalty() {
        assertThat(retryAfter.millis(null)).isEqualTo(1_000);
    }

    @Test
    void theCapAndTheDefaultAreCheckedByName() {
        assertThatIllegalArgumentException().isThrownBy(() -> new RetryAfter(1_000, 2L * 86_400_000, NOW))
                .withMessage("example.maxRetryAfter must be between 0 and 1d, was 172800000 ms");
        assertThatIllegalArgumentException().isThrownBy(() -> new RetryAfter(90_000, 60_000, NOW))
                .withMessage("example.penalty must be between 0 and example.maxRetryAfter (60000 ms), was 90000 ms");
        assertThat(new RetryAfter(0, 0, NOW).millis("31536000")).as("maxRetryAfter=0 ignores Retry-After").isZero();
    }
}
