package org.ucx4j.comm;

/**
 * The peer broke the protocol: a bad magic or version, a header claiming more frames or bytes than {@code max-frames} / {@code max-frame-size} / {@code max-message-size} allow, a truncated or malformed header. The comm is aborted; nothing of what the header claimed was allocated.
 *
 * <p>Threading: an immutable exception.
 */
public final class CommProtocolException extends CommException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, naming the comm or address involved
     */
    public CommProtocolException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a cause.
     *
     * @param message what went wrong, naming the comm or address involved
     * @param cause the underlying failure (a UCX or I/O error), or null
     */
    public CommProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
