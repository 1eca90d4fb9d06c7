package org.ucx4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The user header of UCXX's simple active messages ({@code am_send}/{@code am_recv}, AM id 0), which
 * ucx4j's simple channel speaks so that each side receives the other's. Layout, as UCXX's
 * {@code AmHeader} serializes it (cpp/src/request_am.cpp; read in UCXX 0.46 to 0.52), native byte order,
 * which is little-endian on every platform ucx4j runs on:
 *
 * <pre>
 * offset  size  field
 *  0      4     memory type of the sender's buffer (ucs_memory_type_t: 0 host, 1 cuda, ...)
 *  4      1     has receiver callback (bool); when 1, an owner (8 bytes) and an id (u64) follow
 *  5      1     memory-type policy: 0 fall back to host memory, 1 fail when the receiver has no
 *               allocator for the memory type (newer UCXX; absent means 0)
 *  6      8     user-header length (u64), then that many bytes (newer UCXX; absent means 0)
 * </pre>
 *
 * UCXX 0.49 and later send 14 bytes when there is no receiver callback and no user header, as ucx4j does;
 * UCXX 0.46 to 0.48 send the first 5 and read only those (so they read ucx4j's too). Fields past the
 * memory type are read only when present, as UCXX does.
 *
 * <p>Threading: immutable. Decoding checks every length against the bytes present: a hostile header gets
 * an {@link IllegalArgumentException} naming what is wrong, never an allocation of what it claims.
 *
 * @param ucsMemoryType the memory type of the sender's buffer
 * @param receiverCallback whether the sender asked for a UCXX receiver callback (ucx4j has none)
 * @param strictMemoryType true: fail when the receiver has no allocator for the memory type; false: fall
 *     back to host memory
 * @param userHeaderLength the length of the opaque user header that follows
 */
record SimpleAmHeader(int ucsMemoryType, boolean receiverCallback, boolean strictMemoryType, long userHeaderLength) {
    /** The size of the header ucx4j sends: no receiver callback, no user header. */
    static final int SIZE = 14;

    private static final int MIN_SIZE = 4;
    /** UCXX's receiver-callback owner ({@code AmReceiverCallbackOwnerType}, 8 chars) and its u64 id. */
    private static final int CALLBACK_INFO_SIZE = 8 + 8;

    private static final int POLICY_FALLBACK_TO_HOST = 0;
    private static final int POLICY_ERROR_ON_UNSUPPORTED = 1;

    /**
     * The header for a body of {@code kind} memory: host bodies fall back to host (nothing else there is),
     * device bodies are strict, so a receiver without an allocator for that kind fails the receive with the
     * reason instead of landing a device-sized body in host memory unasked.
     */
    static byte[] encode(MemoryKind kind) {
        ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(kind.ucsMemoryType());
        b.put((byte) 0);
        b.put((byte) (kind == MemoryKind.HOST ? POLICY_FALLBACK_TO_HOST : POLICY_ERROR_ON_UNSUPPORTED));
        b.putLong(0L);
        return b.array();
    }

    /**
     * Reads a header.
     *
     * @throws IllegalArgumentException when it is shorter than the memory type, or a field claims more
     *     bytes than the header has, or the policy is unknown
     */
    static SimpleAmHeader decode(byte[] header) {
        if (header.length < MIN_SIZE) {
            throw new IllegalArgumentException("a simple active message header of " + header.length
                    + " bytes: UCXX's header has at least " + MIN_SIZE + " (the memory type)");
        }
        ByteBuffer b = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        int memoryType = b.getInt();
        boolean callback = false;
        if (b.hasRemaining()) {
            int flag = b.get() & 0xff;
            if (flag > 1) {
                throw new IllegalArgumentException(
                        "a simple active message header whose has-callback byte is " + flag + " (0 or 1 expected)");
            }
            callback = flag == 1;
            if (callback) {
                if (b.remaining() < CALLBACK_INFO_SIZE) {
                    throw new IllegalArgumentException("a simple active message header announces a receiver "
                            + "callback but has " + b.remaining() + " of its " + CALLBACK_INFO_SIZE + " bytes");
                }
                b.position(b.position() + CALLBACK_INFO_SIZE);
            }
        }
        boolean strict = false;
        if (b.hasRemaining()) {
            int policy = b.get() & 0xff;
            if (policy != POLICY_FALLBACK_TO_HOST && policy != POLICY_ERROR_ON_UNSUPPORTED) {
                throw new IllegalArgumentException(
                        "a simple active message header with memory-type policy " + policy + " (0 or 1 expected)");
            }
            strict = policy == POLICY_ERROR_ON_UNSUPPORTED;
        }
        long userHeader = 0;
        if (b.remaining() >= Long.BYTES) {
            userHeader = b.getLong();
            if (userHeader < 0 || userHeader > b.remaining()) {
                throw new IllegalArgumentException("a simple active message header claims a user header of "
                        + Long.toUnsignedString(userHeader) + " bytes where " + b.remaining() + " remain");
            }
        }
        return new SimpleAmHeader(memoryType, callback, strict, userHeader);
    }

    /**
     * The memory kind the sender's buffer was, when ucx4j knows it.
     *
     * @return the kind, or null for a memory type ucx4j has no kind for (ROCm, ...)
     */
    MemoryKind memoryKind() {
        for (MemoryKind k : MemoryKind.values()) {
            if (k.ucsMemoryType() == ucsMemoryType) {
                return k;
            }
        }
        return null;
    }
}
