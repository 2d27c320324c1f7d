package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.function.Supplier;

import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
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
 * <p><b>Reservations are batched across keys</b> ({@code redisBatching}, on by default): a store has {@link #LANES}
 * lanes, a key always in the same one, each with one script call in flight ({@link #IN_FLIGHT}); the reservations
 * that arrive while it is out queue, whatever their keys, and when it returns everything queued (at most
 * {@link #MAX_BATCH}) goes as one call of the script's {@code reserve} operation, which decides each in arrival order,
 * each on the state the one before left: each its own slot, so FIFO on a key and the bound hold exactly as with one
 * call each. The other lanes' calls keep Redis busy while a lane's reply and its next call are on the wire. On a
 * cluster a lane's batch goes as one call per hash slot among its members (a script's keys must share a slot),
 * sent together, and the lane's next batch waits for all of them. Nothing waits for a batch to fill: a reservation
 * that finds its lane idle goes at once, as its own {@code reserve} call. A batch that fails (a timeout, a lost
 * connection, a reply the checks refuse) fails each of its reservations alone, as its own call would have failed;
 * the other operations are one call each, a reservation on several keys or several limits (the script's {@code all})
 * included.
 *
 * <p>Keys are {@code <keyPrefix><limiter name>:<key>} ({@link #namespace}). Every call fails its stage with
 * {@link java.util.concurrent.TimeoutException} when Redis has not answered within the store timeout (a queued
 * reservation: within the store timeout of its arrival).
 *
 * <p>Why over 300 lines: the single calls and the batching lane share the script call, the reply checks, the
 * mapping of a slot onto the local clock and the timeout; the lane is the one part that could move to a class of
 * its own, behind an interface for those four.
 */
public final class RedisBucketStore implements BucketStore {

    private static final long NANOS_PER_MICRO = 1000;

    /**
     * The largest burst ({@code capacity × interval}) of a limit on Redis, in microseconds: 2^51 (71 years). With
     * states read no further ahead than 2^52 microseconds, every number {@code bucket.lua} computes stays below
     * 2^53, which Lua's doubles hold exactly.
     */
    static final long MAX_BURST_MICROS = 1L << 51;

    /**
     * The most reservations in one script call: 256. Redis runs a script alone, and a batch costs it 3 to 9
     * microseconds per reservation (INFO commandstats in measurement2-redis-acquire-batching-2026-12-02.txt: hot
     * key, random keys), so one call holds other clients up for at most about 2.3 ms.
     */
    public static final int MAX_BATCH = 256;

    /**
     * How many reservation calls may be in flight at once per lane ({@link #LANES}): 1. FIFO
     * needs it: with one, every call after the first of a busy spell is written by the thread that handled the
     * reply before it, so calls reach Redis in arrival order; with two, a call written from a caller's thread
     * can be overtaken on the connection by a batch written from the I/O thread (Netty queues a write from
     * another thread as a task), and RedisBatchingTest saw a later reservation get the earlier slot.
     */
    public static final int IN_FLIGHT = 1;

    /**
     * How many lanes a store has: 4, a key's lane chosen by a hash of its Redis key (on a cluster, of its hash slot).
     * Each lane has one call in flight ({@link #IN_FLIGHT}) carrying everything that queued for it, whatever the
     * keys, so a key's reservations reach Redis in arrival order and reservations on different keys share calls.
     * More than one lane keeps Redis busy while a lane's reply and its next call are on the wire: with one, Redis
     * sat idle for every round trip; with many (1,024), random keys rarely met in a lane and every reservation
     * paid a script call of its own.
     */
    public static final int LANES = 4;

    private final Supplier<RedisClusterAsyncCommands<String, String>> commands;
    private final boolean cluster;
    /** The Redis clock against ours: the server's, or each cluster node's. */
    private final RedisClocks clocks;
    private final String namespace;
    private final long timeoutNanos;
    private final boolean batching;
    private final LongConsumer batchSizes;
    /** The lanes, a key's by a hash of its Redis key (standalone) or of its hash slot (cluster). */
    private final Lane[] lanes = new Lane[LANES];

    /**
     * @param commands  Lettuce's asynchronous commands of a standalone or cluster connection
     * @param namespace the prefix of this limiter's keys, {@code <keyPrefix><name>:}
     * @param timeout   how long one call may take before its stage fails
     */
    public RedisBucketStore(RedisClusterAsyncCommands<String, String> commands, String namespace, Duration timeout) {
        this(() -> commands, commands instanceof RedisAdvancedClusterAsyncCommands, namespace, timeout);
    }

    /**
     * A store on a connection that may not be open yet: while {@code commands} gives null every call fails its
     * stage with a {@link RedisConnectionException} (the store policy decides), without waiting.
     *
     * @param commands  the current asynchronous commands of the connection, null while it is not open
     * @param cluster   whether it is a Redis Cluster connection (candidates must then share a hash slot)
     * @param namespace the prefix of this limiter's keys, {@code <keyPrefix><name>:}
     * @param timeout   how long one call may take before its stage fails
     */
    public RedisBucketStore(Supplier<RedisClusterAsyncCommands<String, String>> commands, boolean cluster,
                            String namespace, Duration timeout) {
        this(commands, cluster, namespace, timeout, false, size -> { });
    }

    /**
     * A store as {@link #RedisBucketStore(Supplier, boolean, String, Duration)}, batching reservations or not.
     *
     * @param batching   whether reservations that arrive while a call is in flight go together in the next call,
     *                   whatever their keys ({@link #LANES} lanes, one call in flight each); false (what the other
     *                   constructors do) sends each reservation as its own call, pipelined
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
        this.batching = batching;
        this.batchSizes = batchSizes;
        for (int i = 0; i < LANES; i++) {
            lanes[i] = new Lane();
        }
    }

    /**
     * Sends on the connection, timed; fails at once, without waiting, while the connection is not open. A failed
     * call restarts {@code clock} (the estimate of the server it went to, null: none): Redis may be another one now.
     */
    private <T> CompletableFuture<T> send(RedisClockOffset clock,
                                          Function<RedisClusterAsyncCommands<String, String>, CompletableFuture<T>> op) {
        RedisClusterAsyncCommands<String, String> c = commands.get();
        if (c == null) {
            clocks.resetAll();
            return CompletableFuture.failedFuture(
                    new RedisConnectionException("Not connected to Redis yet (connecting in the background)"));
        }
        CompletableFuture<T> timed = op.apply(c).orTimeout(timeoutNanos, TimeUnit.NANOSECONDS);
        if (clock != null) {
            timed.whenComplete((value, failure) -> {
                if (failure != null) {
                    clock.reset();
                }
            });
        }
        return timed;
    }

    /**
     * The namespace of a limiter's keys: {@code <keyPrefix><name>:}, with {@code %} and {@code :} in the name
     * escaped ({@code %25}, {@code %3A}) so that two limiters can never share a key: limiter {@code a} with key
     * {@code b:c} and limiter {@code a:b} with key {@code c} stay apart.
     */
    public static String namespace(String keyPrefix, String limiterName) {
        return keyPrefix + limiterName.replace("%", "%25").replace(":", "%3A") + ":";
    }

    /** How many Redis Cluster nodes have a clock estimate of their own (0 on a standalone Redis), for the tests. */
    int clockedNodes() {
        return clocks.nodeCount();
    }

    /** The Redis key of a bucket key. */
    public String redisKey(String key) {
        return namespace + key;
    }

    /**
     * Runs a command as today's script operations do it: a reservation of one key as {@code reserve} (batched when
     * batching), every other reservation as one {@code all} call; peek, penalize, throttle and rate of
     * one key as their own operations; a refund as one {@code refund} per key; a remove as a DEL.
     *
     * @throws IllegalArgumentException on a Redis Cluster when the keys of one reservation are not in one hash slot,
     *                                  or for a limit too large for the script
     */
    @Override
    public CompletionStage<Outcome> execute(StoreCommand c) {
        Step step = c.step();
        List<String> keys = c.keys();
        List<Limits> limits = step.limits();
        switch (step.op()) {
            case RESERVE:
                if (keys.size() == 1) {
                    return reserveOne(keys.get(0), limits.get(0), step.amount(), maxWaitMicros(step.maxWaitTicks()));
                }
                return reserveAll(c);
            case REMOVE:
                return send(null, commands -> commands.del(keys.stream().map(this::redisKey).toArray(String[]::new))
                        .toCompletableFuture()).thenApply(n -> Outcome.granted(limits.get(0).capacity()));
            case REFUND: {
                CompletableFuture<Outcome> fewest = null;
                for (int i = 0; i < keys.size(); i++) {
                    CompletableFuture<Outcome> one = call("refund", List.of(keys.get(i)), List.of(limits.get(i)),
                            step.amount(), -1);
                    fewest = fewest == null ? one : fewest.thenCombine(one,
                            (a, b) -> a.remaining() <= b.remaining() ? a : b);
                }
                return fewest;
            }
            default:
                break;
        }
        if (keys.size() != 1) {
            throw new IllegalArgumentException(step.op() + " on several keys is not supported by store=redis yet, was "
                    + keys);
        }
        return switch (step.op()) {
            case PEEK -> call("peek", keys, limits, step.amount(), -1);
            case PENALIZE -> call("penalize", keys, limits, 1, ceilMicros(step.amount()));
            case RATE -> limits.get(0).adaptive() == null
                    ? CompletableFuture.completedFuture(Outcome.granted(limits.get(0).capacity()))
                    : adapt("rate", keys.get(0), limits.get(0));
            default -> adapt("throttle", keys.get(0), limits.get(0));
        };
    }

    /** A reservation of one key: the script's {@code reserve}, through a lane when batching. */
    private CompletionStage<Outcome> reserveOne(String key, Limits limits, long tokens, long maxWaitMicros) {
        List<String> args = new ArrayList<>();
        args.add(Long.toString(tokens));
        args.add(Long.toString(maxWaitMicros));
        appendLimits(args, limits); // fails at once for a limit too large, without a round trip
        String redisKey = redisKey(key);
        Member member = new Member(redisKey, limits, args, new CompletableFuture<>());
        if (batching) {
            lanes[lane(redisKey)].submit(member);
        } else {
            send(List.of(member), null);
        }
        return member.result();
    }

    /** Every other reservation: one call of the script's {@code all} over the groups and the shared keys. */
    private CompletionStage<Outcome> reserveAll(StoreCommand c) {
        Step step = c.step();
        List<String> redisKeys = c.keys().stream().map(this::redisKey).toList();
        if (cluster) {
            int slot = SlotHash.getSlot(redisKeys.get(0));
            for (String key : redisKeys) {
                if (SlotHash.getSlot(key) != slot) {
                    throw new IllegalArgumentException("the keys " + redisKeys + " of one reservation are in"
                            + " different Redis Cluster hash slots, so one script cannot decide on them together:"
                            + " put a hash tag in keyPrefix (for example keyPrefix={tb}:) so that every key of"
                            + " the limiter shares a slot");
                }
            }
        }
        int[] groups = step.groups();
        List<String> operands = new ArrayList<>();
        operands.add(Long.toString(step.amount()));
        operands.add(Long.toString(maxWaitMicros(step.maxWaitTicks())));
        operands.add(Integer.toString(groups.length));
        List<Limits> candidateLimits = new ArrayList<>();
        boolean grouped = false;
        for (int g = 0, first = 0; g < groups.length; first += groups[g], g++) {
            candidateLimits.add(step.limits().get(first));
            grouped |= groups[g] > 1;
        }
        if (grouped) {
            operands.add("G");
            for (int g : groups) {
                operands.add(Integer.toString(g));
            }
        }
        step.limits().forEach(l -> appendLimits(operands, l));
        String first = redisKeys.get(0);
        RedisClockOffset clock = clocks.of(first);
        long sentNanos = System.nanoTime();
        return run("all", redisKeys.toArray(String[]::new), operands, clock).thenApply(raw -> {
            // the reply's remaining is the fewest of every charged key, so at most the chosen candidate's capacity
            ScriptReply reply = ScriptReply.parse(raw, candidateLimits);
            return reservation(reply, sentNanos, clocks.still(clock, first));
        });
    }

    /** Answers with the script's 'throttle' (a signal) or 'rate' (a question): see bucket.lua. */
    private CompletionStage<Outcome> adapt(String op, String key, Limits limits) {
        String redisKey = redisKey(key);
        return run(op, new String[] {redisKey}, operands(1, -1, List.of(limits)), clocks.of(redisKey))
                .thenApply(raw -> adaptation(raw, limits));
    }

    /**
     * The reply of the script's 'throttle' or 'rate': a reply of five numbers whose first says whether the rate was
     * cut, then the factor after it and 1 while starting (else 0).
     *
     * @throws IllegalStateException naming the reply when it is not one the script gives
     */
    static Outcome adaptation(List<Long> raw, Limits limits) {
        if (raw != null && raw.size() == ScriptReply.FIELDS + 2) {
            Long factor = raw.get(ScriptReply.FIELDS);
            Long starting = raw.get(ScriptReply.FIELDS + 1);
            ScriptReply reply = ScriptReply.parse(raw.subList(0, ScriptReply.FIELDS), List.of(limits));
            if (factor != null && factor >= 1 && factor <= Adaptive.PPM && starting != null
                    && (starting == 0 || starting == 1)) {
                // the first field of this reply says whether it cut; the rest is the peek of one token
                return new Outcome(reply.waitMicros() == 0, 0, reply.waitMicros() * NANOS_PER_MICRO,
                        reply.remaining(), factor, starting == 1, reply.granted());
            }
        }
        throw ScriptReply.notAnAnswer(raw);
    }

    /** Calls the script with operation {@code op} and a second argument {@code argMicros} (-1: none). */
    private CompletableFuture<Outcome> call(String op, List<String> keys, List<Limits> limits, long tokens,
                                            long argMicros) {
        List<String> operands = operands(tokens, argMicros, limits);
        String[] redisKeys = keys.stream().map(this::redisKey).toArray(String[]::new);
        RedisClockOffset clock = clocks.of(redisKeys[0]);
        long sentNanos = System.nanoTime();
        return run(op, redisKeys, operands, clock).thenApply(raw -> reservation(ScriptReply.parse(raw, limits),
                sentNanos, clocks.still(clock, redisKeys[0])));
    }

    /** The script's ARGV after the operation (bucket.lua's header): the limits' intervals in microseconds, checked. */
    private static List<String> operands(long tokens, long argMicros, List<Limits> limits) {
        List<String> operands = new ArrayList<>();
        operands.add(Long.toString(tokens));
        operands.add(Long.toString(argMicros));
        for (Limits l : limits) {
            appendLimits(operands, l);
        }
        return operands;
    }

    /**
     * Runs the script's operation {@code op} on {@code redisKeys}, with {@code operands} after it in ARGV, on the
     * server whose estimate is {@code clock}.
     */
    private CompletableFuture<List<Long>> run(String op, String[] redisKeys, List<String> operands,
                                              RedisClockOffset clock) {
        String[] args = new String[operands.size() + 1];
        args[0] = op;
        for (int i = 0; i < operands.size(); i++) {
            args[i + 1] = operands.get(i);
        }
        return send(clock, c -> BucketScript.run(c, redisKeys, args));
    }

    /**
     * Appends one key's limits as the script reads them: their adaptation if any ('A' and its seven numbers, times
     * in microseconds rounded up), their number, then each capacity and interval in microseconds (rounded up
     * again: never faster than the nanosecond limit).
     *
     * @throws IllegalArgumentException for a limit whose burst is beyond what the script computes exactly
     */
    private static void appendLimits(List<String> args, Limits l) {
        Adaptive adaptive = l.adaptive();
        if (adaptive != null) {
            args.add("A");
            args.add(Long.toString(adaptive.floorPpm()));
            args.add(Long.toString(adaptive.decreasePpm()));
            args.add(Long.toString(adaptive.increasePpm()));
            args.add(Long.toString(ceilMicros(adaptive.holdTicks())));
            args.add(Long.toString(ceilMicros(adaptive.memoryTicks())));
            args.add(Long.toString(Adaptive.stepTokens(l)));
            args.add(Long.toString(adaptive.startPpm()));
        }
        args.add(Integer.toString(l.size()));
        for (int i = 0; i < l.size(); i++) {
            Limit limit = l.get(i);
            long intervalMicros = Math.max(1, ceilMicros(limit.interval()));
            if (limit.capacity() > MAX_BURST_MICROS / intervalMicros) {
                throw new IllegalArgumentException("a limit of capacity " + limit.capacity() + " and one token"
                        + " per " + intervalMicros + " microseconds is too large for store=redis: a full bucket"
                        + " takes over 2^51 microseconds (71 years) to refill, beyond what the script computes"
                        + " exactly; lower the capacity or refill more slowly");
            }
            args.add(Long.toString(limit.capacity()));
            args.add(Long.toString(intervalMicros));
        }
    }

    /**
     * One reservation waiting for its batch: its Redis key, limits, its part of the script's ARGV (tokens, the
     * longest wait in microseconds, the limits) and the stage its caller holds.
     */
    private record Member(String redisKey, Limits limits, List<String> args, CompletableFuture<Outcome> result) {
    }

    /**
     * The lane of a Redis key: by a hash of the key, or on a cluster of its hash slot, so that the keys of one slot
     * share a lane and a lane's call can be split by slot (a script's keys must all be in one slot there).
     */
    private int lane(String redisKey) {
        int h = cluster ? SlotHash.getSlot(redisKey) : redisKey.hashCode();
        return Math.floorMod(h ^ (h >>> 16), LANES);
    }

    /**
     * The reservations of one lane: one call in flight (on a cluster one per hash slot, sent together and all
     * returned before the next); what arrives meanwhile queues, whatever its key, and when the call returns
     * everything queued goes as the next call.
     */
    private final class Lane {
        /** What queued behind the call in flight. */
        private final ArrayDeque<Member> queue = new ArrayDeque<>();
        private int inFlight;

        void submit(Member member) {
            synchronized (this) {
                if (inFlight >= IN_FLIGHT) {
                    queue.add(member);
                    // a call of its own would time out this long after it was made; so does a queued one
                    member.result().orTimeout(timeoutNanos, TimeUnit.NANOSECONDS);
                    return;
                }
                inFlight++;
            }
            dispatch(List.of(member));
        }

        /** The next batch from the queue, or null (and one call fewer in flight) when nothing queued. */
        private List<Member> next() {
            synchronized (this) {
                List<Member> batch = new ArrayList<>(Math.min(queue.size(), MAX_BATCH));
                while (!queue.isEmpty() && batch.size() < MAX_BATCH) {
                    Member m = queue.poll();
                    if (!m.result().isDone()) { // one that timed out while queued reserves nothing
                        batch.add(m);
                    }
                }
                if (batch.isEmpty()) {
                    inFlight--;
                    return null;
                }
                return batch;
            }
        }

        /** Sends a batch: one call, or on a cluster one per hash slot among its members, in arrival order each. */
        private void dispatch(List<Member> batch) {
            List<List<Member>> calls = cluster ? bySlot(batch) : List.of(batch);
            AtomicInteger outstanding = new AtomicInteger(calls.size());
            for (List<Member> call : calls) {
                send(call, () -> {
                    // the next batch goes first: Redis works on it while this one's answers are handed out
                    if (outstanding.decrementAndGet() == 0) {
                        List<Member> following = next();
                        if (following != null) {
                            dispatch(following);
                        }
                    }
                });
            }
        }

    }

    /**
     * Sends reservations as one call of the script's {@code reserve} (their keys in one hash slot on a cluster);
     * when it returns, runs {@code returned} (null: nothing), then completes each member from its slice of the reply.
     */
    private void send(List<Member> call, Runnable returned) {
        if (batching) {
            batchSizes.accept(call.size());
        }
        String redisKey = call.get(0).redisKey();
        RedisClockOffset clock = clocks.of(redisKey);
        long sentNanos = System.nanoTime();
        CompletableFuture<List<Long>> reply;
        try {
            reply = reserve(call, clock);
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((raw, failure) -> {
            if (returned != null) {
                returned.run();
            }
            answer(call, raw, failure, sentNanos, clocks.still(clock, redisKey));
        });
    }

    /** A cluster batch split by hash slot, each part in arrival order (a key is in one slot, so its order holds). */
    private static List<List<Member>> bySlot(List<Member> batch) {
        Map<Integer, List<Member>> slots = new LinkedHashMap<>();
        for (Member m : batch) {
            slots.computeIfAbsent(SlotHash.getSlot(m.redisKey()), s -> new ArrayList<>()).add(m);
        }
        return new ArrayList<>(slots.values());
    }

    /** Reservations in one call of the script's {@code reserve}, in the order given (one alone is the trivial case). */
    private CompletableFuture<List<Long>> reserve(List<Member> members, RedisClockOffset clock) {
        String[] keys = new String[members.size()];
        List<String> operands = new ArrayList<>(members.size() * 5);
        for (int i = 0; i < keys.length; i++) {
            keys[i] = members.get(i).redisKey();
            operands.addAll(members.get(i).args());
        }
        return run("reserve", keys, operands, clock);
    }

    /**
     * Completes each member of a call: its own slice of the reply, checked as a reply of its own; a failed call,
     * or a reply of the wrong length, fails every member with that cause, each on its own stage. {@code clock}: the
     * estimate of the server that ran it, null when not known.
     *
     * <p>The reply ends with a second Redis {@code now}, read after the members' work: the clock estimate learns from
     * that one, since the first (each member's wait counts from it) is older than the reply by the whole call's
     * work, and an estimate learnt from it would map every slot of a batch late by that work. Each member's wait is
     * mapped onto the local clock when that member is completed, not once for the batch: completing a member runs
     * its caller's continuation on this thread, so the last of a few hundred is completed a good while after the
     * first, and a wait counted from the reply's arrival would end late by that while.
     */
    private void answer(List<Member> batch, List<Long> raw, Throwable failure, long sentNanos,
                        RedisClockOffset clock) {
        boolean alone = batch.size() == 1;
        int expected = batch.size() * ScriptReply.FIELDS + 1;
        Throwable cause = failure;
        // every entry is checked for its type (here the last, each member's by ScriptReply.parse): an entry of another
        // type would throw out of this completion and leave every member of the call pending for ever
        if (cause == null && (raw == null || raw.size() != expected
                || !(((List<?>) raw).get(expected - 1) instanceof Long))) {
            String shown = String.valueOf(raw);
            cause = new IllegalStateException("Redis answered a call of " + batch.size() + " reservations with "
                    + (shown.length() > 200 ? shown.substring(0, 200) + "..." : shown) + ", which is not an answer"
                    + " the script gives; nothing was decided on it");
        }
        if (cause != null) {
            Throwable unwrapped = BucketScript.unwrap(cause);
            batch.forEach(m -> m.result().completeExceptionally(unwrapped));
            return;
        }
        long receivedNanos = System.nanoTime();
        boolean sampled = false;
        for (int i = 0; i < batch.size(); i++) {
            Member m = batch.get(i);
            ScriptReply reply;
            try {
                reply = ScriptReply.parse(raw.subList(i * ScriptReply.FIELDS, (i + 1) * ScriptReply.FIELDS),
                        List.of(m.limits()));
            } catch (IllegalStateException e) {
                m.result().completeExceptionally(e);
                continue;
            }
            if (clock != null && !sampled) {
                long endMicros = raw.get(expected - 1);
                if (endMicros >= reply.redisNowMicros()) { // else a reply the script does not give: not learnt from
                    // a batch's round trip includes its members' work: not the way there and back
                    clock.sample(sentNanos, receivedNanos, endMicros, alone);
                }
                sampled = true;
            }
            m.result().complete(mapped(reply, System.nanoTime(), clock));
        }
    }

    /** The script's {@code maxWait} argument: never more than {@link #MAX_WAIT_NANOS}, rounded up to microseconds. */
    private static long maxWaitMicros(long maxWaitNanos) {
        return ceilMicros(Math.max(0, Math.min(maxWaitNanos, MAX_WAIT_NANOS)));
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
        return mapped(reply, receivedNanos, clock);
    }

    /** The reservation of a reply handled at {@code receivedNanos}, its wait mapped as {@link #reservation} says. */
    private Outcome mapped(ScriptReply reply, long receivedNanos, RedisClockOffset clock) {
        long waitNanos = reply.waitMicros() * NANOS_PER_MICRO;
        if (clock != null && waitNanos > 0) {
            waitNanos = localWait(waitNanos, clock.localNanos(reply.redisNowMicros() + reply.waitMicros()),
                    receivedNanos);
        }
        return new Outcome(reply.granted(), reply.chosenIndex(), waitNanos, reply.remaining(), Adaptive.PPM, false,
                false);
    }

    /**
     * The wait from {@code nowNanos} until {@code slotNanos} (the slot on the local clock), but never longer than
     * the wait Redis gave (counted from Redis's now, that one ends late by the reply's delay, never early).
     */
    static long localWait(long redisWaitNanos, long slotNanos, long nowNanos) {
        if (slotNanos == Long.MAX_VALUE) {
            return redisWaitNanos;
        }
        return Math.min(redisWaitNanos, Math.max(0, slotNanos - nowNanos));
    }

    private static long ceilMicros(long nanos) {
        return nanos / NANOS_PER_MICRO + (nanos % NANOS_PER_MICRO == 0 ? 0 : 1);
    }
}
