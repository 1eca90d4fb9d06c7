package org.ucx4j.comm;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Objects;
import org.ucx4j.MemoryKind;

/**
 * One frame of a {@link Message}: a segment of memory and the kind of memory it is.
 *
 * <p>Ownership: a frame does not own its memory. A frame you write must stay alive and unchanged until
 * the write's future completes, and be readable from other threads (a shared or global arena, not a
 * confined one: a transport may send it from a thread of its own); a frame you read belongs to its
 * {@link Message} and lives until that message is closed.
 *
 * <p>Threading: immutable.
 *
 * @param segment the bytes (a native or heap segment for {@link MemoryKind#HOST})
 * @param kind where the bytes live
 */
public record Frame(MemorySegment segment, MemoryKind kind) {
    /** Checks the arguments. */
    public Frame {
        Objects.requireNonNull(segment, "segment");
        Objects.requireNonNull(kind, "kind");
        if (kind != MemoryKind.HOST && !segment.isNative()) {
            throw new IllegalArgumentException(kind + " frames must be native segments (a device pointer)");
        }
    }

    /**
     * A host frame over a segment (used in place). The bytes must be host memory, which the CPU can read
     * (not GPU or CUDA managed memory): {@code tcp://} reads them itself, and {@code ucx://} tells UCX they
     * are host memory instead of letting it detect their type on every send (except in a gathered send,
     * {@code multi-buffer}: docs/CONFIGURATION.md, "Declare the memory").
     *
     * @param segment the bytes
     * @return the frame
     */
    public static Frame host(MemorySegment segment) {
        return new Frame(segment, MemoryKind.HOST);
    }

    /**
     * A host frame over a byte array (not copied here; transports copy heap memory when they must).
     *
     * @param bytes the bytes
     * @return the frame
     */
    public static Frame of(byte[] bytes) {
        return new Frame(MemorySegment.ofArray(bytes), MemoryKind.HOST);
    }

    /**
     * A host frame over a buffer's remaining bytes.
     *
     * @param buffer the buffer (direct or heap)
     * @return the frame
     */
    public static Frame of(ByteBuffer buffer) {
        return new Frame(MemorySegment.ofBuffer(buffer), MemoryKind.HOST);
    }

    /**
     * The frame's size.
     *
     * @return bytes
     */
    public long size() {
        return segment.byteSize();
    }

    /**
     * Copies a host frame's bytes into a new array.
     *
     * @return the bytes
     * @throws IllegalStateException for device memory, or a frame of 2 GiB or more
     */
    public byte[] toByteArray() {
        if (kind != MemoryKind.HOST) {
            throw new IllegalStateException("a " + kind + " frame cannot be read from the JVM");
        }
        if (segment.byteSize() > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("frame of " + segment.byteSize() + " bytes does not fit a byte[]");
        }
        return segment.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }
}
