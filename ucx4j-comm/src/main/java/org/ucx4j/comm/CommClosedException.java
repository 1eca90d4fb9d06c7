package org.ucx4j.comm;

/**
 * The comm is closed: the peer closed it gracefully (after every message it wrote before), it was closed or aborted on this side, or the connection was lost (the peer died, the network broke). The message says which.
 *
 * <p>Threading: an immutable exception.
 */
public final class CommClosedException extends CommException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, naming the comm or address involved
     */
    public CommClosedException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a cause.
     *
     * @param message what went wrong, naming the comm or address involved
     * @param cause the underlying failure (a UCX or I/O error), or null
     */
    public CommClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
