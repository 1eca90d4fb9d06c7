package org.ucx4j;

import java.lang.foreign.MemorySegment;
import org.ucx4j.internal.Libc;

/**
 * Turns what a caller passed into memory UCX can use. Native segments (and direct buffers, through
 * {@link MemorySegment#ofBuffer}) go to UCX as they are: zero-copy. Heap memory cannot be pinned for the
 * duration of an asynchronous operation, so it is copied into native staging memory (and, for receives,
 * copied back when the operation completes).
 */
final class Buffers {
    private Buffers() {}

    /**
     * The same memory without its arena's thread confinement. UCX is called from the progress thread,
     * and a confined arena's segment cannot even be passed to a downcall from another thread. Liveness
     * is checked here, on the caller's thread; from then on the caller's contract (keep the memory alive
     * until the future completes) is what protects it, as with any asynchronous native I/O.
     */
    static MemorySegment unscoped(MemorySegment buffer) {
        if (!buffer.scope().isAlive()) {
            throw new IllegalStateException("the buffer's arena is already closed");
        }
        return MemorySegment.ofAddress(buffer.address());
    }

    /** The memory to send from; stages a copy of heap memory. */
    static MemorySegment forSend(Operation op, MemorySegment buffer) {
        if (buffer.isNative()) {
            return unscoped(buffer);
        }
        MemorySegment staging = Libc.malloc(buffer.byteSize());
        MemorySegment.copy(buffer, 0, staging, 0, buffer.byteSize());
        op.staging = staging;
        return staging;
    }

    /** The memory to receive into; heap memory gets staging copied back on success. */
    static MemorySegment forReceive(Operation op, MemorySegment buffer) {
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException("cannot receive into a read-only buffer");
        }
        if (buffer.isNative()) {
            return unscoped(buffer);
        }
        MemorySegment staging = Libc.malloc(buffer.byteSize());
        op.staging = staging;
        op.copyBackTo = buffer;
        return staging;
    }
}
