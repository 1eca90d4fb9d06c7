package org.ucx4j;

import org.ucx4j.internal.Ucp;

/**
 * A failure reported by UCX or detected by ucx4j on UCX's behalf: carries the status, UCX's own text for
 * it and the call that failed. Unchecked, like {@link java.io.UncheckedIOException}: network trouble is
 * expected in a distributed system, but most callers handle it at one place.
 *
 * <p>Subclasses exist only where callers branch: {@link UcxCanceledException},
 * {@link UcxTimeoutException}, {@link UcxConnectionResetException}, {@link UcxUnreachableException}.
 * Misuse (closed objects, bad arguments, blocking inside a callback) is {@link IllegalStateException} or
 * {@link IllegalArgumentException}, not this.
 *
 * <p>Threading: immutable once thrown.
 */
public class UcxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient UcxStatus status;
    private final int rawStatus;
    private final String call;

    /**
     * Creates an exception for a failed call.
     *
     * @param call the UCX function or ucx4j operation that failed, e.g. {@code ucp_ep_create}
     * @param rawStatus the raw {@code ucs_status_t}
     * @param detail what was being done (the peer, the size), or null
     */
    public UcxException(String call, int rawStatus, String detail) {
        this(call, rawStatus, detail, null);
    }

    /**
     * Creates an exception for a failed call, with a cause.
     *
     * @param call the UCX function or ucx4j operation that failed
     * @param rawStatus the raw {@code ucs_status_t}
     * @param detail what was being done, or null
     * @param cause the underlying failure, or null
     */
    public UcxException(String call, int rawStatus, String detail, Throwable cause) {
        super(message(call, rawStatus, detail), cause);
        this.status = UcxStatus.of(rawStatus);
        this.rawStatus = rawStatus;
        this.call = call;
    }

    private static String message(String call, int rawStatus, String detail) {
        StringBuilder sb = new StringBuilder(call).append(" failed: ");
        UcxStatus s = UcxStatus.of(rawStatus);
        sb.append(statusText(rawStatus)).append(" (UCS_");
        sb.append(s == UcxStatus.UNKNOWN ? "status " + rawStatus : (s == UcxStatus.OK ? "OK" : "ERR_" + s.name()));
        sb.append(')');
        if (detail != null && !detail.isEmpty()) {
            sb.append(": ").append(detail);
        }
        return sb.toString();
    }

    private static String statusText(int rawStatus) {
        try {
            return Ucp.statusString(rawStatus);
        } catch (Throwable notLoaded) {
            return UcxStatus.of(rawStatus)
                    .name()
                    .toLowerCase(java.util.Locale.ROOT)
                    .replace('_', ' ');
        }
    }

    /**
     * The status as an enum constant ({@link UcxStatus#UNKNOWN} for codes this version does not name).
     *
     * @return the status
     */
    public UcxStatus status() {
        return status == null ? UcxStatus.of(rawStatus) : status;
    }

    /**
     * The raw {@code ucs_status_t} value.
     *
     * @return the C value
     */
    public int rawStatus() {
        return rawStatus;
    }

    /**
     * The call that failed.
     *
     * @return a UCX function name or a ucx4j operation name
     */
    public String call() {
        return call;
    }

    /**
     * Creates the most specific exception for a status.
     *
     * @param call the failed call
     * @param rawStatus the raw status
     * @param detail what was being done, or null
     * @return an exception of the subclass callers branch on, or a plain {@link UcxException}
     */
    public static UcxException of(String call, int rawStatus, String detail) {
        UcxStatus s = UcxStatus.of(rawStatus);
        return switch (s) {
            case CANCELED -> new UcxCanceledException(call, rawStatus, detail);
            case TIMED_OUT, ENDPOINT_TIMEOUT -> new UcxTimeoutException(call, rawStatus, detail);
            case CONNECTION_RESET, NOT_CONNECTED, IO_ERROR -> new UcxConnectionResetException(call, rawStatus, detail);
            case UNREACHABLE, REJECTED, INVALID_ADDR -> new UcxUnreachableException(call, rawStatus, detail);
            default ->
                UcxStatus.isPeerFailure(rawStatus)
                        ? new UcxConnectionResetException(call, rawStatus, detail)
                        : new UcxException(call, rawStatus, detail);
        };
    }
}
