package org.ucx4j.comm;

/**
 * A comm failed: connecting, the handshake, reading or writing. Unchecked, like {@link org.ucx4j.UcxException}; the subclasses are the cases callers branch on. The cause, when there is one, is the transport's own error (a {@link org.ucx4j.UcxException} or an {@link java.io.IOException}).
 *
 * <p>Threading: an immutable exception.
 */
public class CommException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, naming the comm or address involved
     */
    public CommException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a cause.
     *
     * @param message what went wrong, naming the comm or address involved
     * @param cause the underlying failure (a UCX or I/O error), or null
     */
    public CommException(String message, Throwable cause) {
        super(message, cause);
    }
}
