package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Memory of one non-host {@link MemoryKind} — in practice GPU memory, from ucx4j-cuda's
 * {@code GpuMemoryPool} — as the rest of ucx4j needs it: to receive into, and to copy to and from host
 * memory where a transport moves only bytes. Active messages ({@link AmAllocator#of(MemoryProvider)}) and
 * ucx4j-comm's frame allocators take one, so neither depends on CUDA.
 *
 * <p>Threading: implementations are thread-safe and may be called on progress and transport threads;
 * {@link #allocate} must not block for long.
 */
public interface MemoryProvider {
    /**
     * The kind of memory this provider allocates.
     *
     * @return for example {@link MemoryKind#CUDA}
     */
    MemoryKind kind();

    /**
     * Allocates memory that lives until {@code scope} closes (then it is freed, or returned to its pool).
     *
     * @param byteSize the size
     * @param scope the arena that owns the memory; {@link Arena#ofAuto()} for memory the garbage collector frees
     * @return a segment of exactly {@code byteSize} bytes of this kind
     */
    MemorySegment allocate(long byteSize, Arena scope);

    /**
     * Copies {@code src.byteSize()} bytes into the start of {@code dst}, where either side may be memory
     * of this kind and the other host memory (or both of this kind), and returns when done.
     *
     * @param dst where to copy to
     * @param src what to copy
     */
    void copy(MemorySegment dst, MemorySegment src);
}
