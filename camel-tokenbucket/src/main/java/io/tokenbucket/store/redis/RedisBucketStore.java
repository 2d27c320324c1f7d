package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.function.Supplier;

import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreCommand;

/**
 * Buckets in Redis, one string key per bucket holding its {@code tat} in microseconds of the Redis clock, with
 * a TTL at the moment it is full again (so idle keys expire by themselves and cost nothing); a key whose rate
 * adapts and has a rate state to keep holds it after its {@code tat}s, with a TTL at its latest {@code tat} plus the
 * adaptation's memory, when {@link io.tokenbucket.math.AdaptiveMath#current} would forget it.
 *
 * <p>Each operation is one round trip: {@link BucketScript} reads, decides and writes atomically, whatever the
 * contention; no compare-and-set loop, no polling. Time is Redis {@code TIME}, so Camel instances whose clocks
 * disagree share one timeline. Works on a standalone Redis and on a Redis Cluster (every script call's keys in one
 * hash slot).
 *
 * <p><b>Reservations are batched across keys</b> ({@code redisBatching}, on by default): what queues while a call
 * is out goes in the next call, whatever its keys, decided in arrival order ({@link ReservationLanes}); one on
 * several keys keeps its place on each of them. The other operations are one call each.
 *
 * <p>Keys are {@code <keyPrefix><limiter name>:<key>} ({@link #namespace}). Every call fails its stage with
 * {@link java.util.concurrent.TimeoutException} when Redis has not answered within the store timeout; a reservation
 * that queued that long behind other calls fails unsent.
 */
public final class RedisBucketStore implements BucketStore {

    private static final long NANOS_PER_MICRO = 1000;

    private final Supplier<RedisClusterAsyncCommands<String, String>> commands;
    private final boolean cluster;
    /** The Redis clock against ours: the server's, or each cluster node's. */
    private final RedisClocks clocks;
    private final String namespace;
    private final long timeoutNanos;
    /** The commands of the last call sent, to tell when the connection was replaced. */
    private volatile RedisClusterAsyncCommands<String, String> sentTo;
    /** Reservations, batched or one call each. */
    private final ReservationLanes reservations;
    /** The probes of {@link #probe}: without the release's {@code PUBLISH}, and with it. */
    private final RedisProbe[] probes;

    /**
     * @param commands  Lettuce's asynchronous commands of a standalone or cluster connection
     * @param namespace the prefix of this limiter's keys, {@code <keyPrefix><name>:}
     * @param timeout   how long one call may take before its stage fails
     */
    public RedisBucketStore(RedisClusterAsyncCommands<String, String> commands, String namespace, Duration timeout) {
        this(() -> commands, commands instanceof RedisAdvancedClusterAsyncCommands, namespace, timeout, false,
                size -> { });
    }

    /**
     * A store on a connection that may not be open yet: while {@code commands} gives null every call fails its
     * stage with a {@link RedisConnectionException} (the store policy decides), without waiting.
     *
     * @param commands   the current asynchronous commands of the connection, null while it is not open
     * @param cluster    whether it is a Redis Cluster connection (candidates must then share a hash slot)
     * @param namespace  the prefix of this limiter's keys, {@code <keyPrefix><name>:}
     * @param timeout    how long one call may take before its stage fails
     * @param batching   whether reservations that arrive while a call is in flight go together in the next call,
     *                   whatever their keys (a few lanes, one call in flight each); false (what the other
     *                   constructor does) sends each reservation as its own call, pipelined
     * @param batchSizes hears the number of reservations of every reservation call sent while batching (1 when
     *                   one went alone), on the thread that sends it; must not block
     */
    public RedisBucketStore(Supplier<RedisClusterAsyncCommands<String, String>> commands, boolean cluster,
                            String namespace, Duration timeout, boolean batching, LongConsumer batchSizes) {
        this.commands = commands;
        this.cluster = cluster;
        this.clocks = new RedisClocks(commands, cluster);
        this.namespace = namespace;
        this.timeoutNanos = timeout.toNanos();
        this.reservations = new ReservationLanes(cluster, batching, batchSizes, timeoutNanos, clocks,
                (redisKeys, operands, clock) -> run("reserve", redisKeys, operands, clock));
        this.probes = new RedisProbe[] {probe(commands, false), probe(commands, true)};
    }

    private RedisProbe probe(Supplier<RedisClusterAsyncCommands<String, String>> commands, boolean publishes) {
        return new RedisProbe(() -> commands.get() == null ? null : sendProbe(publishes), () -> null);
    }

    /**
     * The bucket script as this store sends it ({@code bucket.lua} with its parts joined in): to load it by hand,
     * for instance before {@code redis-benchmark} sends the store's {@code EVALSHA}.
     */
    public static String script() {
        return BucketScript.SOURCE;
    }

    /**
     * Sends on the connection, timed; fails at once, without waiting, while the connection is not open. A failed
     * call restarts {@code clock} (the estimate of the server it went to, null: none): Redis may be another one now.
     */
    private <T> CompletableFuture<T> send(RedisClockOffset clock,
                                          Function<RedisClusterAsyncCommands<String, String>, CompletableFuture<T>> op) {
        RedisClusterAsyncCommands<String, String> c = commands.get();
        if (c != sentTo) { // another connection (a new master after a failover, or the first): another server's clock
            sentTo = c;
            clocks.resetAll();
        }
        if (c == null) {
            return CompletableFuture.failedFuture(
                    new RedisConnectionException("Not connected to Redis yet (connecting in the background)"));
        }
        CompletableFuture<T> answer = new CompletableFuture<>();
        CallTimeouts.within(op.apply(c), c, timeoutNanos).whenComplete((value, failure) -> {
            if (failure == null) {
                answer.complete(value);
                return;
            }
            if (clock != null) {
                clock.reset();
            }
            answer.completeExceptionally(RedisRefusals.classify(failure));
        });
        return answer;
    }

    /**
     * Whether Redis lets this store run its operations: null when it does (now, or within the last second), else why
     * not, a {@link io.tokenbucket.store.StoreRefusedException} when Redis refused (an ACL without a command, a key or
     * the channel; a script that cannot run). The probe is one script call that sends, on a key of this store's
     * namespace ({@link #probeKey}), every command the other operations send ({@code TIME}, {@code GET}, {@code SET},
     * {@code DEL}) and leaves nothing changed; with {@code publishes}, also the {@code PUBLISH} of a release to the
     * released channel (needed by in-flight limits), with a message the subscribers ignore.
     *
     * @param timeout how long to wait for the answer
     */
    public Throwable probe(Duration timeout, boolean publishes) {
        return probes[publishes ? 1 : 0].check(timeout);
    }

    /**
     * Makes the next {@link #probe} ask Redis rather than reuse an answer: a call was refused since, so the answer
     * kept may be out of date (an ACL changed).
     */
    public void forgetProbes() {
        for (RedisProbe p : probes) {
            p.forget();
        }
    }

    /** {@link #probe}, sent now: no earlier answer reused, none kept for the next (a start's probe). */
    public Throwable probeNow(Duration timeout, boolean publishes) {
        return probe(commands, publishes).check(timeout);
    }

    /** Sends the probe of {@link #probe}: the script's {@code probe} on {@link #probeKey}. */
    private java.util.concurrent.CompletableFuture<?> sendProbe(boolean publishes) {
        return run("probe", new String[] {probeKey()}, List.of("1", publishes ? releasedChannel() : "-1", "0"), null)
                .thenApply(raw -> {
                    if (raw == null || raw.size() != ScriptReply.FIELDS) {
                        throw ScriptReply.notAnAnswer(raw);
                    }
                    return raw;
                });
    }

    /**
     * The key the probe writes and deletes within one script call: {@code %probe} in the namespace, so that an ACL
     * granting the limiter its own keys ({@code ~<keyPrefix><name>:*}) covers it. A bucket at that key (a user's key
     * {@code %probe}) is written back as it was, value and TTL, not deleted.
     */
    String probeKey() {
        return namespace + "%probe";
    }

    /**
     * The namespace of a limiter's keys: {@code <keyPrefix><name>:}, with {@code %} and {@code :} in the name
     * escaped ({@code %25}, {@code %3A}) so that two limiters can never share a key: limiter {@code a} with key
     * {@code b:c} and limiter {@code a:b} with key {@code c} stay apart.
     */
    public static String namespace(String keyPrefix, String limiterName) {
        return keyPrefix + limiterName.replace("%", "%25").replace(":", "%3A") + ":";
    }

    /**
     * Refuses limits this store would not keep as written: a rate its microsecond clock slows by more than 1 %, or a
     * burst beyond what its script computes exactly. Called where limits are configured, so that they fail there
     * rather than on every exchange.
     *
     * @throws IllegalArgumentException naming the limit
     */
    public static void check(Limits limits) {
        for (int i = 0; i < limits.size(); i++) {
            ScriptArgs.check(limits.get(i));
        }
    }

    /** How many Redis Cluster nodes have a clock estimate of their own (0 on a standalone Redis), for the tests. */
    int clockedNodes() {
        return clocks.nodeCount();
    }

    /**
     * The channel a release publishes to when a key it frees has waiters (tickets): every instance of the limiter
     * subscribed to it tries its waiters at once, instead of at their next poll.
     */
    public String releasedChannel() {
        return namespace + "released";
    }

    /** The Redis key of a bucket key. */
    public String redisKey(String key) {
        return namespace + key;
    }

    /**
     * Runs a command as the script's operations, one call each: every reservation as {@code reserve} (batched when
     * batching), every other operation as its own (peek, penalize, throttle and rate name one key:
     * {@link StoreCommand}).
     *
     * @throws IllegalArgumentException on a Redis Cluster when the keys of one reservation are not in one hash slot,
     *                                  or for a limit too large for the script
     */
    @Override
    public CompletionStage<Outcome> execute(StoreCommand c) {
        Step step = c.step();
        List<String> keys = c.keys();
        List<Limits> limits = step.limits();
        if (c.lease() == null && (step.op() == Step.Op.RELEASE || step.op() == Step.Op.RENEW
                || step.op() == Step.Op.RESERVE && limits.stream().anyMatch(l -> l.inFlight() > 0))) {
            // a slot without a lease could never be released, nor expire in time
            throw new IllegalArgumentException(step.op() + " of a key with an in-flight limit needs the lease of the"
                    + " slots on store=redis, was keys " + keys);
        }
        return switch (step.op()) {
            case RESERVE -> reserve(c);
            // every key in one call; each keeps its in-flight slots and tickets (exchanges still running or waiting
            // hold them); the answer is the first key's capacity, as the math's
            case REMOVE -> call("remove", keys, limits, 1, "-1", null)
                    .thenApply(done -> Outcome.granted(limits.get(0).capacity()));
            case REFUND -> call("refund", keys, limits, step.amount(), "-1", null);
            case RELEASE, RENEW -> call(step.op() == Step.Op.RELEASE ? "release" : "renew", keys, limits, 1,
                    releasedChannel(), c.lease());
            case PEEK -> call("peek", keys, limits, step.amount(), "-1", null);
            case PENALIZE -> call("penalize", keys, limits, 1, Long.toString(ScriptArgs.micros(step.amount())),
                    null);
            case RATE -> limits.get(0).adaptive() == null
                    ? CompletableFuture.completedFuture(Outcome.granted(limits.get(0).capacity()))
                    : adapt("rate", keys.get(0), limits.get(0));
            default -> adapt("throttle", keys.get(0), limits.get(0));
        };
    }

    /**
     * A reservation: the script's {@code reserve}, through the lanes when batching. One key goes without the
     * {@code 'C'} header, which the script reads as one key of one candidate (and may decide on its short branch);
     * several keys (the freest candidate group and the shared keys, all charged or none) name their count and groups.
     */
    private CompletionStage<Outcome> reserve(StoreCommand c) {
        String[] redisKeys = oneSlot(c.keys());
        int[] groups = c.step().groups();
        List<Limits> candidateLimits = new ArrayList<>(groups.length);
        for (int g = 0, first = 0; g < groups.length; first += groups[g], g++) {
            candidateLimits.add(c.step().limits().get(first));
        }
        // fails at once for a limit too large, without a round trip
        return reservations.reserve(redisKeys, candidateLimits, ScriptArgs.reserve(c.step(), redisKeys.length,
                c.lease()));
    }

    /**
     * The Redis keys of {@code keys}, which one script call decides together.
     *
     * @throws IllegalArgumentException on a Redis Cluster when they are not in one hash slot
     */
    private String[] oneSlot(List<String> keys) {
        String[] redisKeys = keys.stream().map(this::redisKey).toArray(String[]::new);
        if (cluster && Arrays.stream(redisKeys).anyMatch(k -> SlotHash.getSlot(k) != SlotHash.getSlot(redisKeys[0]))) {
            throw new IllegalArgumentException("the keys " + List.of(redisKeys) + " of one step are in"
                    + " different Redis Cluster hash slots, so one script cannot decide on them together: put a hash"
                    + " tag in keyPrefix (for example keyPrefix={tb}:) so that every key of the limiter shares a slot");
        }
        return redisKeys;
    }

    /** Answers with the script's 'throttle' (a signal) or 'rate' (a question): see bucket.lua. */
    private CompletionStage<Outcome> adapt(String op, String key, Limits limits) {
        String redisKey = redisKey(key);
        return run(op, new String[] {redisKey}, ScriptArgs.operands(1, "-1", List.of(limits), null),
                clocks.of(redisKey))
                .thenApply(raw -> adaptation(raw, limits, System.nanoTime()));
    }

    /**
     * The reply of the script's 'throttle' or 'rate': a reply of five numbers whose first says whether the rate was
     * cut, then the factor after it and 1 while starting (else 0); its wait counts from {@code receivedNanos}.
     *
     * @throws IllegalStateException naming the reply when it is not one the script gives
     */
    static Outcome adaptation(List<Long> raw, Limits limits, long receivedNanos) {
        if (raw != null && raw.size() == ScriptReply.FIELDS + 2) {
            Long factor = raw.get(ScriptReply.FIELDS);
            Long starting = raw.get(ScriptReply.FIELDS + 1);
            ScriptReply reply = ScriptReply.parse(raw.subList(0, ScriptReply.FIELDS), List.of(limits));
            if (factor != null && factor >= 1 && factor <= Adaptive.PPM && starting != null
                    && (starting == 0 || starting == 1)) {
                // the first field of this reply says whether it cut; the rest is the peek of one token
                return new Outcome(reply.waitMicros() == 0, 0, reply.waitMicros() * NANOS_PER_MICRO,
                        reply.remaining(), factor, starting == 1, reply.granted(), receivedNanos);
            }
        }
        throw ScriptReply.notAnAnswer(raw);
    }

    /**
     * Calls the script with operation {@code op} and a second argument {@code arg}: a penalty in microseconds, a
     * release's channel, or -1 for none.
     */
    private CompletableFuture<Outcome> call(String op, List<String> keys, List<Limits> limits, long tokens,
                                            String arg, StoreCommand.Lease lease) {
        List<String> operands = ScriptArgs.operands(tokens, arg, limits, lease);
        String[] redisKeys = oneSlot(keys);
        RedisClockOffset clock = clocks.of(redisKeys[0]);
        long sentNanos = System.nanoTime();
        return run(op, redisKeys, operands, clock).thenApply(raw -> reservation(ScriptReply.parse(raw, limits),
                sentNanos, clocks.still(clock, redisKeys[0])));
    }

    /**
     * Runs the script's operation {@code op} on {@code redisKeys}, with {@code operands} after it in ARGV, on the
     * server whose estimate is {@code clock}.
     */
    private CompletableFuture<List<Long>> run(String op, String[] redisKeys, List<String> operands,
                                              RedisClockOffset clock) {
        List<String> args = new ArrayList<>(operands.size() + 1);
        args.add(op);
        args.addAll(operands);
        return send(clock, c -> BucketScript.run(c, redisKeys, args.toArray(String[]::new)));
    }

    /**
     * The reservation of a reply. Its wait counts from the Redis clock's {@code now}; it is shortened by the time
     * the reply took to be handled, as far as the {@link RedisClockOffset} of the server that ran it can tell
     * without ever ending before the slot; never lengthened.
     *
     * @param sentNanos when the call was sent ({@link System#nanoTime()})
     * @param clock     the estimate of the server that ran the call, null when not known (the wait is then Redis's)
     */
    private Outcome reservation(ScriptReply reply, long sentNanos, RedisClockOffset clock) {
        long receivedNanos = System.nanoTime();
        if (clock != null) {
            clock.sample(sentNanos, receivedNanos, reply.redisNowMicros());
        }
        return reply.outcome(receivedNanos, clock);
    }

}
