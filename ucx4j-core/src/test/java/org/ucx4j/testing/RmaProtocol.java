package org.ucx4j.testing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.ucx4j.UcxEndpoint;

/**
 * The tiny protocol between RMA tests and {@link PeerMain}'s {@code rma-server}, all on the endpoint's
 * stream, integers little-endian. The client sends its hello ({@link EchoProtocol#hello}); the server
 * answers with an 8-byte length and that many bytes of its region's packed remote key. Then the client
 * sends 32-byte commands {@code (command, seed, offset, length)} and gets an 8-byte answer each:
 * {@link #VERIFY} answers the first index in {@code [offset, offset + length)} where the region differs
 * from {@link #pattern(long, long) pattern(seed, i)}, or -1; {@link #FILL} writes that pattern there and
 * answers 0.
 *
 * <p>The pattern is a function of the absolute index in the region, so any slice can be checked alone;
 * it is computed eight bytes at a time so that 1 GiB fills and checks in well under a second.
 */
public final class RmaProtocol {
    /** Compare the region with a pattern. */
    public static final long VERIFY = 1;
    /** Write a pattern into the region. */
    public static final long FILL = 2;
    /** The seed the server fills its region with at start. */
    public static final long INITIAL_SEED = 1;

    private RmaProtocol() {}

    private static long word(long seed, long index) {
        long z = (index + seed * 0x632BE59BD9B4E019L) * 0x9E3779B97F4A7C15L;
        return z ^ (z >>> 29);
    }

    /** The pattern's byte at region index {@code i}. */
    public static byte pattern(long seed, long i) {
        return (byte) (word(seed, i >>> 3) >>> ((i & 7) * 8));
    }

    /** Fills {@code s} with the pattern for region indices {@code regionOffset ..}. */
    public static void fill(MemorySegment s, long seed, long regionOffset) {
        long n = s.byteSize();
        long i = 0;
        while (i < n && ((regionOffset + i) & 7) != 0) {
            s.set(ValueLayout.JAVA_BYTE, i, pattern(seed, regionOffset + i));
            i++;
        }
        for (; i + 8 <= n; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, word(seed, (regionOffset + i) >>> 3));
        }
        for (; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, pattern(seed, regionOffset + i));
        }
    }

    /** The first index of {@code s} that differs from the pattern, or -1. */
    public static long mismatch(MemorySegment s, long seed, long regionOffset) {
        long n = s.byteSize();
        long i = 0;
        while (i < n && ((regionOffset + i) & 7) != 0) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(seed, regionOffset + i)) {
                return i;
            }
            i++;
        }
        for (; i + 8 <= n; i += 8) {
            if (s.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != word(seed, (regionOffset + i) >>> 3)) {
                break;
            }
        }
        for (; i < n; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(seed, regionOffset + i)) {
                return i;
            }
        }
        return -1;
    }

    /** Client side: receives the server's packed remote key after the hello. */
    public static byte[] receiveKey(UcxEndpoint ep) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment len = a.allocate(8);
            ep.streamRecv(len);
            long n = len.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            if (n <= 0 || n > 1 << 20) {
                throw new AssertionError("implausible key length " + n);
            }
            byte[] key = new byte[(int) n];
            ep.streamRecv(key);
            return key;
        }
    }

    /** Client side: one command and its answer. */
    public static long command(UcxEndpoint ep, long command, long seed, long offset, long length) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = a.allocate(32);
            c.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, command);
            c.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, seed);
            c.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, offset);
            c.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, length);
            MemorySegment answer = a.allocate(8);
            var reply = ep.streamRecvAsync(answer);
            ep.streamSend(c);
            ep.worker().await(reply);
            return answer.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        }
    }
}
