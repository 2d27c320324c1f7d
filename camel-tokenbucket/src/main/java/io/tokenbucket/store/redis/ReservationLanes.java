package io.tokenbucket.store.redis;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;

/**
 * The reservations of one key each, sent as calls of {@code bucket.lua}'s {@code reserve}: batched across keys
 * ({@code redisBatching}, on by default) or one call each, pipelined.
 *
 * <p>Batched, there are {@link #LANES} lanes, a key always in the same one, each with one call in flight
 * ({@link #IN_FLIGHT}); the reservations that arrive while it is out queue, whatever their keys, and when it
 * returns everything queued (at most {@link #MAX_BATCH}) goes as the next call, which the script decides in arrival
 * order, each on the state the one before left: FIFO on a key and the bound hold exactly as with one call each.
 * Nothing waits for a batch to fill: a reservation that finds its lane idle goes at once, alone. On a cluster a
 * lane's batch goes as one call per hash slot among its members, sent together, and the lane's next batch waits for
 * all of them. A call that fails (a timeout, a lost connection, a reply the checks refuse) fails each of its
 * reservations alone, as its own call would have failed; a queued reservation times out within the store timeout of
 * its arrival.
 */
final class ReservationLanes {

    /** Sends one call of the script's {@code reserve} with these keys and operands, timed, to {@code clock}'s server. */
    @FunctionalInterface
    interface Script {
        CompletableFuture<List<Long>> reserve(String[] redisKeys, List<String> operands, RedisClockOffset clock);
    }

    /**
     * The most reservations in one script call: 256. Redis runs a script alone, and a batch costs it 3 to 9
     * microseconds per reservation (INFO commandstats in measurement2-redis-acquire-batching-2026-12-02.txt: hot
     * key, random keys), so one call holds other clients up for at most about 2.3 ms.
     */
    static final int MAX_BATCH = 256;

    /**
     * How many reservation calls may be in flight at once per lane ({@link #LANES}): 1. FIFO
     * needs it: with one, every call after the first of a busy spell is written by the thread that handled the
     * reply before it, so calls reach Redis in arrival order; with two, a call written from a caller's thread
     * can be overtaken on the connection by a batch written from the I/O thread (Netty queues a write from
     * another thread as a task), and RedisBatchingTest saw a later reservation get the earlier slot.
     */
    static final int IN_FLIGHT = 1;

    /**
     * How many lanes a store has: 4, a key's lane chosen by a hash of its Redis key (on a cluster, of its hash slot).
     * Each lane has one call in flight ({@link #IN_FLIGHT}) carrying everything that queued for it, whatever the
     * keys, so a key's reservations reach Redis in arrival order and reservations on different keys share calls.
     * More than one lane keeps Redis busy while a lane's reply and its next call are on the wire: with one, Redis
     * sat idle for every round trip; with many (1,024), random keys rarely met in a lane and every reservation
     * paid a script call of its own.
     */
    static final int LANES = 4;

    private final boolean cluster;
    private final boolean batching;
    private final LongConsumer batchSizes;
    private final long timeoutNanos;
    private final RedisClocks clocks;
    private final Script script;
    /** The lanes, a key's by a hash of its Redis key (standalone) or of its hash slot (cluster). */
    private final Lane[] lanes = new Lane[LANES];

    /**
     * @param cluster      whether the connection is a Redis Cluster's (a call's keys must then share a hash slot)
     * @param batching     whether reservations that queue while a lane's call is out go together in its next call;
     *                     false: one call each
     * @param batchSizes   hears the number of reservations of every call sent while batching; must not block
     * @param timeoutNanos the store timeout, for a reservation still queued
     * @param clocks       the Redis clock estimates, by server
     * @param script       sends a call
     */
    ReservationLanes(boolean cluster, boolean batching, LongConsumer batchSizes, long timeoutNanos, RedisClocks clocks,
                     Script script) {
        this.cluster = cluster;
        this.batching = batching;
        this.batchSizes = batchSizes;
        this.timeoutNanos = timeoutNanos;
        this.clocks = clocks;
        this.script = script;
        for (int i = 0; i < LANES; i++) {
            lanes[i] = new Lane();
        }
    }

    /**
     * Reserves: on one key through its lane when batching, on several keys as a call of its own (a lane holds the
     * reservations of its keys in arrival order, and one on keys of several lanes has no one lane to keep its place
     * in; sent at once, it is decided when it reaches Redis, as without batching).
     *
     * @param redisKeys  its Redis keys, as the script reads them for this reservation
     * @param candidates the limits of each candidate key (the one key's, for a reservation on one key), to check the
     *                   reply against
     * @param args       its part of the script's ARGV (bucket.lua's header)
     */
    CompletionStage<Outcome> reserve(String[] redisKeys, List<Limits> candidates, List<String> args) {
        Member member = new Member(redisKeys, candidates, args, new CompletableFuture<>());
        if (batching && redisKeys.length == 1) {
            lanes[lane(redisKeys[0])].submit(member);
        } else {
            send(List.of(member), null);
        }
        return member.result();
    }

    /**
     * One reservation waiting for its call: its Redis keys, the limits of its candidates, its part of the script's
     * ARGV and the stage its caller holds.
     */
    private record Member(String[] redisKeys, List<Limits> candidates, List<String> args,
                          CompletableFuture<Outcome> result) {
        String firstKey() {
            return redisKeys[0];
        }
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
        String redisKey = call.get(0).firstKey();
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
            slots.computeIfAbsent(SlotHash.getSlot(m.firstKey()), s -> new ArrayList<>()).add(m);
        }
        return new ArrayList<>(slots.values());
    }

    /** Reservations in one call of the script's {@code reserve}, in the order given (one alone is the trivial case). */
    private CompletableFuture<List<Long>> reserve(List<Member> members, RedisClockOffset clock) {
        List<String> keys = new ArrayList<>(members.size());
        List<String> operands = new ArrayList<>(members.size() * 5);
        for (Member m : members) {
            keys.addAll(List.of(m.redisKeys()));
            operands.addAll(m.args());
        }
        return script.reserve(keys.toArray(String[]::new), operands, clock);
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
                        m.candidates());
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
            m.result().complete(reply.outcome(System.nanoTime(), clock));
        }
    }
}
