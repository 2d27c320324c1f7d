package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.RedisPeers.BUCKET4J;
import static io.tokenbucket.benchmarks.RedisPeers.FREE_GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.GCRA_P16;
import static io.tokenbucket.benchmarks.RedisPeers.HOT_GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.OURS;
import static io.tokenbucket.benchmarks.RedisPeers.OURS_SYNC;
import static io.tokenbucket.benchmarks.RedisPeers.PIPELINE;
import static io.tokenbucket.benchmarks.RunCosts.COUNTERS;
import static io.tokenbucket.benchmarks.RunCosts.measure;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.tokenbucket.benchmarks.ClosedLoop.Peer;
import io.tokenbucket.benchmarks.RunCosts.Busy;
import io.tokenbucket.benchmarks.RunCosts.Measured;
import io.tokenbucket.benchmarks.TargetTable.Target;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;

/**
 * The Redis part of {@link Targets}: a {@code redis-server} started here, and on it, for {@code rounds} rounds, each
 * case run by each of its peers ({@link RedisPeers}: ours through a route, Bucket4j, gcra-P16) in the closed loop
 * ({@link ClosedLoop}), the order reversed every other round, {@code FLUSHALL} before each run, its costs read
 * around its measured seconds ({@link RunCosts}); redis-benchmark's cross-check when it is on the {@code PATH}; then
 * where the time goes at one in flight ({@link WhereTheTimeGoes}).
 */
final class TargetsRedis {

    private TargetsRedis() {
    }

    /**
     * Runs every case of {@code s} (those whose name contains {@code --only}), peers alternating, for its rounds;
     * prints each run, the Redis table and where the time goes; adds the Redis rows to {@code targets}; answers the
     * runs by {@code "<peer> <case>"}.
     */
    static Map<String, List<Measured>> run(TargetSettings s, List<Target> targets) throws Exception {
        String[] keyNames = new String[s.keys()];
        for (int i = 0; i < keyNames.length; i++) {
            keyNames[i] = RedisBenchmark.randKey(i);
        }
        List<TargetCase> cases = List.of(
                new TargetCase("random keys, 16 in flight", 16, false, false, List.of(OURS, BUCKET4J, GCRA_P16)),
                new TargetCase("random keys, 64 in flight", 64, false, false, List.of(OURS, BUCKET4J, GCRA_P16)),
                new TargetCase("hot key, 64 in flight", 64, true, false, List.of(OURS, BUCKET4J, GCRA_P16)),
                new TargetCase("hot key, 400 in flight", 400, true, false, List.of(OURS, GCRA_P16)),
                new TargetCase("1 in flight, quiet", 1, false, false, List.of(OURS, OURS_SYNC, BUCKET4J)),
                new TargetCase("1 in flight, other core busy", 1, false, true, List.of(OURS, OURS_SYNC, BUCKET4J)))
                .stream().filter(c -> c.name().contains(s.only())).toList();
        Map<String, List<Measured>> results = new LinkedHashMap<>();
        Map<String, List<Double>> redisBenchmark = new LinkedHashMap<>();
        try (RedisHandle redis = RedisServers.standalone();
             RedisClient admin = RedisClient.create(redis.uri());
             StatefulRedisConnection<String, String> adminConnection = admin.connect()) {
            RedisCommands<String, String> adminCommands = adminConnection.sync();
            String sha = adminCommands.scriptLoad(GCRA);
            System.out.printf("%s on %s, pid %d%n", RedisServers.describe(), redis.uri(), redis.pid());
            Path rb = RedisServers.findOnPath("redis-benchmark");
            System.out.println(rb == null ? "redis-benchmark: not on PATH, its cross-check is skipped"
                    + " (Debian: apt-get install -y redis-tools)" : "redis-benchmark: " + rb);
            System.out.println("ours: tokenbucket: with store=redis" + (s.options().isEmpty() ? ", every other option"
                    + " at its default" : " and " + s.options()));
            try (Peer ours = RedisPeers.route(OURS, redis.uri(), s.options());
                 Peer oursSync = RedisPeers.route(OURS_SYNC, redis.uri(), s.options() + "&synchronous=true");
                 Peer bucket4j = RedisPeers.bucket4j(redis, keyNames)) {
                Map<String, Peer> peers = Map.of(OURS, ours, OURS_SYNC, oursSync, BUCKET4J, bucket4j);
                for (Peer p : peers.values()) {
                    warm(p, keyNames);
                }
                for (int round = 1; round <= s.rounds(); round++) {
                    for (TargetCase c : cases) {
                        List<String> order = new ArrayList<>(c.peers());
                        if (round % 2 == 0) {
                            java.util.Collections.reverse(order);
                        }
                        for (String p : order) {
                            adminCommands.flushall();
                            adminCommands.scriptLoad(GCRA);
                            Measured m;
                            try (Busy busy = c.busy() ? new Busy() : null) {
                                m = measure(redis, adminCommands, busy, () -> p.equals(GCRA_P16)
                                        ? RedisPeers.gcraPipelined(redis, sha, c.driverCase(), keyNames, s.warmup(),
                                        s.seconds(), COUNTERS::start, COUNTERS::end)
                                        : ClosedLoop.drive(peers.get(p), c.driverCase(),
                                        keyNames, s.warmup(), s.seconds(), COUNTERS::start, COUNTERS::end));
                            }
                            results.computeIfAbsent(p + " " + c.name(), k -> new ArrayList<>()).add(m);
                            TargetsReport.print(round, p, c, m);
                        }
                    }
                    if (rb != null && s.only().isEmpty()) {
                        for (boolean hot : new boolean[] {false, true}) {
                            adminCommands.flushall();
                            adminCommands.scriptLoad(GCRA);
                            String[] a = hot ? HOT_GCRA : FREE_GCRA;
                            RedisBenchmark.Ceiling r = RedisBenchmark.run(rb, redis, 4, PIPELINE,
                                    List.of("EVALSHA", sha, "1", hot ? "gcra:hot" : "gcra:key-__rand_int__", a[0],
                                            a[1]),
                                    s.keys(), s.seconds());
                            String name = "redis-benchmark -c 4 -P 16, " + (hot ? "hot key" : "random keys");
                            redisBenchmark.computeIfAbsent(name, k -> new ArrayList<>()).add(r.opsPerSecond());
                            System.out.printf("round %d  %-45s %,10.0f ops/s  p50 %.3f ms  p99 %.3f ms%n", round,
                                    name, r.opsPerSecond(), r.p50Ms(), r.p99Ms());
                        }
                    }
                }
            }
            TargetsReport.summary(cases, results, redisBenchmark);
            for (boolean busy : new boolean[] {false, true}) {
                if ((busy ? "1 in flight, other core busy" : "1 in flight, quiet").contains(s.only())) {
                    WhereTheTimeGoes.run(redis, adminCommands, keyNames, s, busy);
                }
            }
        }
        TargetTable.redis(results, redisBenchmark.get("redis-benchmark -c 4 -P 16, random keys"), targets);
        return results;
    }

    /**
     * Loads and compiles a peer's code before its first measured run (which would otherwise pay for it in its
     * warm-up seconds, or, in a short run, in its measured ones): 20 waves of 64 acquires, random keys and the hot
     * key; any failure is thrown.
     */
    static void warm(Peer p, String[] keys) throws Exception {
        for (int wave = 0; wave < 20; wave++) {
            CompletableFuture<?>[] f = new CompletableFuture<?>[64];
            for (int i = 0; i < f.length; i++) {
                f[i] = p.acquire(keys[ThreadLocalRandom.current().nextInt(keys.length)], i % 2 == 0);
            }
            CompletableFuture.allOf(f).get(30, TimeUnit.SECONDS);
        }
    }
}
