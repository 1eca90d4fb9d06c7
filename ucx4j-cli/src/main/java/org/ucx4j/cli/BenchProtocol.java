package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The wire protocol between {@link BenchClient} and {@link BenchServer}: tags, active-message ids, the
 * control message, and the data pattern used to verify the first and last messages.
 *
 * <p>Control message (tag {@link #CONTROL}, 48 bytes, little-endian): magic {@code int}, version
 * {@code int}, kind {@code int} (0 bye, 1 run), window {@code int}, size {@code long}, iterations
 * {@code long}, warm-up {@code long}, op {@code int} (tag, stream, am, put, get: 0..4), mode {@code int}
 * (latency, bandwidth, rate: 0..2). The server checks magic, version and bounds before it allocates
 * anything, and answers every run with {@link #READY}: for put and get the packed remote key of the
 * region it allocated ({@code size} bytes), for the others one byte.
 *
 * <p>Two-sided latency: the client sends a ping, the server echoes the same bytes as a pong. Two-sided
 * bandwidth and rate: the client sends data messages (warm-up, then measured), and after each phase the
 * server answers one {@link #ACK} byte when all arrived (the client's clock stops there), then checks the
 * first and last messages and sends a second {@link #ACK} byte: 1 when they were intact, 0 when not. One-sided
 * runs: after each phase the client sends {@link #PHASE_END} (8 bytes: the pattern seed the region must
 * now hold after puts, or 0) and the server answers an {@link #ACK} byte. The server answers a bye with an
 * {@link #ACK} byte too, and the client closes only after it.
 */
final class BenchProtocol {
    private BenchProtocol() {}

    static final long CONTROL = 0x5543_4A34_0000_0001L;
    static final long PING = 0x5543_4A34_0000_0002L;
    static final long PONG = 0x5543_4A34_0000_0003L;
    static final long DATA = 0x5543_4A34_0000_0004L;
    static final long ACK = 0x5543_4A34_0000_0005L;
    static final long READY = 0x5543_4A34_0000_0006L;
    static final long PHASE_END = 0x5543_4A34_0000_0007L;
    static final long ALL_BITS = -1L;

    static final int AM_PING = 1;
    static final int AM_PONG = 2;
    static final int AM_DATA = 3;

    static final int CONTROL_SIZE = 48;
    /** The largest READY message: a packed remote key is far smaller. */
    static final int MAX_READY_SIZE = 64 * 1024;

    static final int KIND_BYE = 0;
    static final int KIND_RUN = 1;
    private static final int MAGIC = 0x55434A34; // "UCJ4"
    private static final int VERSION = 2;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Writes a control message for a run, or a bye when {@code settings} is null. */
    static void writeControl(MemorySegment msg, BenchSettings settings) {
        msg.fill((byte) 0);
        msg.set(INT, 0, MAGIC);
        msg.set(INT, 4, VERSION);
        if (settings == null) {
            msg.set(INT, 8, KIND_BYE);
            return;
        }
        msg.set(INT, 8, KIND_RUN);
        msg.set(INT, 12, settings.window());
        msg.set(LONG, 16, settings.size());
        msg.set(LONG, 24, settings.iterations());
        msg.set(LONG, 32, settings.warmup());
        msg.set(INT, 40, settings.op().ordinal());
        msg.set(INT, 44, settings.mode().ordinal());
    }

    /**
     * Reads a control message.
     *
     * @param msg the received bytes
     * @param length how many were received
     * @return the run asked for, or null for bye
     * @throws IllegalArgumentException when the message is not ours or out of bounds
     */
    static BenchSettings readControl(MemorySegment msg, long length) {
        if (length != CONTROL_SIZE || msg.get(INT, 0) != MAGIC) {
            throw new IllegalArgumentException("not a ucx4j bench control message (" + length + " bytes)");
        }
        int version = msg.get(INT, 4);
        if (version != VERSION) {
            throw new IllegalArgumentException("bench protocol version " + version + ", expected " + VERSION);
        }
        int kind = msg.get(INT, 8);
        if (kind == KIND_BYE) {
            return null;
        }
        if (kind != KIND_RUN) {
            throw new IllegalArgumentException("unknown bench control kind " + kind);
        }
        BenchOp op = enumAt(BenchOp.values(), msg.get(INT, 40), "op");
        BenchMode mode = enumAt(BenchMode.values(), msg.get(INT, 44), "mode");
        return new BenchSettings(op, mode, msg.get(LONG, 16), msg.get(LONG, 24), msg.get(LONG, 32), msg.get(INT, 12));
    }

    private static <E extends Enum<E>> E enumAt(E[] values, int index, String what) {
        if (index < 0 || index >= values.length) {
            throw new IllegalArgumentException("unknown bench " + what + " " + index);
        }
        return values[index];
    }

    /** Writes the 8-byte {@link #PHASE_END} body: the seed the region must hold, or 0 for none. */
    static void writeSeed(MemorySegment msg, long seed) {
        msg.set(LONG, 0, seed);
    }

    /** Reads the 8-byte {@link #PHASE_END} body. */
    static long readSeed(MemorySegment msg) {
        return msg.get(LONG, 0);
    }

    /** Which buffer message {@code k} of a bandwidth phase of {@code n} messages uses. */
    enum Slot {
        FIRST,
        LAST,
        BULK
    }

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

    /** Where and how a buffer differs from the pattern for {@code seed}, for error messages. */
    static String describeMismatch(MemorySegment buf, long seed) {
        try {
            verify(buf, seed, "");
            return "no difference";
        } catch (IllegalStateException e) {
            long offset = Long.parseLong(e.getMessage().substring(e.getMessage().lastIndexOf(' ') + 1));
            long word = offset / 8 * 8;
            long have = buf.byteSize() >= word + 8 ? buf.get(LONG, word) : buf.get(ValueLayout.JAVA_BYTE, offset);
            long want = buf.byteSize() >= word + 8 ? word(seed, word / 8) : (byte) word(seed, offset);
            return String.format("first difference at byte %d: %016x, expected %016x", offset, have, want);
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
