package io.tokenbucket.store;

/**
 * The store answered, refusing the operation, for a reason that waiting will not mend: a missing permission (a
 * Redis ACL without a command, a key or a channel the operation needs), a script that cannot be loaded or run, a
 * command the server does not know. Unlike a store that cannot be reached or does not answer in time, it is not an
 * outage: {@link FallbackBucketStore} never answers it with its fallback, and the failed call fails.
 *
 * <p>Its message is the store's own answer (for Redis, its error reply), which names what was refused.
 */
public class StoreRefusedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what the store answered
     * @param cause   the client's exception carrying that answer
     */
    public StoreRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
