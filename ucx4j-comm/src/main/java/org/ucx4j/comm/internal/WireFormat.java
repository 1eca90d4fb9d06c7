package org.ucx4j.comm.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import org.ucx4j.MemoryKind;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Frame;

/**
 * The message header of docs/WIRE.md, version 1: a 16-byte fixed part, then one 16-byte entry per
 * frame. Little-endian throughout. Decoding checks everything a peer controls (magic, version, type,
 * flags, frame count, each size, kind and reserved byte) against the limits before anything is
 * allocated for it.
 */
final class WireFormat {
    /** "U4JM" in the first four bytes. */
    static final int MAGIC = 0x4D4A3455;

    static final int VERSION = 1;
    static final int HEADER_BYTES = 16;
    static final int ENTRY_BYTES = 16;
    static final int TYPE_MESSAGE = 0;
    static final int TYPE_CLOSE = 1;
    /** ucx: a flow control record, on the control tag only (docs/WIRE.md, "Flow control"). */
    static final int TYPE_CONTROL = 2;
    /** A flow control record: the 16-byte header, then u64 messages granted, u64 frames wanted up to. */
    static final int CONTROL_BYTES = 32;
    /** ucx: every non-empty frame follows in one scatter-gather message. */
    static final int FLAG_MULTI_BUFFER = 1;
    /** ucx: the frames' bytes follow the table inside the header message. */
    static final int FLAG_INLINE = 2;

    static final int KNOWN_FLAGS = FLAG_MULTI_BUFFER | FLAG_INLINE;

    static final ValueLayout.OfInt U32 = JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong U64 = JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort U16 = JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private WireFormat() {}

    /** A decoded fixed header. */
    record Header(int type, int flags, int frameCount) {
        boolean isClose() {
            return type == TYPE_CLOSE;
        }

        long tableBytes() {
            return (long) frameCount * ENTRY_BYTES;
        }
    }

    /**
     * A decoded flow control record: the peer may have sent {@code granted} messages in all, and may
     * send the frames of its messages up to number {@code framesUpTo} (both counted from 1, cumulative).
     */
    record Control(long granted, long framesUpTo) {}

    /** A decoded frame table. */
    record Table(long[] sizes, MemoryKind[] kinds) {
        long total() {
            long n = 0;
            for (long s : sizes) {
                n += s;
            }
            return n;
        }
    }

    static void writeHeader(MemorySegment dst, long off, int type, int flags, long frameCount) {
        dst.set(U32, off, MAGIC);
        dst.set(JAVA_BYTE, off + 4, (byte) VERSION);
        dst.set(JAVA_BYTE, off + 5, (byte) type);
        dst.set(U16, off + 6, (short) flags);
        dst.set(U64, off + 8, frameCount);
    }

    static void writeTable(MemorySegment dst, long off, List<Frame> frames) {
        for (int i = 0; i < frames.size(); i++) {
            Frame f = frames.get(i);
            long e = off + (long) i * ENTRY_BYTES;
            dst.set(U64, e, f.size());
            dst.set(JAVA_BYTE, e + 8, (byte) f.kind().wireCode());
            dst.asSlice(e + 9, 7).fill((byte) 0);
        }
    }

    /**
     * Decodes and checks the fixed header.
     *
     * @throws CommProtocolException naming what is wrong
     */
    static Header readHeader(MemorySegment src, long off, int maxFrames) {
        int magic = src.get(U32, off);
        if (magic != MAGIC) {
            throw new CommProtocolException(String.format(
                    "not a ucx4j-comm message header: magic 0x%08x, expected 0x%08x (\"U4JM\")", magic, MAGIC));
        }
        int version = src.get(JAVA_BYTE, off + 4) & 0xff;
        if (version != VERSION) {
            throw new CommProtocolException(
                    "message header of protocol version " + version + "; this side speaks version " + VERSION);
        }
        int type = src.get(JAVA_BYTE, off + 5) & 0xff;
        if (type != TYPE_MESSAGE && type != TYPE_CLOSE) {
            throw new CommProtocolException("unknown message type " + type + " (0 message, 1 close)");
        }
        int flags = src.get(U16, off + 6) & 0xffff;
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw new CommProtocolException(String.format("unknown header flags 0x%04x", flags));
        }
        long count = src.get(U64, off + 8);
        if (count < 0 || count > maxFrames) {
            throw new CommProtocolException(
                    "header claims " + Long.toUnsignedString(count) + " frames; max-frames is " + maxFrames);
        }
        if (type == TYPE_CLOSE && (count != 0 || flags != 0)) {
            throw new CommProtocolException("close header with " + count + " frames and flags " + flags);
        }
        return new Header(type, flags, (int) count);
    }

    static void writeControl(MemorySegment dst, long granted, long framesUpTo) {
        writeHeader(dst, 0, TYPE_CONTROL, 0, 0);
        dst.set(U64, HEADER_BYTES, granted);
        dst.set(U64, HEADER_BYTES + 8, framesUpTo);
    }

    /**
     * Decodes and checks a flow control record of {@code length} bytes.
     *
     * @throws CommProtocolException naming what is wrong
     */
    static Control readControl(MemorySegment src, long length) {
        if (length != CONTROL_BYTES) {
            throw new CommProtocolException(
                    "flow control record of " + length + " bytes (a record has " + CONTROL_BYTES + ")");
        }
        int magic = src.get(U32, 0);
        int version = src.get(JAVA_BYTE, 4) & 0xff;
        int type = src.get(JAVA_BYTE, 5) & 0xff;
        if (magic != MAGIC
                || version != VERSION
                || type != TYPE_CONTROL
                || src.get(U16, 6) != 0
                || src.get(U64, 8) != 0) {
            throw new CommProtocolException(String.format(
                    "not a ucx4j-comm flow control record: magic 0x%08x, version %d, type %d", magic, version, type));
        }
        long granted = src.get(U64, HEADER_BYTES);
        long framesUpTo = src.get(U64, HEADER_BYTES + 8);
        if (granted < 0 || framesUpTo < 0) {
            throw new CommProtocolException("flow control record with a negative count");
        }
        return new Control(granted, framesUpTo);
    }

    /**
     * Decodes and checks the frame table: each entry, then the sum of the sizes against
     * {@code max-message-size}, so that a table claiming more than that in all is refused before any
     * frame is allocated.
     *
     * @throws CommProtocolException naming the first bad entry, or the total and the limit
     */
    static Table readTable(MemorySegment src, long off, int count, long maxFrameSize, long maxMessageSize) {
        long[] sizes = new long[count];
        MemoryKind[] kinds = new MemoryKind[count];
        long total = 0;
        for (int i = 0; i < count; i++) {
            long e = off + (long) i * ENTRY_BYTES;
            long size = src.get(U64, e);
            if (size < 0 || size > maxFrameSize) {
                throw new CommProtocolException("frame " + i + " claims " + Long.toUnsignedString(size)
                        + " bytes; max-frame-size is " + maxFrameSize);
            }
            int code = src.get(JAVA_BYTE, e + 8) & 0xff;
            MemoryKind kind;
            try {
                kind = MemoryKind.fromWireCode(code);
            } catch (IllegalArgumentException ex) {
                throw new CommProtocolException("frame " + i + ": " + ex.getMessage());
            }
            for (int r = 9; r < ENTRY_BYTES; r++) {
                if (src.get(JAVA_BYTE, e + r) != 0) {
                    throw new CommProtocolException("frame " + i + ": reserved byte " + r + " is not zero");
                }
            }
            total += size;
            if (total < 0) {
                throw new CommProtocolException(
                        "frame sizes add up to more than 2^63 bytes; max-message-size is " + maxMessageSize);
            }
            sizes[i] = size;
            kinds[i] = kind;
        }
        if (total > maxMessageSize) {
            throw new CommProtocolException("message of " + count + " frames claims " + total
                    + " bytes in all; max-message-size is " + maxMessageSize);
        }
        return new Table(sizes, kinds);
    }

    /** A u32 read little-endian, for length prefixes. */
    static int readU32(MemorySegment src, long off) {
        return src.get(U32, off);
    }

    static void writeU32(MemorySegment dst, long off, int v) {
        dst.set(U32, off, v);
    }
}
