package io.tokenbucket.example;

/**
 * An operator's setting the example cannot run with: a value out of range, a proxy or URL file it cannot read. The
 * application prints the message as one line, with no stack trace, and exits with {@link #EXIT_CODE}: only the
 * setting is to blame.
 */
public final class SettingsRefused extends IllegalArgumentException {

    /** The exit code of an instance that did not start, or stopped, because of a setting. */
    public static final int EXIT_CODE = 2;

    private static final long serialVersionUID = 1L;

    /**
     * @param message what the setting is and why it was refused, naming the setting and its value
     * @param cause   the failure that refused it, null for none: its kind is added to the message, and its text
     *                  where that says more
     */
    SettingsRefused(String message, Throwable cause) {
        super(cause == null ? message : message + " (" + cause.getClass().getSimpleName()
                + (cause.getMessage() == null || message.contains(cause.getMessage()) ? "" : ": " + cause.getMessage())
                + ")", cause);
    }

    /** The refusal in {@code failure} or among its causes; null when none is. */
    static SettingsRefused in(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SettingsRefused refused) {
                return refused;
            }
        }
        return null;
    }
}
