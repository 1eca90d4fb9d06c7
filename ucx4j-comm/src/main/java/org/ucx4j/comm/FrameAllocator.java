package org.ucx4j.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryProvider;

/**
 * Provides the memory a received frame lands in, chosen by the frame's {@link MemoryKind}, and copies
 * between that memory and host memory for transports that move only bytes. A comm calls
 * {@link #allocate} once per received frame, after the frame's size has been checked against
 * {@code max-frame-size}, with the arena that will own the whole message: memory allocated in it (or
 * tied to it with {@link MemorySegment#reinterpret(long, Arena, java.util.function.Consumer)}, as a
 * device allocator does to return device memory to its pool) is freed when the message is closed.
 *
 * <p>GPU frames: {@code FrameAllocator.host().with(pool)} (a ucx4j-cuda {@code GpuMemoryPool}) receives
 * CUDA frames into the pool. {@code ucx://} moves them GPU to GPU ({@code cuda_ipc}/{@code cuda_copy});
 * {@code tcp://} stages them through host memory with {@link #copy}, correct if slower; {@code inproc://}
 * copies them device to device with {@link #copy}.
 * The writing side needs such an allocator too on those transports (to copy its device frames out).
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
     * @return a segment of exactly {@code byteSize} bytes, alive until {@code messageScope} closes, in memory
     *     of {@code kind}: for {@link MemoryKind#HOST}, host memory the CPU can read and write (not GPU or
     *     CUDA managed memory; {@code tcp://} reads into it itself, and {@code ucx://} tells UCX it is host
     *     memory)
     * @throws UnsupportedOperationException when this allocator has no memory of that kind
     */
    MemorySegment allocate(MemoryKind kind, long byteSize, Arena messageScope);

    /**
     * Copies {@code src.byteSize()} bytes into the start of {@code dst}, between host memory and memory of
     * {@code kind} (either direction), and returns when done. The default copies host memory only.
     *
     * @param kind the non-host side's kind ({@link MemoryKind#HOST} when both are host memory)
     * @param dst where to copy to
     * @param src what to copy
     * @throws UnsupportedOperationException when this allocator has no memory of that kind
     */
    default void copy(MemoryKind kind, MemorySegment dst, MemorySegment src) {
        if (kind != MemoryKind.HOST) {
            throw HostFrameAllocator.noKind(kind);
        }
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    }

    /**
     * This allocator, plus a provider's memory for frames of the provider's kind (its allocations and its
     * copies); other kinds still go to this allocator.
     *
     * @param provider for example a ucx4j-cuda {@code GpuMemoryPool}
     * @return the combined allocator
     */
    default FrameAllocator with(MemoryProvider provider) {
        java.util.Objects.requireNonNull(provider, "provider");
        FrameAllocator base = this;
        MemoryKind own = provider.kind();
        return new FrameAllocator() {
            @Override
            public MemorySegment allocate(MemoryKind kind, long byteSize, Arena messageScope) {
                return kind == own
                        ? provider.allocate(byteSize, messageScope)
                        : base.allocate(kind, byteSize, messageScope);
            }

            @Override
            public void copy(MemoryKind kind, MemorySegment dst, MemorySegment src) {
                if (kind == own) {
                    provider.copy(dst, src);
                } else {
                    base.copy(kind, dst, src);
                }
            }

            @Override
            public String toString() {
                return base + ".with(" + provider + ")";
            }
        };
    }

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
