package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.Test;

/** A (proxy, host) pair's rests after 429s, on a made-up clock and fixed draws: no sleeps. */
class RestBackoffTest {

    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    /** Draws the highest value every time: the rests are the jitter's ceilings. */
    static RandomGenerator highest() {
        return new RandomGenerator() {
            @Override
            public long nextLong() {
                return -1;
            }

            @Override
            public long nextLong(long bound) {
                return bound - 1;
            }
        };
    }

    /** Draws the lowest value every time: the rests are the jitter's floors. */
    private static RandomGenerator lowest() {
        return new RandomGenerator() {
            @Override
            public long nextLong() {
                return 0;
            }

            @Override
            public long nextLong(long bound) {
                return 0;
            }
        };
    }

    /** example.penalty 1 s, maxRetryAfter 60 s, forgiveAfter 10 s. */
    private static RestBackoff backoff(RandomGenerator random) {
        return new RestBackoff.Policy(1_000, 60_000, 10_000, random).newBackoff();
    }

    @Test
    void aFirst429RestsExactlyWhatTheHostAsked() {
        assertThat(backoff(highest()).next(0, 2_000)).isEqualTo(2_000);
        assertThat(backoff(highest()).next(0, 0)).as("Retry-After: 0 is the host's word too").isZero();
    }

    @Test
    void repeated429sGrowUpToThreeTimesEachAndStopAtTheCap() {
        RestBackoff backoff = backoff(highest());
        List<Long> rests = new ArrayList<>();
        long now = 0;
        for (int i = 0; i < 6; i++) {
            long rest = backoff.next(now, 1_000);
            rests.add(rest);
            now += TimeUnit.MILLISECONDS.toNanos(rest); // the next 429 comes as soon as the rest is over
        }
        assertThat(rests).containsExactly(1_000L, 3_000L, 9_000L, 27_000L, 60_000L, 60_000L);
    }

    @Test
    void aRepeatedRestNeverFallsBelowWhatTheHostAskedNorBelowThePenalty() {
        RestBackoff backoff = backoff(lowest());
        assertThat(backoff.next(0, 0)).isZero();
        assertThat(backoff.next(SECOND, 0)).as("grows from example.penalty, not from nothing").isEqualTo(1_000);
        assertThat(backoff.next(2 * SECOND, 5_000)).isEqualTo(5_000);
    }

    @Test
    void theJitterStaysBetweenTheFloorAndThreeTimesTheLastRest() {
        RestBackoff backoff = backoff(TestSeed.random("RestBackoffTest.theJitterStaysBetween", 42));
        long now = 0;
        long previous = backoff.next(now, 1_000);
        for (int i = 0; i < 200; i++) {
            now += SECOND; // always within the forgiving period
            long rest = backoff.next(now, 1_000);
            assertThat(rest).isBetween(1_000L, Math.min(60_000L, 3 * previous));
            previous = rest;
        }
    }

    @Test
    void drawsSpreadPairsRefusedTogether() {
        // two pairs refused at the same moments draw different rests: they do not all come back together
        RestBackoff a = backoff(new Random(1));
        RestBackoff b = backoff(new Random(2));
        a.next(0, 1_000);
        b.next(0, 1_000);
        List<Long> restsA = new ArrayList<>();
        List<Long> restsB = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            restsA.add(a.next(i * SECOND, 1_000));
            restsB.add(b.next(i * SECOND, 1_000));
        }
        assertThat(restsA).isNotEqualTo(restsB);
    }

    @Test
    void aQuietPeriodForgivesAndAShorterOneDoesNot() {
        RestBackoff backoff = backoff(highest());
        backoff.next(0, 1_000);
        assertThat(backoff.next(10 * SECOND, 1_000)).as("9 s after the first rest ended").isEqualTo(3_000);
        // the 3 s rest ends at 13 s; quiet from then
        assertThat(backoff.forgiven(23 * SECOND - 1)).isFalse();
        assertThat(backoff.forgiven(23 * SECOND)).isTrue();
        assertThat(backoff.next(23 * SECOND, 1_000)).as("10 s quiet: a first 429 again").isEqualTo(1_000);
    }

    @Test
    void aHugeAskIsTheCapAndTheSettingsAreBounded() {
        assertThat(backoff(highest()).next(0, Long.MAX_VALUE)).isEqualTo(60_000);
        assertThatIllegalArgumentException().isThrownBy(() -> new RestBackoff.Policy(1_000, 60_000,
                TimeUnit.DAYS.toMillis(2), new Random())).withMessageContaining("example.forgiveAfter");
    }
}
