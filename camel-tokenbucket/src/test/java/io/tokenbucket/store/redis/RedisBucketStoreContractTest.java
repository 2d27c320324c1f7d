package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.BucketStoreContract;
import io.tokenbucket.store.Rate;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The store contract against a real standalone Redis, plus what only Redis has: TTLs and script reloading. */
class RedisBucketStoreContractTest extends BucketStoreContract {

    private static RedisHandle redis;
    private static RedisConnections connections;
    private static RedisConnections.Lease lease;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.shared();
        redis.flushAll();
        connections = new RedisConnections();
        lease = connections.acquire(redis.uri(), Duration.ofSeconds(5));
    }

    @AfterAll
    static void stopRedis() {
        if (connections != null) {
            connections.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected BucketStore newStore(String namespace) {
        RedisConnections.Lease current = lease;
        return new RedisBucketStore(current::commands, false, namespace, Duration.ofSeconds(5), batching(),
                size -> { });
    }

    /** Whether the store batches reservations queued behind a call in flight; the batched subclass says true. */
    boolean batching() {
        return false;
    }

    private RedisClusterAsyncCommands<String, String> redisCommands() {
        return lease.commands();
    }

    @Test
    void anIdleKeyExpiresWhenItsBucketIsFullAgain() throws Exception {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit tenPerSecond = Limit.of(10, 10, 1000 * MS);
        reserve("ttl", tenPerSecond, 4, 0);
        long pttl = redisCommands().pttl(redisStore.redisKey("ttl")).get(5, TimeUnit.SECONDS);
        assertThat(pttl).as("PTTL: the 400 ms until the 4 tokens are back").isBetween(400 - slackMs(), 400L);

        Limit hourly = Limit.of(2, 1, HOUR);
        reserve("hourly", hourly, 2, 0);
        long ttl = redisCommands().ttl(redisStore.redisKey("hourly")).get(5, TimeUnit.SECONDS);
        assertThat(ttl).as("TTL in seconds: two hours until full").isBetween(7190L, 7200L);

        // a refused reservation writes nothing, a full bucket has no key at all
        Limit one = Limit.of(1, 1, 60_000 * MS);
        assertThat(reserve("untouched", one, 1, 0).granted()).isTrue();
        get(store.refund("untouched", Limits.of(one), 1));
        assertThat(redisCommands().exists(redisStore.redisKey("untouched")).get(5, TimeUnit.SECONDS)).isZero();
    }

    @Test
    void anAdaptiveRateLivesInTheBucketsKeyAndExpiresWithItsMemory() throws Exception {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limits ten = Limits.of(Limit.of(1, 10, 1000 * MS))
                .withAdaptive(Adaptive.of(100_000, 500_000, 100_000, 0, 60_000 * MS));
        get(store.throttle("aimd", ten));
        String state = redisCommands().get(redisStore.redisKey("aimd")).get(5, TimeUnit.SECONDS);
        assertThat(state).as("the rate state, the cut's factor last").matches("\\d+ r 500000 0 \\d+ 0 1000000");
        long pttl = redisCommands().pttl(redisStore.redisKey("aimd")).get(5, TimeUnit.SECONDS);
        assertThat(pttl).as("PTTL: full again in 200 ms, then the memory").isBetween(60_200 - slackMs(), 60_200L);
        // a reservation with fixed limits on the same key reads the tats and drops the rate it does not know
        reserve("aimd", Limit.of(1, 10, 1000 * MS), 1, BucketMath.NO_LIMIT);
        assertThat(redisCommands().get(redisStore.redisKey("aimd")).get(5, TimeUnit.SECONDS)).doesNotContain("r");
    }

    @Test
    void aStartingRateIsStoredWithItsFlagAndAFreshOneIsNot() throws Exception {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        // starting at 0.25: 400 ms a token, a step per ceil(10 × 0.25) = 3 tokens
        Limits slow = Limits.of(Limit.of(1, 10, 1000 * MS))
                .withAdaptive(Adaptive.of(100_000, 500_000, 100_000, 0, 60_000 * MS).withStart(250_000));
        String key = redisStore.redisKey("slow");
        // a peek and a question about the rate write nothing: the fresh state is no state
        assertThat(Rate.of(get(store.rate("slow", slow)))).isEqualTo(new Rate(false, 250_000, true));
        assertThat(redisCommands().exists(key).get(5, TimeUnit.SECONDS)).isZero();
        assertThat(get(store.reserve("slow", slow, 1, 0)).granted()).isTrue();
        String state = redisCommands().get(key).get(5, TimeUnit.SECONDS);
        assertThat(state).matches("\\d+ r 250000 1 0 1");
        long pttl = redisCommands().pttl(key).get(5, TimeUnit.SECONDS);
        assertThat(pttl).as("PTTL: full again in 400 ms, then the memory").isBetween(60_400 - slackMs(), 60_400L);
        // a state written before the slow start (three numbers after 'r') reads as past its start
        long tat = Long.parseLong(state.substring(0, state.indexOf(' ')));
        redisCommands().set(key, tat + " r 500000 0 " + tat).get(5, TimeUnit.SECONDS);
        assertThat(Rate.of(get(store.rate("slow", slow)))).isEqualTo(new Rate(false, 500_000, false));
        // a fourth number that is neither 0 nor 1 is no rate state: the fresh one
        redisCommands().set(key, tat + " r 500000 0 " + tat + " 2").get(5, TimeUnit.SECONDS);
        assertThat(Rate.of(get(store.rate("slow", slow)))).isEqualTo(new Rate(false, 250_000, true));
    }

    @Test
    void aFlushedScriptIsLoadedAgainWithoutLosingState() throws Exception {
        Limit three = Limit.of(3, 1, HOUR);
        assertThat(reserve("flush", three, 2, 0).remaining()).isEqualTo(1);
        redisCommands().scriptFlush().get(5, TimeUnit.SECONDS);
        Outcome afterFlush = reserve("flush", three, 1, 0);
        assertThat(afterFlush.granted()).isTrue();
        assertThat(afterFlush.remaining()).isZero();
        assertThat(reserve("flush", three, 1, 0).granted()).isFalse();
        redisCommands().scriptFlush().get(5, TimeUnit.SECONDS);
        assertThat(get(store.peek("flush", Limits.of(three), 1)).waitTicks()).isGreaterThan(HOUR - slackNanos());
    }

    @Test
    void theKeyHoldsTheStateInMicrosecondsOfTheRedisClock() throws Exception {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit one = Limit.of(1, 1, 1000 * MS);
        reserve("clock", one, 1, BucketMath.NO_LIMIT);
        long tat = Long.parseLong(redisCommands().get(redisStore.redisKey("clock")).get(5, TimeUnit.SECONDS));
        long redisNow = redisNowMicros();
        assertThat(tat - redisNow).isBetween((1000 - slackMs()) * 1000L, 1000 * 1000L);
    }

    @Test
    void aStateOfSeveralNumbersReadUnderOneLimitDecidesLikeItsFirstNumber() throws Exception {
        // bucket.lua's one-key one-limit fast path leaves a state of several numbers (written under more limits)
        // to its general path, which reads the numbers by position: both must decide and write the same
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit tenPerSecond = Limit.of(10, 10, 1000 * MS); // one token every 100 ms = 100,000 us
        long tat = redisNowMicros() + 1_500_000; // 15 tokens owed of 10: the next one in 600 ms
        redisCommands().set(redisStore.redisKey("one"), Long.toString(tat)).get(5, TimeUnit.SECONDS);
        redisCommands().set(redisStore.redisKey("two"), tat + " " + (tat + 7)).get(5, TimeUnit.SECONDS);
        for (String key : new String[] {"one", "two"}) {
            Outcome refused = reserve(key, tenPerSecond, 1, 0);
            assertThat(refused.granted()).as(key).isFalse();
            assertThat(refused.waitTicks()).as(key).isBetween((600 - slackMs()) * MS, 600 * MS);
            assertThat(refused.remaining()).as(key).isZero();
            Outcome waiting = reserve(key, tenPerSecond, 1, BucketMath.NO_LIMIT);
            assertThat(waiting.granted()).as(key).isTrue();
            assertThat(waiting.waitTicks()).as(key).isBetween((600 - slackMs()) * MS, 600 * MS);
            assertThat(redisCommands().get(redisStore.redisKey(key)).get(5, TimeUnit.SECONDS)).as(key)
                    .isEqualTo(Long.toString(tat + 100_000));
        }
    }

    private long redisNowMicros() throws Exception {
        return RedisServers.micros(((io.lettuce.core.api.async.RedisServerAsyncCommands<String, String>)
                redisCommands()).time().get(5, TimeUnit.SECONDS));
    }

    @Test
    void aStateNoScriptWroteIsReadSafely() throws Exception {
        // keys are in a shared Redis: someone may SET one to anything. Far ahead, infinite or not a number: no
        // token and no wrapped wait; before now, or no number at all: a full bucket, as a missing key is
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit tenPerSecond = Limit.of(10, 10, 1000 * MS);
        for (String stored : new String[] {"1e300", "inf", "nan", "99999999999999999999999", "1e300 1e300"}) {
            String key = "hostile-" + stored.replace(' ', '_');
            redisCommands().set(redisStore.redisKey(key), stored).get(5, TimeUnit.SECONDS);
            Outcome r = reserve(key, tenPerSecond, 1, BucketMath.NO_LIMIT);
            assertThat(r.granted()).as(stored).isFalse();
            assertThat(r.waitTicks()).as(stored).isGreaterThan(BucketStore.MAX_WAIT_NANOS);
            assertThat(get(store.peek(key, Limits.of(tenPerSecond), 1)).granted()).as(stored).isFalse();
        }
        for (String stored : new String[] {"-inf", "-1", "abc", "0x10"}) {
            String key = "hostile-" + stored;
            redisCommands().set(redisStore.redisKey(key), stored).get(5, TimeUnit.SECONDS);
            Outcome r = reserve(key, tenPerSecond, 1, 0);
            assertThat(r.granted()).as(stored).isTrue();
            assertThat(r.remaining()).as(stored).isEqualTo(9);
        }
    }

    @Test
    void aLimitTooLargeForTheScriptToComputeExactlyIsRefusedNamingIt() {
        // a capacity of 2^62 at one token per nanosecond: valid in nanoseconds, but its burst in microseconds
        // (the interval rounds up to 1) would be far beyond 2^53
        Limit huge = Limit.of(1L << 60, 1L << 60, 1000 * MS);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> store.reserve("huge", Limits.of(huge), 1, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("too large for store=redis")
                .hasMessageContaining("capacity 1152921504606846976");
    }

    @Test
    void aReplyTheScriptCannotGiveFailsTheCallInsteadOfDecidingOnIt() {
        Limits three = Limits.of(Limit.of(3, 3, 1_000_000_000L));
        java.util.List<Limits> two = java.util.List.of(three, three);
        java.util.List<java.util.List<Long>> bad = java.util.List.of(
                java.util.List.of(1L, 0L, 0L, 1L), // too short
                java.util.List.of(2L, 0L, 0L, 1L, 5L), // granted neither 0 nor 1
                java.util.List.of(1L, -1L, 0L, 1L, 5L), // a negative wait
                java.util.List.of(1L, (1L << 53) + 1, 0L, 1L, 5L), // a wait that would overflow in nanoseconds
                java.util.List.of(1L, 0L, -3L, 1L, 5L), // negative tokens left
                java.util.List.of(1L, 0L, 4L, 1L, 5L), // more tokens left than the capacity
                java.util.List.of(1L, 0L, 0L, 0L, 5L), // no candidate chosen
                java.util.List.of(1L, 0L, 0L, 3L, 5L), // a candidate that was not offered
                java.util.List.of(1L, 0L, 0L, 1L, 0L)); // no clock
        for (java.util.List<Long> reply : bad) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> ScriptReply.parse(reply, two))
                    .as("%s", reply).isInstanceOf(IllegalStateException.class).hasMessageContaining(reply.toString());
        }
        java.util.List<Long> withNull = new java.util.ArrayList<>(java.util.List.of(1L, 0L, 0L, 1L, 5L));
        withNull.set(1, null);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ScriptReply.parse(withNull, java.util.List.of(three)))
                .isInstanceOf(IllegalStateException.class);
        assertThat(ScriptReply.parse(java.util.List.of(1L, 1L << 53, 3L, 2L, 5L), two))
                .as("the largest valid").isEqualTo(new ScriptReply(true, 1L << 53, 3, 1, 5, false));
    }
}
