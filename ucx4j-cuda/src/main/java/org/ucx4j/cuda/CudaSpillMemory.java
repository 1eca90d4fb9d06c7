package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The real tiers of a {@link SpillStore}: device memory from a {@link GpuMemoryPool}, host memory pinned
 * ({@code cuMemHostAlloc}) so that copies between the tiers run at the bus's full speed.
 *
 * <p>Why host blocks are kept: pinning is slow (the driver faults in and locks every page: a large fraction
 * of a second per GiB), far slower than the copy it serves. Freed host blocks are kept by size class
 * (quarter powers of two, at most 25% slack) up to {@code retainedHostBytes} of idle memory and handed out
 * again, so a steady stream of spills pins nothing new.
 *
 * <p>Threading: safe from any thread (one lock for the idle blocks).
 */
final class CudaSpillMemory implements SpillMemory {
    private static final long MIN_CLASS = 4096;

    private final GpuMemoryPool pool;
    private final long retainedHostBytes;
    private final Map<Long, ArrayDeque<PinnedMemory>> idle = new HashMap<>();
    private long idleBytes;
    private boolean closed;

    CudaSpillMemory(GpuMemoryPool pool, long retainedHostBytes) {
        this.pool = pool;
        this.retainedHostBytes = retainedHostBytes;
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
        long size = sizeClass(bytes);
        PinnedMemory pinned;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("spill store already closed");
            }
            ArrayDeque<PinnedMemory> q = idle.get(size);
            pinned = q == null ? null : q.poll();
            if (pinned != null) {
                idleBytes -= size;
            }
        }
        if (pinned == null) {
            pinned = pool.device().allocatePinned(size);
        }
        return new HostBlock(this, pinned, pinned.segment().asSlice(0, bytes));
    }

    private void giveBack(PinnedMemory pinned) {
        long size = pinned.byteSize();
        synchronized (this) {
            if (!closed && idleBytes + size <= retainedHostBytes) {
                idle.computeIfAbsent(size, k -> new ArrayDeque<>()).add(pinned);
                idleBytes += size;
                return;
            }
        }
        pinned.close();
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
        synchronized (this) {
            closed = true;
        }
        RuntimeException failure = null;
        for (ArrayDeque<PinnedMemory> q : idle.values()) {
            for (PinnedMemory p : q) {
                try {
                    p.close();
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
        }
        idle.clear();
        idleBytes = 0;
        if (failure != null) {
            throw failure;
        }
    }

    /** The size class of a host block: a quarter power of two at or above {@code bytes}, at least a page. */
    static long sizeClass(long bytes) {
        if (bytes <= MIN_CLASS) {
            return MIN_CLASS;
        }
        long base = Long.highestOneBit(bytes - 1);
        long quarter = base / 4;
        return base + (bytes - base + quarter - 1) / quarter * quarter;
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

    private record HostBlock(CudaSpillMemory owner, PinnedMemory pinned, MemorySegment segment) implements Block {
        @Override
        public void close() {
            owner.giveBack(pinned);
        }
    }
}
