package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The ping-pong wire protocol between {@link PingPongClient} and {@link PingPongServer}: tags, the
 * control message, and the data pattern used to verify the first and last messages.
 *
 * <p>Control message (tag {@link #CONTROL}, 40 bytes, little-endian): magic {@code int}, version
 * {@code int}, op {@code int} (0 bye, 1 latency, 2 bandwidth), window {@code int}, size {@code long},
 * iterations {@code long}, warm-up {@code long}. The server checks magic, version and bounds before it
 * allocates anything.
 *
 * <p>Latency: the client sends {@link #PING}, the server echoes the same bytes with {@link #PONG}.
 * Bandwidth: the client sends {@link #DATA} messages (warm-up, then measured), and after each phase the
 * server answers one {@link #ACK} byte: 1 when the verified messages were intact, 0 when not. The server
 * answers a bye with an {@link #ACK} byte too, and the client closes only after it.
 */
final class PingPongProtocol {
    private PingPongProtocol() {}

    static final long CONTROL = 0x5543_4A34_0000_0001L;
    static final long PING = 0x5543_4A34_0000_0002L;
    static final long PONG = 0x5543_4A34_0000_0003L;
    static final long DATA = 0x5543_4A34_0000_0004L;
    static final long ACK = 0x5543_4A34_0000_0005L;
    static final long ALL_BITS = -1L;

    static final int CONTROL_SIZE = 40;
    static final int OP_BYE = 0;
    static final int OP_LATENCY = 1;
    static final int OP_BANDWIDTH = 2;
    private static final int MAGIC = 0x55434A34; // "UCJ4"
    private static final int VERSION = 1;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Writes a control message for a run, or a bye when {@code settings} is null. */
    static void writeControl(MemorySegment msg, PingPongSettings settings) {
        msg.fill((byte) 0);
        msg.set(INT, 0, MAGIC);
        msg.set(INT, 4, VERSION);
        if (settings == null) {
            msg.set(INT, 8, OP_BYE);
            return;
        }
        msg.set(INT, 8, settings.mode() == PingPongMode.LATENCY ? OP_LATENCY : OP_BANDWIDTH);
        msg.set(INT, 12, settings.window());
        msg.set(LONG, 16, settings.size());
        msg.set(LONG, 24, settings.iterations());
        msg.set(LONG, 32, settings.warmup());
    }

    /**
     * Reads a control message.
     *
     * @param msg the received bytes
     * @param length how many were received
     * @return the run asked for, or null for bye
     * @throws IllegalArgumentException when the message is not ours or out of bounds
     */
    static PingPongSettings readControl(MemorySegment msg, long length) {
        if (length != CONTROL_SIZE || msg.get(INT, 0) != MAGIC) {
            throw new IllegalArgumentException("not a ucx4j pingpong control message (" + length + " bytes)");
        }
        int version = msg.get(INT, 4);
        if (version != VERSION) {
            throw new IllegalArgumentException("pingpong protocol version " + version + ", expected " + VERSION);
        }
        int op = msg.get(INT, 8);
        PingPongMode mode = switch (op) {
            case OP_BYE -> null;
            case OP_LATENCY -> PingPongMode.LATENCY;
            case OP_BANDWIDTH -> PingPongMode.BANDWIDTH;
            default -> throw new IllegalArgumentException("unknown pingpong op " + op);
        };
        if (mode == null) {
            return null;
        }
        return new PingPongSettings(mode, msg.get(LONG, 16), msg.get(LONG, 24), msg.get(LONG, 32), msg.get(INT, 12));
    }

    /** Which buffer message {@code k} of a bandwidth phase of {@code n} messages uses. */
    enum Slot { FIRST, LAST, BULK }

    /**
     * Chooses the buffer for a bandwidth message; both sides use the same rule so that the verified
     * messages land in the verified buffers (UCX matches a sender's messages with equal tags in order).
     */
    static Slot slot(long k, long n, boolean verifyFirst, boolean verifyLast) {
        if (k == 0 && verifyFirst) {
            return Slot.FIRST;
        }
        if (k == n - 1 && verifyLast) {
            return Slot.LAST;
        }
        return Slot.BULK;
    }

    /** Fills a buffer with the pattern for {@code seed}. */
    static void fill(MemorySegment buf, long seed) {
        long n = buf.byteSize();
        long words = n / 8;
        for (long i = 0; i < words; i++) {
            buf.set(LONG, i * 8, word(seed, i));
        }
        for (long i = words * 8; i < n; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) word(seed, i));
        }
    }

    /**
     * Checks that a buffer holds the pattern for {@code seed}.
     *
     * @throws IllegalStateException naming the first offset that differs
     */
    static void verify(MemorySegment buf, long seed, String what) {
        long n = buf.byteSize();
        long words = n / 8;
        for (long i = 0; i < words; i++) {
            if (buf.get(LONG, i * 8) != word(seed, i)) {
                throw new IllegalStateException(what + ": data differs at byte offset " + firstDiff(buf, seed, i * 8));
            }
        }
        for (long i = words * 8; i < n; i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, i) != (byte) word(seed, i)) {
                throw new IllegalStateException(what + ": data differs at byte offset " + i);
            }
        }
    }

    /** Whether a buffer holds the pattern for {@code seed}. */
    static boolean matches(MemorySegment buf, long seed) {
        try {
            verify(buf, seed, "");
            return true;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    private static long firstDiff(MemorySegment buf, long seed, long from) {
        long expected = word(seed, from / 8);
        for (int j = 0; j < 8; j++) {
            if (buf.get(ValueLayout.JAVA_BYTE, from + j) != (byte) (expected >>> (8 * j))) {
                return from + j;
            }
        }
        return from;
    }

    private static long word(long seed, long index) {
        long x = (seed + 1) * 0x9E37_79B9_7F4A_7C15L + index * 0xBF58_476D_1CE4_E5B9L;
        return x ^ (x >>> 31);
    }
}
