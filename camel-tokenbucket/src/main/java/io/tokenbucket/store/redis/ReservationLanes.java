package io.tokenbucket.store.redis;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;

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
     * Sends one call of the script's {@code reserve} with these keys and operands to {@code clock}'s server, failing
     * with a {@link TimeoutException} when it has not answered within the store timeout.
     */
    @FunctionalInterface
    interface Script {
        CompletableFuture<List<Long>> reserve(String[] redisKeys, List<String> operands, RedisClockOffset clock);
    }

    /**
     * The most reservations in one script call: 256. Redis runs a script alone and each reservation of a batch is a
     * few microseconds of its work, so the cap bounds how long one call holds other clients up to a few
     * milliseconds (BENCHMARKS.md, section 2, has the cost per reservation).
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
    private final LongConsumer batchSizes;
    private final long timeoutNanos;
    private final RedisClocks clocks;
    private final Script script;
    /** What queued in each lane, a key's by a hash of its Redis key (standalone) or of its hash slot (cluster). */
    private final ArrayDeque<Member>[] queues;
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
                     Script script) {
        this.cluster = cluster;
        this.batching = batching;
        this.batchSizes = batchSizes;
        this.timeoutNanos = timeoutNanos;
        this.clocks = clocks;
        this.script = script;
        @SuppressWarnings("unchecked")
        ArrayDeque<Member>[] q = new ArrayDeque[LANES];
        for (int i = 0; i < LANES; i++) {
            q[i] = new ArrayDeque<>();
        }
        this.queues = q;
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
            send(List.of(member), null);
        }
        return member.result();
    }

    /**
     * One reservation waiting for its call: its Redis keys, the limits of its candidates, its part of the script's
     * ARGV, the lanes of its keys (bit {@code l} for lane {@code l}), when it arrived ({@link System#nanoTime()}) and
     * the stage its caller holds.
     */
    private record Member(String[] redisKeys, List<Limits> candidates, List<String> args, int lanes,
                          long arrivedNanos, CompletableFuture<Outcome> result) {
        String firstKey() {
            return redisKeys[0];
        }
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
                    queues[l].add(member);
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
        ArrayDeque<Member> queue = queues[lane];
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
                    queues[l].poll();
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
        List<List<Member>> calls = cluster ? bySlot(batch.members()) : List.of(batch.members());
        AtomicInteger outstanding = new AtomicInteger(calls.size());
        for (List<Member> call : calls) {
            send(call, () -> {
                // the next batch goes first: Redis works on it while this one's answers are handed out
                if (outstanding.decrementAndGet() == 0) {
                    free(batch.held(), batch.held());
                }
            });
        }
    }

    /**
     * Sends reservations as one call of the script's {@code reserve} (their keys in one hash slot on a cluster);
     * when it returns, runs {@code returned} (null: nothing), then completes each member from its slice of the reply.
     */
    private void send(List<Member> batch, Runnable returned) {
        List<Member> call = unexpired(batch);
        if (call.isEmpty()) {
            if (returned != null) {
                returned.run();
            }
            return;
        }
        String redisKey = call.get(0).firstKey();
        long sentNanos = System.nanoTime();
        RedisClockOffset clock = null;
        CompletableFuture<List<Long>> reply;
        try {
            if (batching) {
                batchSizes.accept(call.size());
            }
            clock = clocks.of(redisKey);
            reply = reserve(call, clock);
        } catch (Throwable e) { // a call that cannot be sent fails its members, and its lanes go on: never a hang
            reply = CompletableFuture.failedFuture(e);
        }
        RedisClockOffset sentTo = clock;
        reply.whenComplete((raw, failure) -> {
            try {
                if (returned != null) {
                    returned.run();
                }
            } finally {
                answer(call, raw, failure, sentNanos, clocks.still(sentTo, redisKey));
            }
        });
    }

    /**
     * The members of a batch that have not queued for the store timeout; those that have fail with a
     * {@link TimeoutException}, unsent, as a call of their own would have by then. One queued behind a call that
     * takes the whole timeout still goes (it arrived after that call was sent), so no reservation waits for its
     * answer longer than twice the store timeout.
     */
    private List<Member> unexpired(List<Member> batch) {
        long now = System.nanoTime();
        List<Member> call = batch;
        for (int i = 0; i < batch.size(); i++) {
            Member m = batch.get(i);
            if (now - m.arrivedNanos() > timeoutNanos) {
                if (call == batch) {
                    call = new ArrayList<>(batch.subList(0, i));
                }
                m.result().completeExceptionally(new TimeoutException("Redis did not answer within the store"
                        + " timeout (" + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms): the reservation"
                        + " queued behind calls that took that long, and was not sent"));
            } else if (call != batch) {
                call.add(m);
            }
        }
        return call;
    }

    /** A cluster batch split by hash slot, each part in arrival order (a key is in one slot, so its order holds). */
    private static List<List<Member>> bySlot(List<Member> batch) {
        Map<Integer, List<Member>> slots = new LinkedHashMap<>();
        for (Member m : batch) {
            slots.computeIfAbsent(SlotHash.getSlot(m.firstKey()), s -> new ArrayList<>()).add(m);
        }
        return new ArrayList<>(slots.values());
    }

    /**
     * Reservations in one call of the script's {@code reserve}, in the order given (one alone is the trivial case).
     * A queued reservation has no timer of its own (one per reservation cost more client CPU than the rest of its way
     * through the store): the call is timed, and one that queued too long is not sent ({@link #unexpired}).
     */
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
