package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The real tiers of a {@link SpillStore}: device memory from a {@link GpuMemoryPool}, host memory pinned
 * ({@code cuMemHostAlloc}) so that copies between the tiers run at the bus's full speed, in size classes with
 * idle blocks kept for reuse ({@link HostBlockCache}).
 *
 * <p>Threading: safe from any thread.
 */
final class CudaSpillMemory implements SpillMemory {
    private final GpuMemoryPool pool;
    private final HostBlockCache host;

    CudaSpillMemory(GpuMemoryPool pool, long retainedHostBytes) {
        this.pool = pool;
        this.host = new HostBlockCache(size -> pinned(pool.device().allocatePinned(size)), retainedHostBytes);
    }

    private static HostBlockCache.Backing pinned(PinnedMemory memory) {
        return new HostBlockCache.Backing() {
            @Override
            public MemorySegment segment() {
                return memory.segment();
            }

            @Override
            public void free() {
                memory.close();
            }
        };
    }

    @Override
    public Block allocateDevice(long bytes) {
        DeviceMemory m = pool.tryAllocate(bytes);
        return m == null ? null : new DeviceBlock(m);
    }

    @Override
    public MemorySegment allocateDevice(long bytes, Arena scope) {
        return pool.tryAllocate(bytes, scope);
    }

    static Block wrap(DeviceMemory memory) {
        return new DeviceBlock(memory);
    }

    @Override
    public Block allocateHost(long bytes) {
        return host.allocate(bytes);
    }

    @Override
    public long hostFootprint(long bytes) {
        return HostBlockCache.sizeClass(bytes);
    }

    @Override
    public long idleHostBytes() {
        return host.idleBytes();
    }

    @Override
    public long trimIdleHost(long bytes) {
        return host.trim(bytes);
    }

    @Override
    public long maxDeviceAllocation() {
        return pool.maximumSize();
    }

    @Override
    public void copy(MemorySegment dst, MemorySegment src) {
        Cuda.copy(dst, src);
    }

    @Override
    public long deviceCapacity() {
        return pool.device().totalMemory();
    }

    @Override
    public String deviceName() {
        return "cuda:" + pool.device().ordinal();
    }

    @Override
    public void close() {
        host.close();
    }

    private record DeviceBlock(DeviceMemory memory) implements Block {
        @Override
        public MemorySegment segment() {
            return memory.segment();
        }

        @Override
        public void close() {
            memory.close();
        }
    }
}
