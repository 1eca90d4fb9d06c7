package org.ucx4j.comm;

import org.ucx4j.MemoryKind;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Provides the memory a received frame lands in, chosen by the frame's {@link MemoryKind}. A comm
 * calls it once per received frame, after the frame's size has been checked against
 * {@code max-frame-size}, with the arena that will own the whole message: memory allocated in it (or
 * tied to it with {@link MemorySegment#reinterpret(long, Arena, java.util.function.Consumer)}, as a
 * device allocator does to free device memory) is freed when the message is closed.
 *
 * <p>Threading: called from transport threads, possibly the UCX progress thread; it must be
 * thread-safe and must not block.
 */
@FunctionalInterface
public interface FrameAllocator {
    /**
     * Allocates memory for one frame.
     *
     * @param kind the kind of memory the sender's frame was in
     * @param byteSize the frame's size (0 or more)
     * @param messageScope the arena that owns the message's memory
     * @return a segment of exactly {@code byteSize} bytes, alive until {@code messageScope} closes
     * @throws UnsupportedOperationException when this allocator has no memory of that kind
     */
    MemorySegment allocate(MemoryKind kind, long byteSize, Arena messageScope);

    /**
     * The default: host frames of {@value org.ucx4j.HostBufferPool#MIN_POOLED} bytes or more from
     * {@link org.ucx4j.HostBufferPool#shared()} (page aligned, reused after their message is closed),
     * smaller ones in the message's arena (64-byte aligned); other kinds are refused with an error that
     * says where to get an allocator for them.
     *
     * @return the shared host allocator
     */
    static FrameAllocator host() {
        return HostFrameAllocator.INSTANCE;
    }
}
