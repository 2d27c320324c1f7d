package io.tokenbucket.store.redis;

import java.util.List;

import io.lettuce.core.RedisCommandExecutionException;
import io.tokenbucket.store.StoreRefusedException;

/**
 * Tells a Redis error reply that waiting will not mend (a refusal) from one that a failover, a restart or a busy
 * server explains (an outage). A refusal is any error reply but these, whether Redis gave it to the command or to a
 * command inside the script ({@code ERR Error running script ...: -READONLY ...}): {@code BUSY} (another script
 * runs), {@code LOADING} (Redis is reading its data), {@code READONLY} (a master became a replica), {@code
 * MASTERDOWN}, {@code TRYAGAIN}, {@code CLUSTERDOWN}, {@code NOREPLICAS}, {@code OOM} (full until keys expire),
 * {@code MISCONF} (writes stopped until a snapshot can be written to disk again), {@code ERR max number of clients
 * reached} (to a connect, while other clients hold every connection {@code maxclients} allows), and a script an
 * operator ended with {@code SCRIPT KILL} (the one slow call fails, as {@code BUSY} fails the calls behind it). So
 * {@code NOPERM} (an ACL without a command, key or channel), a script that cannot run (Redis 6.2 words a command
 * refused inside a script {@code The user executing the script can't run this command}), {@code NOSCRIPT} after the
 * reload, an unknown (renamed) command are refusals.
 */
final class RedisRefusals {

    /** The error codes of an outage, as Redis starts an error reply with them (one {@code ERR} reply whole). */
    private static final List<String> TRANSIENT = List.of("BUSY", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN",
            "CLUSTERDOWN", "NOREPLICAS", "OOM", "MISCONF", "ERR max number of clients reached");
    /** What Redis says, within its error reply, of a script {@code SCRIPT KILL} ended (6.2 and 7 word it alike). */
    private static final String KILLED = "Script killed by user";

    private RedisRefusals() {
    }

    /**
     * {@code failure} as a {@link StoreRefusedException} when it is an error reply that waiting will not mend (its
     * message Redis's reply); else {@code failure} itself.
     */
    static Throwable classify(Throwable failure) {
        Throwable cause = BucketScript.unwrap(failure);
        if (!(cause instanceof RedisCommandExecutionException) || cause.getMessage() == null) {
            return cause;
        }
        String reply = cause.getMessage();
        if (reply.contains(KILLED)) {
            return cause;
        }
        for (String code : TRANSIENT) {
            if (reply.startsWith(code) || reply.contains("-" + code + " ") || reply.contains(": " + code + " ")) {
                return cause;
            }
        }
        return new StoreRefusedException("Redis refused: " + reply, cause);
    }

    /** Whether {@code t} is an error reply of an outage (not a refusal), such as {@code LOADING} to a connect. */
    static boolean isOutageReply(Throwable t) {
        return t instanceof RedisCommandExecutionException && classify(t) == t;
    }
}
