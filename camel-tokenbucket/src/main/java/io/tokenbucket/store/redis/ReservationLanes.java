package io.tokenbucket.store.redis;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.redis.ReservationCalls.Member;

/**
 * Reservations, sent as calls of {@code bucket.lua}'s {@code reserve}: batched across keys ({@code redisBatching},
 * on by default) or one call each, pipelined.
 *
 * <p>Batched, there are {@link #LANES} lanes, a key always in the same one, each with one call in flight; the
 * reservations that arrive while it is out queue, whatever their keys, and when it
 * returns everything queued (at most {@link #MAX_BATCH}) goes as the next call, which the script decides in arrival
 * order, each on the state the one before left: FIFO on a key and the bound hold exactly as with one call each.
 * Nothing waits for a batch to fill: a reservation that finds its lane idle goes at once, alone. A reservation on
 * keys of several lanes queues in each of them and goes when it is first in all of them and none has a call out: it
 * keeps its place on each of its keys, ahead of what came after it and behind what came before (queued under one
 * lock, so two such reservations are in the same order in every lane they share, and the first always goes). On a
 * cluster a reservation's keys share a hash slot, so its lane; a lane's batch goes as one call per hash slot among
 * its members, sent together, and the lane's next batch waits for all of them. A call that fails (a timeout, a
 * lost connection, a reply the checks refuse) fails each of its reservations alone, as its own call would have
 * failed; a reservation that has queued for the store timeout fails unsent, so none waits for its answer longer than
 * twice the store timeout.
 *
 * <p>One call in flight per lane is what keeps FIFO: every call after the first of a busy spell is written by the
 * thread that handled the reply before it, so calls reach Redis in arrival order; with two, a call written from a
 * caller's thread can be overtaken on the connection by a batch written from the I/O thread (Netty queues a write
 * from another thread as a task), and RedisBatchingTest saw a later reservation get the earlier slot.
 */
final class ReservationLanes {

    /**
     * The most reservations in one script call: 256. Redis runs a script alone and each reservation of a batch is a
     * few microseconds of its work, so the cap bounds how long one call holds other clients up to a few
     * milliseconds (BENCHMARKS.md has the cost per reservation).
     */
    static final int MAX_BATCH = 256;

    /**
     * How many lanes a store has: 4, a key's lane chosen by a hash of its Redis key (on a cluster, of its hash slot).
     * Each lane has one call in flight carrying everything that queued for it, whatever the
     * keys, so a key's reservations reach Redis in arrival order and reservations on different keys share calls.
     * More than one lane keeps Redis busy while a lane's reply and its next call are on the wire: with one, Redis
     * sat idle for every round trip; with many (1,024), random keys rarely met in a lane and every reservation
     * paid a script call of its own.
     */
    static final int LANES = 4;

    private final boolean cluster;
    private final boolean batching;
    /** Sends a batch's call and completes its members. */
    private final ReservationCalls calls;
    /** What queued in each lane, a key's by a hash of its Redis key (standalone) or of its hash slot (cluster). */
    private final List<ArrayDeque<Member>> queues = Stream.generate(ArrayDeque<Member>::new).limit(LANES).toList();
    /** The lanes with a call out, bit {@code l} for lane {@code l}. Guarded by this, as the queues. */
    private int busy;
    /** The batches this thread has yet to send, while it is sending ({@link #dispatchAll}). */
    private final ThreadLocal<ArrayDeque<Batch>> dispatching = new ThreadLocal<>();

    /**
     * @param cluster      whether the connection is a Redis Cluster's (a call's keys must then share a hash slot)
     * @param batching     whether reservations that queue while a lane's call is out go together in its next call;
     *                     false: one call each
     * @param batchSizes   hears the number of reservations of every call sent while batching; must not block
     * @param timeoutNanos the store timeout: a reservation queued that long is not sent, and fails
     * @param clocks       the Redis clock estimates, by server
     * @param script       sends a call
     */
    ReservationLanes(boolean cluster, boolean batching, LongConsumer batchSizes, long timeoutNanos, RedisClocks clocks,
                     ReservationCalls.Script script) {
        this.cluster = cluster;
        this.batching = batching;
        this.calls = new ReservationCalls(batching, batchSizes, timeoutNanos, clocks, script);
    }

    /**
     * Reserves: through the lanes of its keys when batching, else as a call of its own.
     *
     * @param redisKeys  its Redis keys, as the script reads them for this reservation
     * @param candidates the limits of each candidate key (the one key's, for a reservation on one key), to check the
     *                   reply against
     * @param args       its part of the script's ARGV (bucket.lua's header)
     */
    CompletionStage<Outcome> reserve(String[] redisKeys, List<Limits> candidates, List<String> args) {
        Member member = new Member(redisKeys, candidates, args, batching ? lanes(redisKeys) : 0,
                System.nanoTime(), new CompletableFuture<>());
        if (batching) {
            submit(member);
        } else {
            calls.send(List.of(member), null);
        }
        return member.result();
    }

    /** A batch and the lanes its call holds until it returns (bit {@code l} for lane {@code l}). */
    private record Batch(List<Member> members, int held) {
    }

    /**
     * The lane of a Redis key: by a hash of the key, or on a cluster of its hash slot, so that the keys of one slot
     * share a lane and a lane's call can be split by slot (a script's keys must all be in one slot there).
     */
    static int lane(String redisKey, boolean cluster) {
        int h = cluster ? SlotHash.getSlot(redisKey) : redisKey.hashCode();
        return Math.floorMod(h ^ (h >>> 16), LANES);
    }

    /** The lanes of these keys, bit {@code l} for lane {@code l}. */
    private int lanes(String[] redisKeys) {
        int mask = 0;
        for (String key : redisKeys) {
            mask |= 1 << lane(key, cluster);
        }
        return mask;
    }

    /** Whether {@code mask} has lane {@code l}. */
    private static boolean has(int mask, int l) {
        return (mask & 1 << l) != 0;
    }

    /** Queues a member in each of its lanes, and sends what can go. */
    private void submit(Member member) {
        List<Batch> ready = new ArrayList<>(1);
        synchronized (this) {
            for (int l = 0; l < LANES; l++) {
                if (has(member.lanes(), l)) {
                    queues.get(l).add(member);
                }
            }
            startIn(member.lanes(), ready);
        }
        if (Integer.bitCount(member.lanes()) > 1 && ready.stream().noneMatch(b -> b.members().contains(member))) {
            // one that its caller ends while it is queued may be all that holds the others of its lanes back
            member.result().whenComplete((o, failure) -> free(0, member.lanes()));
        }
        dispatchAll(ready);
    }

    /**
     * Marks the lanes of {@code held} idle (a call's, when it returned; none when a queued member ended) and sends
     * what can go in {@code lanes}.
     */
    private void free(int held, int lanes) {
        List<Batch> ready = new ArrayList<>(1);
        synchronized (this) {
            busy &= ~held;
            startIn(lanes, ready);
        }
        dispatchAll(ready);
    }

    /** {@link #start} in each of {@code lanes}. Guarded by this. */
    private void startIn(int lanes, List<Batch> ready) {
        for (int l = 0; l < LANES; l++) {
            if (has(lanes, l)) {
                start(l, ready);
            }
        }
    }

    /** The first member of a lane that is not done (one that timed out while queued reserves nothing), or null. */
    private Member head(int lane) {
        ArrayDeque<Member> queue = queues.get(lane);
        while (!queue.isEmpty() && queue.peek().result().isDone()) {
            queue.poll();
        }
        return queue.peek();
    }

    /**
     * Starts a batch in {@code lane} when it is idle and its first member is first in all its lanes, all idle: that
     * member, then every member first in its lanes whose lanes the batch already holds, in turn, up to
     * {@link #MAX_BATCH}. Guarded by this.
     */
    private void start(int lane, List<Batch> ready) {
        Member first = has(busy, lane) ? null : head(lane);
        if (first == null || (first.lanes() & busy) != 0 || !firstInAll(first)) {
            return;
        }
        int held = 0;
        List<Member> batch = new ArrayList<>();
        Member next = first;
        while (next != null) {
            for (int l = 0; l < LANES; l++) {
                if (has(next.lanes(), l)) {
                    queues.get(l).poll();
                }
            }
            busy |= next.lanes();
            held |= next.lanes();
            batch.add(next);
            next = null;
            for (int l = 0; l < LANES && next == null && batch.size() < MAX_BATCH; l++) {
                Member m = has(held, l) ? head(l) : null;
                // within the lanes the batch holds (so idle of anything else), and first in each of them
                if (m != null && (m.lanes() & ~held) == 0 && firstInAll(m)) {
                    next = m;
                }
            }
        }
        ready.add(new Batch(batch, held));
    }

    /** Whether {@code m} is first in every one of its lanes; busy or not is for the caller to know. */
    private boolean firstInAll(Member m) {
        for (int l = 0; l < LANES; l++) {
            if (has(m.lanes(), l) && head(l) != m) {
                return false;
            }
        }
        return true;
    }

    /**
     * Sends the batches, in turn. A call that fails at once (not connected, nothing left to send) completes on this
     * thread and frees its lanes, which may start another batch: that one goes after these, from this loop, rather
     * than from a call deeper in the stack, so a long queue failing at once does not recurse once per batch.
     */
    private void dispatchAll(List<Batch> ready) {
        if (ready.isEmpty()) {
            return;
        }
        ArrayDeque<Batch> pending = dispatching.get();
        if (pending != null) {
            pending.addAll(ready);
            return;
        }
        pending = new ArrayDeque<>(ready);
        dispatching.set(pending);
        try {
            for (Batch batch = pending.poll(); batch != null; batch = pending.poll()) {
                dispatch(batch);
            }
        } finally {
            dispatching.remove();
        }
    }

    /** Sends a batch: one call, or on a cluster one per hash slot among its members, in arrival order each. */
    private void dispatch(Batch batch) {
        List<List<Member>> parts = cluster ? bySlot(batch.members()) : List.of(batch.members());
        AtomicInteger outstanding = new AtomicInteger(parts.size());
        for (List<Member> call : parts) {
            calls.send(call, () -> {
                // the next batch goes first: Redis works on it while this one's answers are handed out
                if (outstanding.decrementAndGet() == 0) {
                    free(batch.held(), batch.held());
                }
            });
        }
    }

    /** A cluster batch split by hash slot, each part in arrival order (a key is in one slot, so its order holds). */
    private static List<List<Member>> bySlot(List<Member> batch) {
        Map<Integer, List<Member>> slots = new LinkedHashMap<>();
        for (Member m : batch) {
            slots.computeIfAbsent(SlotHash.getSlot(m.redisKeys()[0]), s -> new ArrayList<>()).add(m);
        }
        return new ArrayList<>(slots.values());
    }
}
