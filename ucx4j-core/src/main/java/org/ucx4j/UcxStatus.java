package org.ucx4j;

/**
 * UCX status codes ({@code ucs_status_t}, {@code ucs/type/status.h}). Codes this enum does not name map
 * to {@link #UNKNOWN}; the exception that carries a status keeps the raw value too
 * ({@link UcxException#rawStatus()}), so nothing is lost when a newer UCX adds codes.
 *
 * <p>Threading: an immutable constant.
 */
public enum UcxStatus {
    /** Success. */
    OK(0),
    /** Operation in progress. */
    INPROGRESS(1),
    /** No pending message. */
    NO_MESSAGE(-1),
    /** No resources are available to initiate the operation. */
    NO_RESOURCE(-2),
    /** Input/output error. */
    IO_ERROR(-3),
    /** Out of memory. */
    NO_MEMORY(-4),
    /** Invalid parameter. */
    INVALID_PARAM(-5),
    /** Destination is unreachable. */
    UNREACHABLE(-6),
    /** Address not valid. */
    INVALID_ADDR(-7),
    /** Function not implemented. */
    NOT_IMPLEMENTED(-8),
    /** Message truncated: the receive buffer was too small. */
    MESSAGE_TRUNCATED(-9),
    /** No progress. */
    NO_PROGRESS(-10),
    /** Provided buffer is too small. */
    BUFFER_TOO_SMALL(-11),
    /** No such element. */
    NO_ELEM(-12),
    /** Failed to connect some of the requested endpoints. */
    SOME_CONNECTS_FAILED(-13),
    /** No such device. */
    NO_DEVICE(-14),
    /** Device is busy (also: address already in use). */
    BUSY(-15),
    /** Request canceled. */
    CANCELED(-16),
    /** Shared memory error. */
    SHMEM_SEGMENT(-17),
    /** Element already exists. */
    ALREADY_EXISTS(-18),
    /** Index out of range. */
    OUT_OF_RANGE(-19),
    /** Operation timed out. */
    TIMED_OUT(-20),
    /** User-defined limit was reached. */
    EXCEEDS_LIMIT(-21),
    /** Unsupported operation. */
    UNSUPPORTED(-22),
    /** Operation rejected by the remote peer. */
    REJECTED(-23),
    /** Endpoint is not connected. */
    NOT_CONNECTED(-24),
    /** Connection reset by the remote peer. */
    CONNECTION_RESET(-25),
    /** Endpoint timeout (keep-alive or transport timeout). */
    ENDPOINT_TIMEOUT(-80),
    /** A code this version of ucx4j does not name. */
    UNKNOWN(Integer.MIN_VALUE);

    private static final UcxStatus[] VALUES = values();

    private final int code;

    UcxStatus(int code) {
        this.code = code;
    }

    /**
     * The raw {@code ucs_status_t} value ({@link Integer#MIN_VALUE} for {@link #UNKNOWN}).
     *
     * @return the C value
     */
    public int code() {
        return code;
    }

    /**
     * Maps a raw code.
     *
     * @param code a {@code ucs_status_t}
     * @return the constant, or {@link #UNKNOWN}
     */
    public static UcxStatus of(int code) {
        for (UcxStatus s : VALUES) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }

    /**
     * Whether a raw code is in UCX's link-failure range ({@code -40..-59}) or endpoint-failure range
     * ({@code -60..-89}).
     *
     * @param code a {@code ucs_status_t}
     * @return true for a failure of the link or the remote endpoint
     */
    public static boolean isPeerFailure(int code) {
        return code <= -40 && code >= -89;
    }
}
