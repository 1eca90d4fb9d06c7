package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Provides the memory an incoming active message's body is received into. The receiver needs no size
 * or type in advance: UCX tells the size, the allocator provides the memory (host memory by default;
 * the CUDA module adds a device allocator).
 *
 * <p>Threading: called on the progress thread; must not block. Ownership: the segment it returns is
 * handed to the receiver with the message ({@link AmMessage#data()}), which owns it from then on.
 */
@FunctionalInterface
public interface AmAllocator {
    /**
     * Allocates native memory for a message body.
     *
     * @param size the body size in bytes
     * @return a native, writable segment of at least {@code size} bytes
     */
    MemorySegment allocate(long size);

    /**
     * Allocates memory for the body of a particular message. The default ignores the id and header;
     * override it to route by them (for example, to receive straight into a buffer posted for that id).
     * Called right before the message's handler, for the same message.
     *
     * @param id the message's handler id
     * @param header the message's user header (a copy the allocator may keep)
     * @param size the body size in bytes
     * @return a native, writable segment of at least {@code size} bytes
     */
    default MemorySegment allocate(int id, byte[] header, long size) {
        return allocate(size);
    }

    /**
     * The default: host memory from an automatic arena, freed by the garbage collector once the
     * received segment is unreachable.
     *
     * @return the host allocator
     */
    static AmAllocator host() {
        return size -> Arena.ofAuto().allocate(Math.max(size, 1), 64).asSlice(0, size);
    }
}
