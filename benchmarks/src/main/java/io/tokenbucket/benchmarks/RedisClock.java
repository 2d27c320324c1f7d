package io.tokenbucket.benchmarks;

import java.util.List;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * Maps the Redis clock ({@code TIME}, microseconds since the epoch: the clock our Redis store schedules by) to this
 * JVM's {@link System#nanoTime()}, for measurement 6 on Redis.
 *
 * <p>Each {@link #sample()} sends {@code TIME} 200 times and keeps the reply with the shortest round trip, taking
 * the Redis reading to have been made at the middle of it: the offset is then known to within half that round trip
 * (tens of microseconds on loopback). Two samples (at the start and the end of a run) give the drift between the
 * clocks, and conversions interpolate between them.
 */
final class RedisClock implements AutoCloseable {

    private static final int PROBES = 200;

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> commands;
    // offset = redis nanos - local nanoTime, at local time at, with the round trip it was measured with
    private final long[] at = new long[2];
    private final long[] offset = new long[2];
    private final long[] roundTrip = new long[2];
    private int samples;

    RedisClock(String uri) {
        client = RedisClient.create(uri);
        connection = client.connect();
        commands = connection.sync();
        sample();
    }

    /** Measures the offset now (at most twice: the first and the last sample are kept). */
    void sample() {
        long bestRtt = Long.MAX_VALUE;
        long bestOffset = 0;
        long bestAt = 0;
        for (int i = 0; i < PROBES; i++) {
            long before = System.nanoTime();
            List<String> time = commands.time();
            long after = System.nanoTime();
            if (after - before < bestRtt) {
                bestRtt = after - before;
                long redisNanos = (Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1))) * 1000;
                bestAt = before + (after - before) / 2;
                bestOffset = redisNanos - bestAt;
            }
        }
        int slot = Math.min(samples, 1);
        at[slot] = bestAt;
        offset[slot] = bestOffset;
        roundTrip[slot] = bestRtt;
        samples++;
    }

    /** The bucket state of {@code redisKey}: its {@code tat} in Redis microseconds (the first limit's). */
    long tatMicros(String redisKey) {
        String value = commands.get(redisKey);
        if (value == null) {
            throw new IllegalStateException(redisKey + " holds no bucket state: the bucket was never busy");
        }
        return Long.parseLong(value.trim().split(" ")[0]);
    }

    /** The {@link System#nanoTime()} at which the Redis clock read {@code redisMicros}. */
    long toNanoTime(long redisMicros) {
        long redisNanos = redisMicros * 1000;
        long local = redisNanos - offset[0];
        if (samples > 1 && at[1] != at[0]) {
            double drift = (double) (offset[1] - offset[0]) / (at[1] - at[0]);
            local = redisNanos - (offset[0] + Math.round(drift * (local - at[0])));
        }
        return local;
    }

    /** The offsets measured, their uncertainty and the drift, for the report. */
    String describe() {
        String first = String.format("offset known to ±%.3f ms (half the best of %d TIME round trips)",
                roundTrip[0] / 2e6, PROBES);
        if (samples < 2) {
            return first;
        }
        return first + String.format("; at the end ±%.3f ms; drift between the clocks %.3f ms over %.1f s"
                + " (corrected linearly)", roundTrip[1] / 2e6, (offset[1] - offset[0]) / 1e6, (at[1] - at[0]) / 1e9);
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
