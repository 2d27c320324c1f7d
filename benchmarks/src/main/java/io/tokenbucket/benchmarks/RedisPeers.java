package io.tokenbucket.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.tokenbucket.benchmarks.ClosedLoop.Case;
import io.tokenbucket.benchmarks.ClosedLoop.Peer;
import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.testsupport.redis.RedisHandle;
import org.HdrHistogram.Histogram;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;

/**
 * The limiters the Redis drivers ({@link RedisAcquire}, {@link Targets}) set side by side, each a {@link Peer} on
 * its own Lettuce connection(s) to the {@code redis-server} under test, with the same two limits: one that never
 * binds but keeps a live state for every key (capacity 1,000,000, one token a second back), and the hot key's, which
 * binds (capacity 100, 10,000 a second). Ours through the store ({@link #ours}) or through a route
 * ({@link #route}); Bucket4j-Lettuce ({@link #bucket4j}); one minimal GCRA script call per decision, pipelined as
 * {@code redis-benchmark -P 16} sends ({@link #gcraPipelined}); our store's {@code EVALSHA} sent bare
 * ({@link #bareEvalsha}, a diagnosis).
 */
final class RedisPeers {

    /** The peers' names in the targets' results and tables. */
    static final String OURS = "ours";
    /** Ours with {@code synchronous=true}: the calling thread waits for Redis's answer and continues the route. */
    static final String OURS_SYNC = "ours-sync";
    static final String BUCKET4J = "bucket4j";
    static final String GCRA_P16 = "gcra-P16";

    /** Our store's key namespace, its limits (never binding; the hot key's) and its command timeout. */
    static final String NAMESPACE = RedisBucketStore.namespace("tokenbucket:", "bench");
    static final Limits FREE = Limits.of(Limit.of(1_000_000, 1, TimeUnit.SECONDS.toNanos(1)));
    static final Limits HOT = Limits.of(Limit.of(100, 10_000, TimeUnit.SECONDS.toNanos(1)));
    static final Duration TIMEOUT = Duration.ofSeconds(1);

    /** The same two limits as endpoint options, for ours through a route. */
    static final String FREE_LIMIT = "capacity=1000000&refillAmount=1&refillPeriod=1s";
    static final String HOT_LIMIT = "capacity=100&refillAmount=10000&refillPeriod=1s";
    /** The GCRA peer's arguments for the same limits: the interval T and the burst C * T, in microseconds. */
    static final String[] FREE_GCRA = {"1000000", "1000000000000"};
    static final String[] HOT_GCRA = {"100", "10000"};

    /**
     * The minimal one-key GCRA: read the tat, decide on Redis's clock, write the new tat with a TTL at
     * time-to-full. What one script call per decision costs when the script itself does almost nothing.
     */
    static final String GCRA = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
            local tat = tonumber(redis.call('GET', KEYS[1])) or now
            if tat < now then tat = now end
            local new = tat + tonumber(ARGV[1])
            if new - now > tonumber(ARGV[2]) then return 0 end
            local ttl = math.floor((new - now) / 1000) + 1
            redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', string.format('%.0f', ttl))
            return 1
            """;

    /** How many GCRA commands {@link #gcraPipelined} writes in one flush. */
    static final int PIPELINE = 16;

    private RedisPeers() {
    }

    /**
     * Ours: {@code RedisBucketStore.reserve} on a connection of its own, with its reservations batched while a call
     * is in flight (the default, {@code "ours"}) or each sent as a call of its own ({@code "ours-unbatched"},
     * {@code redisBatching=false}).
     */
    static Peer ours(RedisHandle redis, boolean batching) {
        RedisConnections connections = new RedisConnections();
        RedisConnections.Lease lease = connections.acquire(redis.uri(), TIMEOUT);
        var commands = lease.commands();
        RedisBucketStore store = new RedisBucketStore(() -> commands, false, NAMESPACE, TIMEOUT, batching,
                size -> { });
        return Peer.of(batching ? OURS : "ours-unbatched",
                (key, hot) -> store.reserve(key, hot ? HOT : FREE, 1, 0).thenApply(r -> r.granted())
                        .toCompletableFuture(), () -> {
            lease.close();
            connections.close();
        });
    }

    /**
     * Not a peer but a diagnosis of ours: the same {@code EVALSHA} with the same arguments, sent straight through
     * Lettuce's async API on a connection made the same way, without our store around it (no limit formatting,
     * no {@code orTimeout}, no NOSCRIPT fallback chain, no reply mapping). Ours ÷ this is what our Java side costs.
     */
    static Peer bareEvalsha(RedisHandle redis, List<String> freeArgs, List<String> hotArgs) {
        RedisConnections connections = new RedisConnections();
        RedisConnections.Lease lease = connections.acquire(redis.uri(), TIMEOUT);
        var commands = lease.commands();
        String sha = freeArgs.get(1);
        String[] free = freeArgs.subList(4, freeArgs.size()).toArray(new String[0]);
        String[] hot = hotArgs.subList(4, hotArgs.size()).toArray(new String[0]);
        String[] hotKey = {hotArgs.get(3)};
        return Peer.of("bare-evalsha", (key, isHot) -> commands.<List<Long>> evalsha(sha, ScriptOutputType.MULTI,
                        isHot ? hotKey : new String[] {NAMESPACE + key}, isHot ? hot : free)
                .toCompletableFuture().thenApply(reply -> reply.get(0) == 1L), () -> {
            lease.close();
            connections.close();
        });
    }

    /**
     * Bucket4j-Lettuce's CAS proxy manager, asynchronous, {@code tryConsume(1)} on a proxy built once per key (and
     * one for the hot key), the same limits as ours; its own Lettuce client, rejecting commands when disconnected,
     * with ours' 1 s command timeout.
     */
    static Peer bucket4j(RedisHandle redis, String[] keyNames) {
        return bucket4j(redis, keyNames, null);
    }

    /**
     * Bucket4j-Lettuce as {@link #bucket4j(RedisHandle, String[])}, its client on the given resources (null: its
     * own), which the caller shuts down.
     */
    static Peer bucket4j(RedisHandle redis, String[] keyNames, ClientResources resources) {
        RedisClient client = resources == null ? RedisClient.create(redis.uri())
                : RedisClient.create(resources, redis.uri());
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(TIMEOUT))
                .build());
        StatefulRedisConnection<String, byte[]> connection =
                client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
        AsyncProxyManager<String> manager = Bucket4jLettuce.casBasedBuilder(connection)
                .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(
                        Duration.ofSeconds(1)))
                .build().asAsync();
        BucketConfiguration free = BucketConfiguration.builder()
                .addLimit(l -> l.capacity(1_000_000).refillGreedy(1, Duration.ofSeconds(1))).build();
        BucketConfiguration hot = BucketConfiguration.builder()
                .addLimit(l -> l.capacity(100).refillGreedy(10_000, Duration.ofSeconds(1))).build();
        Map<String, AsyncBucketProxy> proxies = new java.util.HashMap<>();
        for (String k : keyNames) {
            proxies.put(k, manager.builder().build("bucket4j:bench:" + k, () -> CompletableFuture.completedFuture(free)));
        }
        AsyncBucketProxy hotProxy = manager.builder().build("bucket4j:bench:" + ClosedLoop.HOT_KEY,
                () -> CompletableFuture.completedFuture(hot));
        return Peer.of(BUCKET4J, (key, isHot) -> (isHot ? hotProxy : proxies.get(key)).tryConsume(1), () -> {
            connection.close();
            client.shutdown();
        });
    }

    /**
     * {@code direct:free} and {@code direct:hot} -> {@code tokenbucket:} on Redis, every other option its default
     * but {@code options}; the peer is called {@code name}.
     */
    static Peer route(String name, String redisUri, String options) throws Exception {
        String common = "?store=redis&redisUri=" + redisUri + "&keyHeader=k&";
        CamelContext camel = new DefaultCamelContext();
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:free").to("tokenbucket:free" + common + FREE_LIMIT + options);
                from("direct:hot").to("tokenbucket:hot" + common + "mode=check&" + HOT_LIMIT + options);
            }
        });
        camel.start();
        AsyncProducer free = camel.getEndpoint("direct:free").createAsyncProducer();
        AsyncProducer hot = camel.getEndpoint("direct:hot").createAsyncProducer();
        free.start();
        hot.start();
        // the free route answers granted unless it failed, the hot one (check mode) as its header says
        BiConsumer<Exchange, CompletableFuture<Boolean>> freeDone = (e, f) -> answer(e, f, false);
        BiConsumer<Exchange, CompletableFuture<Boolean>> hotDone = (e, f) -> answer(e, f, true);
        return Peer.of(name, (key, isHot) -> isHot ? send(camel, hot, key, hotDone) : send(camel, free, key, freeDone),
                camel::stop);
    }

    private static void answer(Exchange e, CompletableFuture<Boolean> f, boolean isHot) {
        if (e.getException() != null) {
            f.completeExceptionally(e.getException());
        } else {
            f.complete(!isHot || Boolean.TRUE.equals(e.getMessage().getHeader("CamelTokenBucketAllowed",
                    Boolean.class)));
        }
    }

    /**
     * Sends one exchange whose header {@code k} is {@code key} through {@code producer}; when the exchange is done,
     * {@code onDone} completes the answer from it (on the thread that finished the exchange).
     */
    static CompletableFuture<Boolean> send(CamelContext camel, AsyncProducer producer, String key,
                                           BiConsumer<Exchange, CompletableFuture<Boolean>> onDone) {
        Exchange e = new DefaultExchange(camel);
        e.getMessage().setHeader("k", key);
        CompletableFuture<Boolean> f = new CompletableFuture<>();
        producer.process(e, sync -> onDone.accept(e, f));
        return f;
    }

    /**
     * The GCRA peer: {@code inFlight / 16} connections (at least one), each writing 16 {@code EVALSHA}s in one flush
     * and the next 16 once all are answered, as {@code redis-benchmark -P 16} does; each acquire's latency is from
     * its batch's flush to its reply. Driven here in {@link ClosedLoop} (one lane per connection), its run scaled from
     * batches to decisions.
     */
    static Run gcraPipelined(RedisHandle redis, String sha, Case c, String[] keys, double warmup, double seconds,
                             Runnable atMeasureStart, Runnable atMeasureEnd) throws Exception {
        int depth = Math.min(PIPELINE, c.inFlight());
        int connections = Math.max(1, c.inFlight() / depth);
        RedisClient client = RedisClient.create(redis.uri());
        List<StatefulRedisConnection<String, String>> open = new ArrayList<>();
        try {
            for (int i = 0; i < connections; i++) {
                StatefulRedisConnection<String, String> connection = client.connect();
                connection.setAutoFlushCommands(false);
                open.add(connection);
            }
            String[] args = c.hot() ? HOT_GCRA : FREE_GCRA;
            String[] hotKey = {"gcra:hot"};
            String[] redisKeys = Arrays.stream(keys).map(k -> "gcra:" + k).toArray(String[]::new);
            // the same closed loop as ClosedLoop.drive, one lane per connection, a lane's "acquire" being 16
            // commands: a lane takes a connection nobody is writing to (there are as many as lanes, and a lane hands
            // its connection back before it sends again), so each connection has one batch outstanding at a time
            java.util.concurrent.ConcurrentLinkedQueue<StatefulRedisConnection<String, String>> idle =
                    new java.util.concurrent.ConcurrentLinkedQueue<>(open);
            Peer batches = Peer.of(GCRA_P16, (key, hot) -> {
                StatefulRedisConnection<String, String> connection = idle.poll();
                var commands = connection.async();
                CompletableFuture<?>[] replies = new CompletableFuture<?>[depth];
                for (int i = 0; i < depth; i++) {
                    String[] k = hot ? hotKey
                            : new String[] {redisKeys[ThreadLocalRandom.current().nextInt(redisKeys.length)]};
                    replies[i] = commands.<Long> evalsha(sha, ScriptOutputType.INTEGER, k, args)
                            .toCompletableFuture();
                }
                connection.flushCommands();
                return CompletableFuture.allOf(replies).handle((v, failure) -> {
                    idle.add(connection);
                    if (failure != null) {
                        throw new java.util.concurrent.CompletionException(failure);
                    }
                    return true;
                });
            
            }, () -> { });
            Run lanes = ClosedLoop.drive(batches, new Case(c.name(), connections, c.hot()), keys, warmup,
                    seconds, atMeasureStart, atMeasureEnd);
            // drive counts a batch as one acquire: scale to decisions (each batch's members share its latency)
            Histogram perDecision = new Histogram(3);
            for (var v : lanes.latency().recordedValues()) {
                perDecision.recordValueWithCount(v.getValueIteratedTo(), v.getCountAtValueIteratedTo() * depth);
            }
            return new Run(lanes.opsPerSecond() * depth, lanes.granted() * depth, lanes.rejected() * depth,
                    lanes.timeouts() * depth, lanes.otherErrors() * depth, perDecision, lanes.firstError(),
                    lanes.stuck(), lanes.oldestOutstandingNanos());
        } finally {
            open.forEach(StatefulRedisConnection::close);
            client.shutdown();
        }
    }
}
