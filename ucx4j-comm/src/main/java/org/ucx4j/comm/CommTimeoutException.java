package org.ucx4j.comm;

/**
 * An operation did not finish in the time given: a connect (the {@code connect-timeout} of the config) or a read with a timeout. A timed-out read leaves the comm open and usable; the next read gets the next message, nothing is lost.
 *
 * <p>Threading: an immutable exception.
 */
public final class CommTimeoutException extends CommException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, naming the comm or address involved
     */
    public CommTimeoutException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a cause.
     *
     * @param message what went wrong, naming the comm or address involved
     * @param cause the underlying failure (a UCX or I/O error), or null
     */
    public CommTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
