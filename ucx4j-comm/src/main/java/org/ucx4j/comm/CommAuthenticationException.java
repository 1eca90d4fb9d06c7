package org.ucx4j.comm;

/**
 * The handshake's shared-secret check failed: a wrong or missing {@code auth.secret} on one side. Nothing was delivered on the connection.
 *
 * <p>Threading: an immutable exception.
 */
public final class CommAuthenticationException extends CommException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, naming the comm or address involved
     */
    public CommAuthenticationException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a cause.
     *
     * @param message what went wrong, naming the comm or address involved
     * @param cause the underlying failure (a UCX or I/O error), or null
     */
    public CommAuthenticationException(String message, Throwable cause) {
        super(message, cause);
    }
}
