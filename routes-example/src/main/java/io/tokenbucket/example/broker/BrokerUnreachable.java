package io.tokenbucket.example.broker;

/**
 * Why an instance connected to another's broker ({@code example.broker=tcp://...}) ended without having reached it:
 * the broker was not reachable for {@code example.brokerWait} from the start (it had ended, or was not started
 * yet). The application prints the message as one line and exits with {@link #EXIT_CODE}.
 */
public final class BrokerUnreachable extends IllegalStateException {

    /** The exit code of an instance that never reached its broker. */
    public static final int EXIT_CODE = 3;

    private static final long serialVersionUID = 1L;

    /** @param message the broker's URL, the settings and the broker's reason, in one line */
    BrokerUnreachable(String message) {
        super(message);
    }
}
