package org.ucx4j.internal.worker;

import java.lang.foreign.MemorySegment;
import org.ucx4j.internal.Libc;

/**
 * Turns what a caller passed into memory UCX can use. Native segments (and direct buffers, through
 * {@link MemorySegment#ofBuffer}) go to UCX as they are: zero-copy. Heap memory cannot be pinned for the
 * duration of an asynchronous operation, so it is copied into native staging memory (and, for receives,
 * copied back when the operation completes).
 */
public final class Buffers {
    private Buffers() {}

    /**
     * Checks a buffer whose memory kind the caller declares: the kind is given, and the buffer is native
     * (heap memory is staged in host memory, so a declaration means nothing there).
     *
     * @throws NullPointerException when {@code kind} is null
     * @throws IllegalArgumentException when {@code buffer} is heap memory
     */
    public static void requireDeclarable(MemorySegment buffer, org.ucx4j.MemoryKind kind) {
        java.util.Objects.requireNonNull(kind, "kind");
        if (!buffer.isNative()) {
            throw new IllegalArgumentException("a declared memory kind is for native buffers (heap is staged)");
        }
    }

    /**
     * The same memory without its arena's thread confinement. UCX is called from the progress thread,
     * and a confined arena's segment cannot even be passed to a downcall from another thread. Liveness
     * is checked here, on the caller's thread; from then on the caller's contract (keep the memory alive
     * until the future completes) is what protects it, as with any asynchronous native I/O.
     */
    public static MemorySegment unscoped(MemorySegment buffer) {
        return MemorySegment.ofAddress(liveAddress(buffer));
    }

    /** The address of {@code buffer}, checked alive now (see {@link #unscoped}). */
    private static long liveAddress(MemorySegment buffer) {
        if (!buffer.scope().isAlive()) {
            throw new IllegalStateException("the buffer's arena is already closed");
        }
        return buffer.address();
    }

    /** The memory to send from; stages a copy of heap memory. */
    public static MemorySegment forSend(Operation op, MemorySegment buffer) {
        return buffer.isNative() ? unscoped(buffer) : stagedCopy(op, buffer);
    }

    /**
     * Like {@link #forSend}, as an address: the downcalls made once per message take their buffer as a
     * word, so no segment object is made per message for a native buffer.
     */
    public static long sendAddress(Operation op, MemorySegment buffer) {
        return buffer.isNative() ? liveAddress(buffer) : stagedCopy(op, buffer).address();
    }

    private static MemorySegment stagedCopy(Operation op, MemorySegment buffer) {
        MemorySegment staging = Libc.malloc(buffer.byteSize());
        MemorySegment.copy(buffer, 0, staging, 0, buffer.byteSize());
        op.staging = staging;
        return staging;
    }

    /** The memory to receive into; heap memory gets staging copied back on success. */
    public static MemorySegment forReceive(Operation op, MemorySegment buffer) {
        checkWritable(buffer);
        return buffer.isNative() ? unscoped(buffer) : stagedReceive(op, buffer);
    }

    /** Like {@link #forReceive}, as an address (see {@link #sendAddress}). */
    public static long receiveAddress(Operation op, MemorySegment buffer) {
        checkWritable(buffer);
        return buffer.isNative()
                ? liveAddress(buffer)
                : stagedReceive(op, buffer).address();
    }

    private static void checkWritable(MemorySegment buffer) {
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException("cannot receive into a read-only buffer");
        }
    }

    private static MemorySegment stagedReceive(Operation op, MemorySegment buffer) {
        MemorySegment staging = Libc.malloc(buffer.byteSize());
        op.staging = staging;
        op.copyBackTo = buffer;
        return staging;
    }

    /**
     * A native copy of an active message's user header, which UCX reads until the send completes;
     * freed with the operation. An empty header is {@code NULL}.
     */
    public static MemorySegment forHeader(Operation op, MemorySegment header) {
        long length = header.byteSize();
        if (length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment staging = Libc.malloc(length);
        MemorySegment.copy(header, 0, staging, 0, length);
        op.headerStaging = staging;
        return MemorySegment.ofAddress(staging.address());
    }

    /** Frees what {@link #forHeader} staged, for a send given up before it was submitted. */
    public static void freeHeader(Operation op) {
        if (op.headerStaging != null) {
            Libc.free(op.headerStaging);
            op.headerStaging = null;
        }
    }

    /** Frees every staging block of a finished operation. */
    static void freeAll(Operation op) {
        if (op.staging != null) {
            Libc.free(op.staging);
            op.staging = null;
        }
        freeHeader(op);
        if (op.extraStaging != null) {
            for (MemorySegment block : op.extraStaging) {
                Libc.free(block);
            }
            op.extraStaging = null;
        }
    }
}
