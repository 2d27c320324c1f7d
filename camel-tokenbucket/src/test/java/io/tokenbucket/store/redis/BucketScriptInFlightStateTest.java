package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.store.AdaptiveStoreContract.get;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bucket.lua} on in-flight states no script writes (someone SET the key, or a version to come wrote more):
 * words where slots and tickets belong, odd counts, numbers that are no expiry. Every operation still answers, never
 * with a script error; a slot it then takes is held (the next reservation of a one-slot key is refused for it) and
 * its release gives it back; what it writes back is a state the script reads again.
 */
class BucketScriptInFlightStateTest {

    private static final String[] GARBAGE = {
        "s", "s q", "q s", "s q q q", "s x", "s x 1", "s x nan", "s x inf", "s x -inf", "s x 1e400", "s 1 2 3",
        "s s s s s", "r s q", "r 1 2 3 s", "5 r s x", "abc s x 99999999999999999999", "s x 1 q", "s q y 1",
        "s x 1 y", "1 2 s q y nan z", "s \u00e9 1 q \u00e9 2", "s x 1e15 q y 1e15",
    };

    @Test
    void stateWordsNoScriptWritesNeverFailAndNeverLoseANewSlot() {
        List<String> failures = new ArrayList<>();
        try (RedisHandle redis = RedisServers.shared()) {
            redis.flushAll();
            RedisConnections connections = new RedisConnections();
            RedisConnections.Lease connection = connections.acquire(redis.uri(), Duration.ofSeconds(5));
            RedisBucketStore store = new RedisBucketStore(connection::commands, false, "garbage:",
                    Duration.ofSeconds(5), false, size -> { });
            List<Limits> kinds = List.of(Limits.inFlightOnly(1),
                    Limits.of(Limit.of(100, 100, TimeUnit.SECONDS.toNanos(1))).withInFlight(1));
            int n = 0;
            int granted = 0;
            for (String garbage : GARBAGE) {
                for (Limits one : kinds) {
                    String key = "k" + n++;
                    String stored = garbage.replace("1e15", String.valueOf(
                            TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis()) + 60_000_000L));
                    redis.command("SET", store.redisKey(key), stored, "PX", "60000");
                    try {
                        get(store.peek(key, one, 1));
                        get(store.refund(key, one, 1));
                        get(store.remove(key, one));
                        redis.command("SET", store.redisKey(key), stored, "PX", "60000");
                        StoreCommand.Lease mine = new StoreCommand.Lease("mine", TimeUnit.MINUTES.toNanos(1));
                        Outcome taken = get(store.execute(new StoreCommand(List.of(key), Step.reserve(one, 1, 0), mine)));
                        if (!taken.granted()) { // a word read as a live slot or ticket holds it
                            continue;
                        }
                        granted++;
                        StoreCommand.Lease other = new StoreCommand.Lease("other", TimeUnit.MINUTES.toNanos(1));
                        Outcome second = get(store.execute(new StoreCommand(List.of(key), Step.reserve(one, 1, 0),
                                other)));
                        if (!second.slotless()) {
                            failures.add("'" + garbage + "' " + one + ": the slot taken was lost, state now '"
                                    + redis.command("GET", store.redisKey(key)) + "'");
                        }
                        get(store.execute(new StoreCommand(List.of(key), new Step(Step.Op.RELEASE, new int[] {1},
                                List.of(one), 0, 0), mine)));
                        Outcome after = get(store.peek(key, one, 1));
                        if (after.slotless()) {
                            failures.add("'" + garbage + "' " + one + ": the release gave nothing back, state now '"
                                    + redis.command("GET", store.redisKey(key)) + "'");
                        }
                    } catch (RuntimeException e) {
                        failures.add("'" + garbage + "' " + one + ": " + e);
                    }
                }
            }
            store.close();
            connections.close();
            assertThat(granted).as("states where a slot was taken").isGreaterThan(GARBAGE.length);
        }
        assertThat(failures).isEmpty();
    }
}
