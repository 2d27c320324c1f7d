package io.tokenbucket.math;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LimitTest {

    @ParameterizedTest(name = "{0} tokens, refill {1} per {2} -> interval {3}, burst {4}")
    @CsvSource({
            // capacity, refillAmount, refillPeriod, interval, burst
            "1,  1,  1000,        1000,       1000",
            "5,  5,  1000,        200,        1000",
            "3,  3,  1000,        334,        1002",  // 1000/3 rounded up: never faster than configured
            "1,  1,  10000,       10000,      10000", // 1 token per 10 s in ms ticks
            "10, 1,  3600000000000, 3600000000000, 36000000000000", // 1 per hour in ns ticks, burst 10
            "4,  1000, 10,        1,          4",     // faster than one per tick is capped at one per tick
    })
    void derivesIntervalAndBurst(long capacity, long refillAmount, long refillPeriod, long interval, long burst) {
        Limit limit = Limit.of(capacity, refillAmount, refillPeriod);
        assertThat(limit.interval()).isEqualTo(interval);
        assertThat(limit.burst()).isEqualTo(burst);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "'capacity must be at least 1, was 0',      0, 1, 1",
            "'capacity must be at least 1, was -3',    -3, 1, 1",
            "'refillAmount must be at least 1, was 0',  1, 0, 1",
            "'refillPeriod must be at least 1, was 0',  1, 1, 0",
    })
    void rejectsOutOfRangeValuesNamingThem(String message, long capacity, long refillAmount, long refillPeriod) {
        assertThatThrownBy(() -> Limit.of(capacity, refillAmount, refillPeriod))
                .isInstanceOf(IllegalArgumentException.class).hasMessage(message);
    }

    @ParameterizedTest(name = "refill {0} per {1} on a clock of {2}-tick steps")
    @CsvSource({
            // refillAmount, refillPeriod, grain, refused with
            "300000000, 1000000000, 1,    'refill 300000000 per 1000000000 ticks comes to one token every 4 ticks on a clock of 1-tick steps, 17 % slower: refill more slowly or count tokens in larger units'",
            "300000,    1000000000, 1000, 'one token every 4000 ticks on a clock of 1000-tick steps, 17 % slower'",
            "300000000, 1000000000, 1000, 'one token every 1000 ticks on a clock of 1000-tick steps, 100 % slower'",
            "1000,      10,         1,    'one token every 1 ticks on a clock of 1-tick steps, 99 % slower'",
            "3,         1000,       1,    ''", // 334 for 333.3: 0.2 % slower
            "101,       100000,     1000, ''", // 990.1 rounded to 1000: 0.99 % slower
            "102,       100000,     1000, 'one token every 1000 ticks on a clock of 1000-tick steps, 2 % slower'",
            "1000000,   1000000000, 1000, ''",
            "9223372036854775807, 9223372036854775807, 1000, 'one token every 1000 ticks'",
    })
    void refusesARateTheClocksGrainWouldSlowByMoreThanOnePercent(long refillAmount, long refillPeriod, long grain,
                                                                 String refusal) {
        Limit limit = Limit.of(1, refillAmount, refillPeriod);
        if (refusal.isEmpty()) {
            limit.requireRateAt(grain);
        } else {
            assertThatThrownBy(() -> limit.requireRateAt(grain)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(refusal);
        }
    }

    @Test
    void rejectsABucketThatWouldOverflowTheClock() {
        assertThatThrownBy(() -> Limit.of(Long.MAX_VALUE / 2, 1, 3_600_000_000_000L))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("capacity");
    }

    @Test
    void costIsTokensTimesInterval() {
        Limit limit = Limit.of(5, 5, 1000);
        assertThat(limit.cost(1)).isEqualTo(200);
        assertThat(limit.cost(5)).isEqualTo(1000);
    }

    @Test
    void costAboveCapacityCanNeverBeSatisfied() {
        Limit limit = Limit.of(5, 5, 1000);
        assertThatThrownBy(() -> limit.cost(6)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tokens 6 exceeds capacity 5: such a request can never be satisfied");
        assertThatThrownBy(() -> limit.cost(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tokens must be at least 1, was 0");
    }
}
