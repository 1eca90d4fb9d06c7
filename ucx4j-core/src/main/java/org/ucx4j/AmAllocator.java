package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Provides the memory an incoming active message's body is received into. The receiver needs no size
 * or type in advance: UCX tells the size, the allocator provides the memory (host memory by default;
 * {@code AmAllocator.of(pool)} with ucx4j-cuda's {@code GpuMemoryPool} provides device memory). A worker has one allocator
 * per {@link MemoryKind} ({@link UcxWorker#setAmAllocator(MemoryKind, AmAllocator)}): a message sent on
 * the simple channel with {@link UcxEndpoint#amSendAsync(MemorySegment, MemoryKind)} lands in memory
 * of that kind, as UCX-Py's {@code register_am_allocator(fn, "cuda")}.
 *
 * <p>Threading: called where the message's handler runs (the worker's progress thread, or in
 * {@link ProgressMode#CALLER} mode the thread progressing it; see {@linkplain org.ucx4j the package's
 * threading contract}), right before the handler; must not block and must not call blocking ucx4j methods. Ownership: the segment it returns is
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
     * The kind of memory this allocator returns.
     *
     * @return {@link MemoryKind#HOST} unless overridden
     */
    default MemoryKind kind() {
        return MemoryKind.HOST;
    }

    /**
     * Copies a message body that UCX delivered eagerly (in its own host buffer, valid only during the
     * call) into memory from this allocator. Bodies sent by rendezvous are written by UCX directly and
     * never pass here. Device allocators override this with a host-to-device copy.
     *
     * @param dst memory this allocator returned
     * @param eagerData the body, host memory
     */
    default void copyEager(MemorySegment dst, MemorySegment eagerData) {
        MemorySegment.copy(eagerData, 0, dst, 0, eagerData.byteSize());
    }

    /**
     * An allocator of a provider's memory ({@link MemoryKind#CUDA} from ucx4j-cuda's pool): bodies land in
     * memory freed (returned to the pool) when the received segment becomes unreachable, and eager bodies
     * are copied in with {@link MemoryProvider#copy}.
     *
     * @param provider where the memory comes from
     * @return the allocator
     */
    static AmAllocator of(MemoryProvider provider) {
        java.util.Objects.requireNonNull(provider, "provider");
        return new AmAllocator() {
            @Override
            public MemorySegment allocate(long size) {
                return provider.allocate(size, Arena.ofAuto());
            }

            @Override
            public MemoryKind kind() {
                return provider.kind();
            }

            @Override
            public void copyEager(MemorySegment dst, MemorySegment eagerData) {
                provider.copy(dst, eagerData);
            }
        };
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
