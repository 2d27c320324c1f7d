package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreCommand;

/**
 * The arguments of {@code bucket.lua} after its operation (its header says how it reads them), as {@link ScriptReply}
 * is its answer: times in microseconds, rounded up (never faster than the nanosecond limit), and checked against
 * what the script computes exactly before any round trip.
 */
final class ScriptArgs {

    /**
     * The largest burst ({@code capacity × interval}) of a limit on Redis, in microseconds: 2^51 (71 years). With
     * states read no further ahead than 2^52 microseconds, every number {@code bucket.lua} computes stays below
     * 2^53, which Lua's doubles hold exactly.
     */
    static final long MAX_BURST_MICROS = 1L << 51;

    private ScriptArgs() {
    }

    /**
     * The arguments of a {@code reserve} on {@code keys} keys: the amount and the longest wait (never more than
     * {@link BucketStore#MAX_WAIT_NANOS}); for several keys {@code 'C'}, their count and the candidates' (one key
     * goes without it, which the script reads as one key of one candidate); for a candidate of several keys
     * {@code 'G'} and each candidate's key count; then every key's limits ({@link #appendLimits}).
     */
    static List<String> reserve(Step step, int keys, StoreCommand.Lease lease) {
        int[] groups = step.groups();
        List<String> args = new ArrayList<>();
        args.add(Long.toString(step.amount()));
        args.add(Long.toString(micros(Math.max(0, Math.min(step.maxWaitTicks(), BucketStore.MAX_WAIT_NANOS)))));
        if (keys > 1) {
            args.add("C");
            args.add(Integer.toString(keys));
            args.add(Integer.toString(groups.length));
        }
        if (Arrays.stream(groups).anyMatch(g -> g > 1)) {
            args.add("G");
            for (int g : groups) {
                args.add(Integer.toString(g));
            }
        }
        step.limits().forEach(l -> appendLimits(args, l, lease));
        return args;
    }

    /**
     * The arguments of another operation: {@code tokens}, a second argument {@code arg} (a penalty in microseconds,
     * a release's channel, or -1 for none), then every key's limits ({@link #appendLimits}).
     */
    static List<String> operands(long tokens, String arg, List<Limits> limits, StoreCommand.Lease lease) {
        List<String> operands = new ArrayList<>();
        operands.add(Long.toString(tokens));
        operands.add(arg);
        for (Limits l : limits) {
            appendLimits(operands, l, lease);
        }
        return operands;
    }

    /**
     * Appends one key's limits as the script reads them: their in-flight limit if any ('F', the limit, the lease id,
     * the lease time and the ticket time (0: none); '-', 0 and 0 without a lease, for a command that takes and names
     * no slot), their adaptation if any ('A' and its seven numbers), their number, then each capacity and interval.
     *
     * @throws IllegalArgumentException for a limit whose burst is beyond what the script computes exactly
     */
    private static void appendLimits(List<String> args, Limits l, StoreCommand.Lease lease) {
        if (l.inFlight() > 0) {
            args.add("F");
            args.add(Long.toString(l.inFlight()));
            args.add(lease == null ? "-" : lease.id());
            args.add(lease == null ? "0" : Long.toString(micros(lease.nanos())));
            args.add(lease == null ? "0" : Long.toString(micros(lease.ticketNanos())));
        }
        Adaptive adaptive = l.adaptive();
        if (adaptive != null) {
            args.add("A");
            args.add(Long.toString(adaptive.floorPpm()));
            args.add(Long.toString(adaptive.decreasePpm()));
            args.add(Long.toString(adaptive.increasePpm()));
            args.add(Long.toString(micros(adaptive.holdTicks())));
            args.add(Long.toString(micros(adaptive.memoryTicks())));
            args.add(Long.toString(Adaptive.stepTokens(l)));
            args.add(Long.toString(adaptive.startPpm()));
        }
        args.add(Integer.toString(l.size()));
        for (int i = 0; i < l.size(); i++) {
            Limit limit = l.get(i);
            args.add(Long.toString(limit.capacity()));
            args.add(Long.toString(intervalMicros(limit)));
        }
    }

    /**
     * The interval of {@code limit} in whole microseconds, rounded up, once its burst is checked against
     * {@link #MAX_BURST_MICROS}.
     *
     * @throws IllegalArgumentException naming the limit when its burst is beyond it
     */
    private static long intervalMicros(Limit limit) {
        long intervalMicros = Math.max(1, micros(limit.interval()));
        if (limit.capacity() > MAX_BURST_MICROS / intervalMicros) {
            throw new IllegalArgumentException("a limit of capacity " + limit.capacity() + " and one token"
                    + " per " + intervalMicros + " microseconds is too large for store=redis: a full bucket"
                    + " takes over 2^51 microseconds (71 years) to refill, beyond what the script computes"
                    + " exactly; lower the capacity or refill more slowly");
        }
        return intervalMicros;
    }

    /**
     * Checks {@code limit} where it is configured: its burst as every call does, and its rate kept within 1 % on
     * Redis's microsecond clock (a call itself rounds the interval up, as the local store rounds it to a nanosecond).
     *
     * @throws IllegalArgumentException naming the limit otherwise
     */
    static void check(Limit limit) {
        intervalMicros(limit);
        try {
            limit.requireRateAt(1000);
        } catch (IllegalArgumentException slowed) {
            throw new IllegalArgumentException(slowed.getMessage() + " (store=redis keeps time in microseconds)",
                    slowed);
        }
    }

    /** {@code nanos} in microseconds, rounded up. */
    static long micros(long nanos) {
        return nanos / 1000 + (nanos % 1000 == 0 ? 0 : 1);
    }
}
