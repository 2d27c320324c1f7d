package io.tokenbucket.benchmarks;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.tokenbucket.benchmarks.ClosedLoop.Case;
import io.tokenbucket.benchmarks.ClosedLoop.Peer;
import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.benchmarks.RedisBenchmark.Ceiling;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;

/**
 * Measurement 2: acquire throughput and latency against one Redis from one JVM, a closed-loop load driver (not
 * JMH): {@code inFlight} requests are kept outstanding for a fixed time after a warm-up; each completion records
 * its latency (HdrHistogram) and issues the next request on a key drawn at random (or the one hot key).
 *
 * <p>Peers, each on its own single Lettuce connection to the same {@code redis-server} (started here, see
 * {@link RedisServers}), and run alternately, case by case, for {@code rounds} rounds:
 * <ul>
 * <li><b>ours</b>: {@link RedisBucketStore#reserve} in reject mode (max wait 0), on a connection from
 * {@link RedisConnections} exactly as an endpoint with {@code store=redis} gets it (store timeout 1 s): one
 * {@code EVALSHA bucket.lua} per acquire;</li>
 * <li><b>bucket4j</b>: Bucket4j-Lettuce's CAS proxy manager ({@code Bucket4jLettuce.casBasedBuilder}),
 * asynchronous ({@code asAsync()}), {@code tryConsume(1)} on a proxy built once per key; its Lettuce client has
 * the same options as ours (reject when disconnected, 1 s command timeout); a {@code GET} then a compare-and-set
 * {@code EVAL} per acquire, retried on conflict;</li>
 * <li><b>redis-benchmark</b> (when on the {@code PATH}): the same script with the same {@code EVALSHA} arguments as
 * our store sends (captured from our store's own command and checked before use), keys from
 * {@code __rand_int__} with {@code -r keys}: {@code -c 4 -P 16} (64 in flight, pipelined) as the ceiling for the
 * random-key cases, {@code -c 25 -P 16} (400 in flight) on the one hot key, and {@code -c 1 -P 1} (one request at
 * a time) as the reference for the 1-in-flight case: what a C client gets one request at a time.</li>
 * </ul>
 * Besides the peers, a diagnosis: <b>bare-evalsha</b> ({@link RedisPeers#bareEvalsha}) sends our store's
 * {@code EVALSHA} straight through Lettuce, so ours ÷ bare is the cost of our Java side; and after every run Redis's own
 * {@code INFO commandstats} (reset when the measured seconds start) gives the commands and server microseconds
 * per acquire ({@link Commandstats#perAcquire}).
 * Limits: for the random-key cases a limit that never binds but keeps state for every key (capacity 1,000,000,
 * one token per second back: at most a few hundred acquires reach a key in a run), so every call reads and writes
 * a live state; for the hot key, capacity 100 and 10,000 per second, which binds: admitted and rejected are
 * reported. {@code FLUSHALL} before every run. The peers are {@link RedisPeers}'; the loop, {@link ClosedLoop}; the
 * tables, {@link RedisAcquireReport}.
 *
 * <pre>java -jar benchmarks.jar redis [seconds=5] [warmupSeconds=2] [rounds=3] [keys=10000] [cases=1,16,64,hot400]</pre>
 */
public final class RedisAcquire {

    private RedisAcquire() {
    }

    public static void main(String[] args) throws Exception {
        run(args);
    }

    /** Runs what {@link #main} runs and answers every run of every peer, keyed {@code "<peer> <case>"}. */
    static Map<String, List<Run>> run(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        double warmup = args.length > 1 ? Double.parseDouble(args[1]) : 2;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int keys = args.length > 3 ? Integer.parseInt(args[3]) : 10_000;
        List<Case> cases = Arrays.stream((args.length > 4 ? args[4] : "1,16,64,hot400").split(","))
                .map(Case::parse).toList();
        String[] keyNames = new String[keys];
        for (int i = 0; i < keys; i++) {
            keyNames[i] = RedisBenchmark.randKey(i);
        }

        try (RedisHandle redis = RedisServers.standalone();
             RedisClient admin = RedisClient.create(redis.uri());
             StatefulRedisConnection<String, String> adminConnection = admin.connect()) {
            var adminCommands = adminConnection.sync();
            System.out.printf("measurement 2: Redis acquire, one JVM; %s on %s; JVM %s %s; %d cores; %d keys;"
                    + " %s s measured after %s s warm-up, %d rounds%n", RedisServers.describe(), redis.uri(),
                    System.getProperty("java.vm.name"), System.getProperty("java.vm.version"),
                    Runtime.getRuntime().availableProcessors(), keys, seconds, warmup, rounds);

            List<String> rbFree = RedisBenchmark.checkedArgs(redis, false);
            List<String> rbHot = RedisBenchmark.checkedArgs(redis, true);
            Path rb = RedisServers.findOnPath("redis-benchmark");
            if (rb == null) {
                System.out.println("redis-benchmark: skipped: redis-benchmark not on PATH"
                        + " (Debian: apt-get install -y redis-tools)");
            } else {
                System.out.println("redis-benchmark: " + RedisBenchmark.version(rb));
            }

            try (Peer ours = RedisPeers.ours(redis, true); Peer unbatched = RedisPeers.ours(redis, false);
                 Peer bucket4j = RedisPeers.bucket4j(redis, keyNames);
                 Peer bare = RedisPeers.bareEvalsha(redis, rbFree, rbHot)) {
                Map<String, List<Run>> results = new LinkedHashMap<>();
                Map<String, List<Ceiling>> ceilings = new LinkedHashMap<>();
                for (int round = 1; round <= rounds; round++) {
                    for (Case c : cases) {
                        // alternate who goes first, so neither always runs on a warmer (or busier) machine
                        List<Peer> order = round % 2 == 1 ? List.of(ours, unbatched, bucket4j, bare)
                                : List.of(bucket4j, unbatched, ours, bare);
                        for (Peer p : order) {
                            adminCommands.flushall();
                            Run r = ClosedLoop.drive(p, c, keyNames, warmup, seconds, adminCommands::configResetstat);
                            results.computeIfAbsent(p.name() + " " + c.name(), k -> new ArrayList<>()).add(r);
                            RedisAcquireReport.print(round, p.name(), c, r);
                            System.out.println("         server side, per acquire: "
                                    + Commandstats.perAcquire(adminCommands.info("commandstats"), r));
                        }
                    }
                    if (rb != null) {
                        for (String[] spec : new String[][] {{"4", "16", "free"}, {"25", "16", "hot"},
                                {"1", "1", "free"}}) {
                            boolean hot = spec[2].equals("hot");
                            adminCommands.flushall();
                            String name = "redis-benchmark -c " + spec[0] + " -P " + spec[1] + (hot ? " hot" : "");
                            Ceiling r = RedisBenchmark.run(rb, redis, Integer.parseInt(spec[0]),
                                    Integer.parseInt(spec[1]), hot ? rbHot : rbFree, keys, seconds);
                            ceilings.computeIfAbsent(name, k -> new ArrayList<>()).add(r);
                            System.out.printf("round %d  %-32s %,12.0f ops/s  p50 %7.3f ms  p99 %7.3f ms"
                                    + "  (%,d requests)%n", round, name, r.opsPerSecond(), r.p50Ms(), r.p99Ms(),
                                    r.requests());
                        }
                    }
                }
                RedisAcquireReport.summary(cases, results, ceilings);
                return results;
            }
        }
    }

    // ---------------------------------------------------------------- output
}
