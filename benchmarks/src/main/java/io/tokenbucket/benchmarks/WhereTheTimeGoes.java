package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.RedisPeers.FREE_LIMIT;
import static io.tokenbucket.benchmarks.RedisPeers.OURS;
import static io.tokenbucket.benchmarks.RunCosts.allocatedBytes;
import static io.tokenbucket.benchmarks.RunCosts.loadAverage;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.tokenbucket.benchmarks.ClosedLoop.Peer;
import io.tokenbucket.benchmarks.RunCosts.Busy;
import io.tokenbucket.testsupport.redis.RedisHandle;
import org.HdrHistogram.Histogram;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * The targets' "where the time goes at one in flight": one acquire at a time, ours (through a route) then
 * Bucket4j, each stamped where it passes (sent, the route step entered, each Redis request's bytes written to the
 * socket and each reply's read from it, by a Netty handler at the socket end of each Lettuce channel, the step left,
 * the callback, completed); then, for the sequence of stamps most acquires went through, each stretch's median and
 * p99 (µs) and the thread it ended on.
 */
final class WhereTheTimeGoes {

    private WhereTheTimeGoes() {
    }

    /** What one acquire passed, in order: a label, when, on which thread. */
    record Stamp(String label, long nanos, String thread) {
    }

    /**
     * Collects the stamps of the one acquire under way (one in flight, so no request needs telling apart), among them
     * when a Redis client's bytes go to the socket and when a reply's bytes come from it: a handler at the socket
     * end of each Lettuce channel's pipeline, installed through {@link #resources()}.
     */
    static final class Stamps {
        private final List<Stamp> stamps = new ArrayList<>();

        synchronized void add(String label) {
            // the thread's name as is (classified when reported): stamping allocates as little as it can
            stamps.add(new Stamp(label, System.nanoTime(), Thread.currentThread().getName()));
        }

        synchronized List<Stamp> take() {
            List<Stamp> taken = new ArrayList<>(stamps);
            stamps.clear();
            return taken;
        }

        /** Lettuce client resources whose channels stamp every write to and every read from Redis. */
        ClientResources resources() {
            return DefaultClientResources.builder().nettyCustomizer(new NettyCustomizer() {
                @Override
                public void afterChannelInitialized(Channel channel) {
                    channel.pipeline().addFirst(new ChannelDuplexHandler() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            add("Redis reply read");
                            ctx.fireChannelRead(msg);
                        }

                        @Override
                        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                            add("Redis request written");
                            ctx.write(msg, promise);
                        }
                    });
                }
            }).build();
        }
    }

    /** A thread's name without its number: which pool it belongs to. */
    static String threadKind(String name) {
        return name.replaceAll("[-#]?\\d+$", "").replaceAll("\\d+", "N");
    }

    /**
     * One acquire at a time for {@code seconds}, ours then Bucket4j, each stamped where it passes; prints, for the
     * sequence of stamps most acquires went through, each stretch's median and p99 and the threads at its ends.
     */
    static void run(RedisHandle redis, RedisCommands<String, String> admin, String[] keys, TargetSettings s,
                          boolean busy) throws Exception {
        System.out.println();
        System.out.println("## where the time goes, 1 in flight, " + (busy ? "other core busy" : "quiet")
                + " (load average " + loadAverage() + ")");
        Stamps stamps = new Stamps();
        ClientResources resources = stamps.resources();
        RedisClient client = RedisClient.create(resources, redis.uri());
        CamelContext camel = new DefaultCamelContext();
        camel.getRegistry().bind("stampedClient", client);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:b")
                        .process(e -> stamps.add("route step entered"))
                        .to("tokenbucket:brk?store=redis&redisClient=#stampedClient&keyHeader=k&" + FREE_LIMIT)
                        .process(e -> stamps.add("route step left"));
            }
        });
        camel.start();
        AsyncProducer producer = camel.getEndpoint("direct:b").createAsyncProducer();
        producer.start();
        BiConsumer<Exchange, CompletableFuture<Boolean>> done = (e, f) -> {
            stamps.add("callback");
            f.complete(e.getException() == null);
        };
        Peer ours = Peer.of(OURS, (key, hot) -> RedisPeers.send(camel, producer, key, done), () -> {
            camel.stop();
            client.shutdown();
        });
        try (Busy b = busy ? new Busy() : null; ours;
             Peer bucket4j = RedisPeers.bucket4j(redis, keys, resources)) {
            for (Peer p : List.of(ours, bucket4j)) {
                admin.flushall();
                stamped(p, stamps, keys, s);
            }
        } finally {
            resources.shutdown();
        }
    }

    private static void stamped(Peer peer, Stamps stamps, String[] keys, TargetSettings s) throws Exception {
        long warmEnd = System.nanoTime() + (long) (s.warmup() * 1e9);
        long end = warmEnd + (long) (s.seconds() * 1e9);
        Map<List<String>, List<List<Stamp>>> bySequence = new LinkedHashMap<>();
        long alloc0 = 0;
        int measured = 0;
        boolean measuring = false;
        for (long now = System.nanoTime(); now < end; now = System.nanoTime()) {
            if (!measuring && now >= warmEnd) {
                measuring = true;
                alloc0 = allocatedBytes();
            }
            stamps.take();
            stamps.add("sent");
            String key = keys[ThreadLocalRandom.current().nextInt(keys.length)];
            CompletableFuture<Boolean> done = peer.acquire(key, false)
                    .whenComplete((ok, failure) -> stamps.add("completed"));
            done.get(10, TimeUnit.SECONDS);
            List<Stamp> taken = stamps.take();
            if (measuring) {
                measured++;
                bySequence.computeIfAbsent(taken.stream().map(Stamp::label).toList(), k -> new ArrayList<>())
                        .add(taken);
            }
        }
        long allocated = allocatedBytes() - alloc0;
        var modal = bySequence.entrySet().stream().max((a, b) -> Integer.compare(a.getValue().size(),
                b.getValue().size())).orElseThrow();
        List<List<Stamp>> runs = modal.getValue();
        System.out.printf("%s: %,d acquires, %,.0f B allocated per acquire (this JVM, the stamps included); %,d"
                + " (%.1f %%) went %s%n",
                peer.name(), measured, (double) allocated / Math.max(1, measured), runs.size(),
                100.0 * runs.size() / Math.max(1, measured), String.join(" -> ", modal.getKey()));
        System.out.println("| stretch | p50 µs | p99 µs | thread at its end (most acquires) |");
        System.out.println("|---|---:|---:|---|");
        int n = modal.getKey().size();
        for (int i = 1; i < n; i++) {
            Histogram h = new Histogram(3);
            Map<String, Integer> threads = new LinkedHashMap<>();
            for (List<Stamp> r : runs) {
                h.recordValue(Math.max(0, r.get(i).nanos() - r.get(i - 1).nanos()));
                threads.merge(threadKind(r.get(i).thread()), 1, Integer::sum);
            }
            String thread = threads.entrySet().stream().max(Map.Entry.comparingByValue())
                    .map(e -> String.format("%s (%.0f %%)", e.getKey(), 100.0 * e.getValue() / runs.size()))
                    .orElse("");
            System.out.printf("| %s -> %s | %.1f | %.1f | %s |%n", modal.getKey().get(i - 1), modal.getKey().get(i),
                    h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(99) / 1e3, thread);
        }
        Histogram total = new Histogram(3);
        runs.forEach(r -> total.recordValue(r.get(n - 1).nanos() - r.get(0).nanos()));
        System.out.printf("| sent -> completed, whole | %.1f | %.1f | |%n", total.getValueAtPercentile(50) / 1e3,
                total.getValueAtPercentile(99) / 1e3);
        if (bySequence.size() > 1) {
            bySequence.forEach((seq, list) -> {
                if (list != runs) {
                    System.out.printf("  also: %,d went %s%n", list.size(), String.join(" -> ", seq));
                }
            });
        }
    }
}
