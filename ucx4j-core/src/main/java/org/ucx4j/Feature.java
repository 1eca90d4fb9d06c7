package org.ucx4j;

/**
 * A UCP feature a context asks for ({@code UCP_FEATURE_*}). Asking only for what is used lets UCX pick
 * leaner transports.
 *
 * <p>Threading: an immutable constant.
 */
public enum Feature {
    /** Tag-matched messages. */
    TAG(1L),
    /** Remote memory access: put and get. */
    RMA(1L << 1),
    /** 32-bit remote atomics. */
    AMO32(1L << 2),
    /** 64-bit remote atomics. */
    AMO64(1L << 3),
    /** Event-fd wake-up, needed by {@link ProgressMode#THREAD_BLOCKING} and blocking waits. */
    WAKEUP(1L << 4),
    /** Byte streams. */
    STREAM(1L << 5),
    /** Active messages. */
    AM(1L << 6);

    private final long bit;

    Feature(long bit) {
        this.bit = bit;
    }

    /**
     * The {@code UCP_FEATURE_*} bit.
     *
     * @return the bit
     */
    public long bit() {
        return bit;
    }
}
