package io.tokenbucket.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.testsupport.redis.RedisHandle;

/**
 * Redis's own C client, {@code redis-benchmark} (when on the {@code PATH}), as the Redis drivers run it: a ceiling
 * for a script call from Java, with the very {@code EVALSHA} our store sends ({@link #checkedArgs}) or another
 * script's. Answers its throughput (requests per second) and latency (milliseconds) as it reports them.
 */
final class RedisBenchmark {

    private RedisBenchmark() {
    }

    /** One run of redis-benchmark: its own figures, requests per second and p50/p99 in ms, and requests sent. */
    record Ceiling(double opsPerSecond, double p50Ms, double p99Ms, long requests) {
    }

    /** The key redis-benchmark's {@code __rand_int__} makes of {@code i}: 12 digits, zero-padded. */
    static String randKey(int i) {
        return String.format("key-%012d", i);
    }

    /**
     * The {@code EVALSHA} arguments our store sends for one acquire of the given kind, read from the command our
     * store itself issues (a Lettuce {@link CommandListener} on a probe client), with the key replaced by
     * {@code key-__rand_int__} (or the hot key); checked by running them once ourselves.
     */
    static List<String> checkedArgs(RedisHandle redis, boolean hot) {
        RedisClient probe = RedisClient.create(redis.uri());
        AtomicReference<String> sent = new AtomicReference<>();
        probe.addListener(new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                if (event.getCommand().getType().toString().equals("EVALSHA")) {
                    sent.compareAndSet(null, event.getCommand().getArgs().toCommandString());
                }
            }
        });
        try (StatefulRedisConnection<String, String> connection = probe.connect(StringCodec.UTF8)) {
            RedisBucketStore store = new RedisBucketStore(connection.async(), RedisPeers.NAMESPACE,
                    RedisPeers.TIMEOUT);
            String key = hot ? ClosedLoop.HOT_KEY : randKey(0);
            store.reserve(key, hot ? RedisPeers.HOT : RedisPeers.FREE, 1, 0).toCompletableFuture().join();
            // "sha 1 key<tokenbucket:bench:key-000000000000> value<reserve> ..." -> plain words
            String plain = sent.get().replaceAll("(key|value)<([^>]*)>", "$2");
            List<String> words = new ArrayList<>(List.of(plain.split(" ")));
            String redisKey = store.redisKey(key);
            if (words.size() < 3 || !words.get(1).equals("1") || !words.get(2).equals(redisKey)) {
                throw new IllegalStateException("unexpected EVALSHA from our store: " + sent.get());
            }
            String sha = words.get(0);
            // load the script by hand as well (our store loaded it through its EVAL fallback): redis-benchmark
            // only sends EVALSHA
            String loaded = connection.sync().scriptLoad(scriptSource());
            if (!loaded.equals(sha)) {
                throw new IllegalStateException("SCRIPT LOAD of bucket.lua gave " + loaded + ", our store sent " + sha);
            }
            List<String> argv = words.subList(3, words.size());
            Object check = connection.sync().evalsha(sha, ScriptOutputType.MULTI, new String[] {redisKey},
                    argv.toArray(new String[0]));
            if (!(check instanceof List<?> reply) || reply.isEmpty() || !Long.valueOf(1).equals(reply.get(0))) {
                throw new IllegalStateException("the captured EVALSHA did not grant: " + check);
            }
            List<String> rbArgs = new ArrayList<>(List.of("EVALSHA", sha, "1",
                    hot ? redisKey : RedisPeers.NAMESPACE + "key-__rand_int__"));
            rbArgs.addAll(argv);
            System.out.println("our store sends  : EVALSHA " + plain);
            System.out.println("redis-benchmark  : " + String.join(" ", rbArgs) + (hot ? "" : "   (with -r keys)"));
            return rbArgs;
        } finally {
            probe.shutdown();
        }
    }

    /** {@code bucket.lua} as the component sends it, its parts joined in. */
    static String scriptSource() {
        return RedisBucketStore.script();
    }

    private static final Pattern CSV = Pattern.compile("\"([^\"]*)\"");

    /** Runs redis-benchmark twice (a short calibration, then about {@code seconds} s) and parses its CSV line. */
    static Ceiling run(Path rb, RedisHandle redis, int clients, int pipeline,
                                  List<String> command, int keys, double seconds) throws IOException, InterruptedException {
        double calibration = runRedisBenchmark(rb, redis, clients, pipeline, command, keys, 20_000)[0];
        long n = Math.max(1_000, (long) (calibration * seconds));
        double[] r = runRedisBenchmark(rb, redis, clients, pipeline, command, keys, n);
        return new Ceiling(r[0], r[1], r[2], n);
    }

    /** {rps, p50 ms, p99 ms}. */
    private static double[] runRedisBenchmark(Path rb, RedisHandle redis, int clients,
                                              int pipeline, List<String> command, int keys, long n)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(rb.toString(), "-h", "127.0.0.1", "-p",
                Integer.toString(redis.port()), "-c", Integer.toString(clients), "-P", Integer.toString(pipeline),
                "-n", Long.toString(n), "-r", Integer.toString(keys), "--csv"));
        cmd.addAll(command);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        String[] lines = out.strip().split("\\R");
        String last = lines[lines.length - 1];
        List<String> fields = new ArrayList<>();
        Matcher m = CSV.matcher(last);
        while (m.find()) {
            fields.add(m.group(1));
        }
        if (p.exitValue() != 0 || fields.size() < 7 || out.contains("ERR")) {
            throw new IllegalStateException("redis-benchmark failed (" + String.join(" ", cmd) + "): " + out);
        }
        // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",...
        return new double[] {Double.parseDouble(fields.get(1)), Double.parseDouble(fields.get(4)),
                Double.parseDouble(fields.get(6))};
    }

    static String version(Path rb) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(rb.toString(), "--version").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        p.waitFor();
        return out + " (" + rb + ")";
    }
}
