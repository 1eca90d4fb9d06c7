package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The two memories a {@link SpillStore} moves buffers between: the device tier and the host tier (the disk
 * tier is the store's own). {@link CudaSpillMemory} is the real one (a {@link GpuMemoryPool} and pinned host
 * memory); tests on machines without a GPU give the store host memory in both roles, so the store's tier
 * logic (LRU order, limits, pins, disk, errors) runs in CI.
 *
 * <p>Threading: implementations are thread-safe; the store calls them with its lock held.
 */
interface SpillMemory extends AutoCloseable {
    /**
     * Allocates device-tier memory.
     *
     * @param bytes at least 1
     * @return the memory, or null when there is no room now (the store spills and tries again)
     */
    Block allocateDevice(long bytes);

    /**
     * Allocates device-tier memory that lives until {@code scope} closes.
     *
     * @param bytes the size (0 gives an empty segment)
     * @param scope the arena
     * @return the memory, or null when there is no room now
     */
    MemorySegment allocateDevice(long bytes, Arena scope);

    /**
     * Allocates host-tier memory.
     *
     * @param bytes at least 1
     * @return the memory
     * @throws RuntimeException when it cannot
     */
    Block allocateHost(long bytes);

    /**
     * What a host block of {@code bytes} really holds (its size class), what counts against the host limit.
     *
     * @param bytes at least 1
     * @return bytes, at least {@code bytes}
     */
    long hostFootprint(long bytes);

    /**
     * The idle host memory kept for reuse, which counts against the host limit too.
     *
     * @return bytes
     */
    long idleHostBytes();

    /**
     * Frees idle host memory kept for reuse, that idle longest first.
     *
     * @param bytes bytes wanted freed
     * @return the bytes freed; 0 when nothing is idle
     */
    long trimIdleHost(long bytes);

    /**
     * The largest device allocation that could ever succeed ({@code memory-pool.maximum-size}).
     *
     * @return bytes
     */
    long maxDeviceAllocation();

    /**
     * Copies {@code src.byteSize()} bytes into the start of {@code dst}, between the tiers, and returns when
     * done.
     *
     * @param dst where to
     * @param src what
     */
    void copy(MemorySegment dst, MemorySegment src);

    /**
     * The device tier's capacity, what a fractional device memory limit is a fraction of.
     *
     * @return bytes
     */
    long deviceCapacity();

    /**
     * Names the device tier in messages.
     *
     * @return for example {@code cuda:0}
     */
    String deviceName();

    /** Frees what the memory keeps for reuse. */
    @Override
    void close();

    /** One allocation of either tier, freed by {@link #close()}. */
    interface Block extends AutoCloseable {
        /**
         * The memory.
         *
         * @return a native segment of exactly the size asked for; closed once the block is
         */
        MemorySegment segment();

        /**
         * Frees the memory (or returns it to its pool). Idempotent.
         *
         * @throws IllegalStateException while another thread is inside a call on the segment: nothing
         *     changed
         */
        @Override
        void close();
    }
}
