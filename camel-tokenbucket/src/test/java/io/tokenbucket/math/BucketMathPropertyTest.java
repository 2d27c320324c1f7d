package io.tokenbucket.math;

import java.math.BigInteger;
import java.util.Random;
import java.util.function.Supplier;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.MAX_DEBT_TICKS;
import static io.tokenbucket.math.BucketMath.MAX_WAIT_TICKS;
import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * The math over the whole range of its inputs: capacities, refills and periods from 1 to {@code Long.MAX_VALUE},
 * clocks anywhere in the range of a {@code long} (a nanosecond clock may be near either end, and wraps), any
 * stored state, any cost, penalty and refund. Each case is checked against the same steps done in
 * {@link BigInteger} arithmetic, which cannot overflow: if a sum wrapped, the two would differ. Random with a
 * fixed seed, drawn mostly from the edges of each range, so a failure repeats.
 */
class BucketMathPropertyTest {

    private static final int CASES = 100_000;
    private static final long[] EDGES = {
        0, 1, 2, 3, 999, 1000, 1001, Integer.MAX_VALUE, 1L << 53, MAX_WAIT_TICKS - 1, MAX_WAIT_TICKS,
        MAX_WAIT_TICKS + 1, Limit.MAX_BURST_TICKS, MAX_DEBT_TICKS, Long.MAX_VALUE / 2, Long.MAX_VALUE - 1,
        Long.MAX_VALUE,
    };

    private final Random random = TestSeed.random("BucketMathPropertyTest", 20261201L);

    /** A positive long, from the edges of the range more often than not. */
    private long positive() {
        return switch (random.nextInt(4)) {
            case 0 -> Math.max(1, EDGES[random.nextInt(EDGES.length)]);
            case 1 -> 1 + random.nextInt(1000);
            case 2 -> 1 + (random.nextLong() >>> 1) % (1L << (1 + random.nextInt(62)));
            default -> Math.max(1, random.nextLong() >>> 1);
        };
    }

    /** Any long, edges and their negatives first. */
    private long any() {
        long edge = EDGES[random.nextInt(EDGES.length)];
        return switch (random.nextInt(4)) {
            case 0 -> edge;
            case 1 -> -edge;
            case 2 -> Long.MIN_VALUE + edge;
            default -> random.nextLong();
        };
    }

    /** A limit of any refill whose burst fits ({@link Limit#of} refuses the others: {@code LimitTest}). */
    private Limit limit() {
        long refillAmount = positive();
        long refillPeriod = positive();
        long interval = Math.max(1, -Math.floorDiv(-refillPeriod, refillAmount));
        if (interval > Limit.MAX_BURST_TICKS) { // one token would take longer than the longest burst
            refillPeriod = Limit.MAX_BURST_TICKS;
            refillAmount = 1;
            interval = refillPeriod;
        }
        long largest = Limit.MAX_BURST_TICKS / interval;
        long capacity = random.nextInt(4) == 0 ? largest : 1 + Math.floorMod(positive(), largest);
        return Limit.of(capacity, refillAmount, refillPeriod);
    }

    /** A state {@code delta} from {@code now}: in debt, full, or anything at all (a state from elsewhere). */
    private long stateNear(long now, Limit limit) {
        return switch (random.nextInt(4)) {
            case 0 -> now + random.nextLong(Math.max(1, limit.burst())) ;
            case 1 -> now + limit.burst() + Math.max(0, positive() % Math.max(1, MAX_WAIT_TICKS));
            case 2 -> now - positive();
            default -> any();
        };
    }

    private long tokens(Limit limit) {
        return switch (random.nextInt(3)) {
            case 0 -> 1;
            case 1 -> limit.capacity();
            default -> 1 + Math.floorMod(random.nextLong(), limit.capacity());
        };
    }

    private static BigInteger big(long v) {
        return BigInteger.valueOf(v);
    }

    /** One drawn case: a limit, a clock reading, a state near it, a cost; shown when an assertion fails. */
    private record Case(int number, Limit limit, long now, long tat, long tokens) {
        @Override
        public String toString() {
            return "case " + number + ": " + limit + ", tat " + tat + ", now " + now + ", tokens " + tokens;
        }
    }

    private Case draw(int number) {
        Limit limit = limit();
        long now = any();
        return new Case(number, limit, now, stateNear(now, limit), tokens(limit));
    }

    /** {@link BucketMath#debt} as the reference reads a state: the wrapping difference, clamped. */
    private static BigInteger debt(long tat, long now) {
        long d = tat - now;
        return d <= 0 ? BigInteger.ZERO : big(Math.min(d, MAX_DEBT_TICKS));
    }

    @Test
    void reserveIsTheReferenceMathWithoutOverflowAnywhereInTheRange() {
        for (int i = 0; i < CASES; i++) {
            Case c = draw(i);
            Limit limit = c.limit();
            long now = c.now();
            long tat = c.tat();
            long tokens = c.tokens();
            long maxWait = random.nextBoolean() ? NO_LIMIT : any();
            Steps.One d = Steps.reserve(tat, now, tokens, limit, maxWait);

            BigInteger debt = debt(tat, now);
            BigInteger newDebt = debt.add(big(tokens).multiply(big(limit.interval())));
            BigInteger wait = newDebt.subtract(big(limit.burst())).max(BigInteger.ZERO);
            boolean granted = wait.compareTo(big(Math.min(maxWait, MAX_WAIT_TICKS))) <= 0;
            Supplier<String> at = () -> c + ", maxWait " + maxWait;
            assertThat(d.waitTicks()).as(at).isEqualTo(wait.longValueExact()).isNotNegative();
            assertThat(d.granted()).as(at).isEqualTo(granted);
            assertThat(d.remaining()).as(at).isBetween(0L, limit.capacity());
            if (granted) {
                assertThat(d.waitTicks()).as(at).isLessThanOrEqualTo(MAX_WAIT_TICKS);
                // the stored debt is exactly the reference's: nothing wrapped on the way
                assertThat(big(d.tatTicks(0) - now)).as(at).isEqualTo(newDebt);
                assertThat(BucketMath.isFull(d.tatTicks(0), now)).as(at).isFalse();
            } else {
                assertThat(d.tatTicks(0)).as(at).isEqualTo(tat);
            }
        }
    }

    /**
     * The scalar reservation of the lock-free path is the step: on every drawn case, with waits accepted at, just
     * under and just over the case's own wait, at and around the ceiling, none, negative and any, it stores what
     * {@link BucketMath#decide} stores and answers what it answers.
     */
    @Test
    void theScalarReservationOfOneLimitIsTheStep() {
        int granted = 0;
        int refusedAtItsOwnWait = 0;
        for (int i = 0; i < CASES; i++) {
            Case c = draw(i);
            long wait = Steps.peek(c.tat(), c.now(), c.tokens(), c.limit()).waitTicks();
            long maxWait = switch (random.nextInt(9)) {
                case 0 -> wait;
                case 1 -> wait - 1;
                case 2 -> wait + 1;
                case 3 -> MAX_WAIT_TICKS;
                case 4 -> MAX_WAIT_TICKS + 1;
                case 5 -> 0;
                case 6 -> random.nextBoolean() ? -1 : Long.MIN_VALUE;
                case 7 -> NO_LIMIT;
                default -> any();
            };
            Steps.One step = Steps.reserve(c.tat(), c.now(), c.tokens(), c.limit(), maxWait);
            long next = OneLimitReservation.reserve(c.tat(), c.now(), c.tokens(), c.limit(), maxWait);
            Supplier<String> at = () -> c + ", maxWait " + maxWait;
            assertThat(next).as(at).isEqualTo(step.tatTicks(0));
            assertThat(OneLimitReservation.answer(c.tat(), next, c.now(), c.tokens(), c.limit())).as(at)
                    .isEqualTo(step.outcome());
            granted += step.granted() ? 1 : 0;
            refusedAtItsOwnWait += !step.granted() && maxWait == wait - 1 && wait <= MAX_WAIT_TICKS ? 1 : 0;
        }
        // both answers, and refusals one tick short of the wait, must be common, or this compares little
        assertThat(granted).as("grants, of %d", CASES).isBetween(CASES / 5, CASES * 4 / 5);
        assertThat(refusedAtItsOwnWait).as("refused one tick short, of %d", CASES).isGreaterThan(CASES / 20);
    }

    @Test
    void theScalarReservationRefusesImpossibleCostsAsTheStepDoes() {
        Limit limit = Limit.of(5, 1, 10);
        for (long tokens : new long[] {0, -1, 6, Long.MAX_VALUE, Long.MIN_VALUE}) {
            String stepMessage = catchThrowableOfType(IllegalArgumentException.class,
                    () -> Steps.reserve(0, 0, tokens, limit, NO_LIMIT)).getMessage();
            assertThat(catchThrowableOfType(IllegalArgumentException.class,
                    () -> OneLimitReservation.reserve(0, 0, tokens, limit, NO_LIMIT))).as("tokens %d", tokens)
                    .hasMessage(stepMessage);
        }
    }

    @Test
    void peekRefundAndPenaltyAreTheReferenceMathWithoutOverflow() {
        for (int i = 0; i < CASES; i++) {
            Case c = draw(i);
            Limit limit = c.limit();
            long now = c.now();
            long tat = c.tat();
            long tokens = c.tokens();
            Supplier<String> at = c::toString;
            BigInteger debt = debt(tat, now);

            Steps.One peek = Steps.peek(tat, now, tokens, limit);
            BigInteger wait = debt.add(big(tokens).multiply(big(limit.interval()))).subtract(big(limit.burst()))
                    .max(BigInteger.ZERO);
            assertThat(peek.waitTicks()).as(at).isEqualTo(wait.longValueExact());
            assertThat(peek.granted()).as(at).isEqualTo(peek.waitTicks() == 0);
            assertThat(peek.tatTicks(0)).as(at).isEqualTo(tat);

            // any number of tokens may be given back; the bucket fills, never beyond full
            long back = random.nextBoolean() ? positive() : tokens;
            long refunded = limit.refund(tat, now, back);
            BigInteger expected = debt.signum() == 0 ? null : debt.subtract(big(back)
                    .multiply(big(limit.interval()))).max(BigInteger.ZERO);
            if (expected == null) {
                assertThat(refunded).as(at).isEqualTo(tat);
            } else {
                assertThat(big(refunded - now)).as(() -> at.get() + ", refund " + back).isEqualTo(expected);
            }

            // a penalty of any length: no token before it ends (or, past the ceiling, no token at all)
            long penalty = random.nextBoolean() ? positive() : any() & Long.MAX_VALUE;
            long penalized = limit.penalize(tat, now, penalty);
            BigInteger owed = big(Math.min(penalty, MAX_WAIT_TICKS)).add(big(limit.burst()))
                    .subtract(big(limit.interval())).max(debt);
            assertThat(big(penalized - now)).as(() -> at.get() + ", penalty " + penalty).isEqualTo(owed);
            Steps.One after = Steps.reserve(penalized, now, 1, limit, NO_LIMIT);
            assertThat(!after.granted() || after.waitTicks() >= Math.min(penalty, MAX_WAIT_TICKS))
                    .as(() -> at.get() + ", penalty " + penalty + ": " + after).isTrue();
        }
    }

    @Test
    void aDebtThatKeepsGrowingIsRefusedAtTheCeilingAndNeverWrapsIntoAnAdmission() {
        int refused = 0;
        for (int i = 0; i < 2_000; i++) {
            Limit slow = limit();
            long now = any();
            long tat = now;
            long lastWait = -1;
            // in delay mode without maxWait every reservation commits: the debt grows by a cost each time
            for (int n = 0; n < 64; n++) {
                Steps.One d = Steps.reserve(tat, now, slow.capacity(), slow, NO_LIMIT);
                if (!d.granted()) {
                    assertThat(d.waitTicks()).isGreaterThan(MAX_WAIT_TICKS);
                    assertThat(d.tatTicks(0)).isEqualTo(tat);
                    refused++;
                    break;
                }
                assertThat(d.waitTicks()).as("%s at %d, reservation %d", slow, now, n).isGreaterThan(lastWait);
                lastWait = d.waitTicks();
                tat = d.tatTicks(0);
            }
        }
        // the generator must reach the ceiling often, or this test checks only growing waits
        assertThat(refused).as("runs that reached the ceiling, of 2,000").isGreaterThan(500);
    }

    @Test
    void severalLimitsWaitForTheLatestAndEachIsChargedAtTheRelease() {
        for (int i = 0; i < CASES / 4; i++) {
            Limits limits = Limits.of(limit(), limit(), limit());
            long now = any();
            long[] tats = new long[3];
            for (int k = 0; k < 3; k++) {
                tats[k] = stateNear(now, limits.get(k));
            }
            long tokens = 1 + Math.floorMod(random.nextLong(), limits.capacity());
            long maxWait = random.nextBoolean() ? NO_LIMIT : any();
            Steps.One d = Steps.reserve(tats, now, tokens, limits, maxWait);
            long latest = 0;
            for (int k = 0; k < 3; k++) {
                latest = Math.max(latest, Steps.peek(tats[k], now, tokens, limits.get(k)).waitTicks());
            }
            assertThat(d.waitTicks()).isEqualTo(latest);
            assertThat(d.granted()).isEqualTo(latest <= Math.min(maxWait, MAX_WAIT_TICKS));
            for (int k = 0; k < 3; k++) {
                // each limit as a reservation of its own at the common release instant, on its state as read now
                long readNow = now + BucketMath.debt(tats[k], now);
                long expected = d.granted() ? Steps.reserve(readNow, now + d.waitTicks(), tokens, limits.get(k),
                        NO_LIMIT).tatTicks(0) : tats[k];
                assertThat(d.tatTicks(k)).isEqualTo(expected);
            }
        }
    }

    @Test
    void aClockThatWrapsAroundChangesNoRelease() {
        Limit limit = Limit.of(7, 3, 1000); // interval 334
        // a request every 7 ticks saturates the bucket: its 7 tokens at once, then one every 334 ticks
        StringBuilder expected = new StringBuilder();
        int arrivals = (5_000 + 6) / 7;
        for (int j = 0; j < arrivals; j++) {
            expected.append(j < 7 ? 7L * j : (j - 6) * 334L).append(',');
        }
        for (long start : new long[] {0, Long.MAX_VALUE - 5_000, Long.MIN_VALUE, -7_000}) {
            // the releases, as offsets from the start, are the same wherever the clock starts
            assertThat(releasesFrom(limit, start)).as("from %d", start).isEqualTo(expected.toString());
        }
    }

    /** The release offsets of a request every 7 ticks for 5,000 ticks from {@code start}, a full bucket. */
    private static String releasesFrom(Limit limit, long start) {
        long tat = start - 1;
        StringBuilder releases = new StringBuilder();
        for (long t = 0; t < 5_000; t += 7) {
            Steps.One d = Steps.reserve(tat, start + t, 1, limit, NO_LIMIT);
            tat = d.tatTicks(0);
            releases.append(t + d.waitTicks()).append(',');
        }
        return releases.toString();
    }
}
