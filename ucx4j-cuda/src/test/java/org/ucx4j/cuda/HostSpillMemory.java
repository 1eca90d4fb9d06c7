package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Host memory in both roles of a {@link SpillStore}, so the store's tier logic runs without a GPU: the
 * "device" holds at most {@code deviceCapacity} bytes (an allocation past it answers "no room", as an
 * exhausted pool does), and every block is its own arena, so a block freed makes its segment fail with
 * "already closed", as device memory does. Host blocks come from the real {@link HostBlockCache} (size classes,
 * idle blocks kept for reuse up to {@code retainedHostBytes}, a view of its own per block) over plain native
 * memory. Counts what is allocated (host memory by size class, idle blocks included), to check that nothing
 * leaks; {@code maxDeviceAllocation} stands for the pool's maximum size.
 */
final class HostSpillMemory implements SpillMemory {
    private final long deviceCapacity;
    final AtomicLong deviceUsed = new AtomicLong();
    final AtomicLong hostUsed = new AtomicLong();
    /** The most host memory held at once (blocks by size class, idle ones included). */
    final AtomicLong hostPeak = new AtomicLong();

    final AtomicLong copies = new AtomicLong();
    /** Runs first in every copy: a test holds a move in the middle here to see what other threads can do. */
    volatile Runnable beforeCopy = () -> {};

    volatile boolean closed;
    volatile long maxDeviceAllocation = Long.MAX_VALUE;
    private final HostBlockCache host;

    HostSpillMemory(long deviceCapacity) {
        this(deviceCapacity, 0);
    }

    HostSpillMemory(long deviceCapacity, long retainedHostBytes) {
        this.deviceCapacity = deviceCapacity;
        this.host = new HostBlockCache(this::backing, retainedHostBytes);
    }

    private HostBlockCache.Backing backing(long size) {
        ArenaBlock block = new ArenaBlock(size, hostUsed);
        hostPeak.accumulateAndGet(hostUsed.addAndGet(size), Math::max);
        return new HostBlockCache.Backing() {
            @Override
            public MemorySegment segment() {
                return block.segment();
            }

            @Override
            public void free() {
                block.close();
            }
        };
    }

    @Override
    public Block allocateDevice(long bytes) {
        if (deviceUsed.addAndGet(bytes) > deviceCapacity) {
            deviceUsed.addAndGet(-bytes);
            return null;
        }
        return new ArenaBlock(bytes, deviceUsed);
    }

    @Override
    public MemorySegment allocateDevice(long bytes, Arena scope) {
        if (deviceUsed.addAndGet(bytes) > deviceCapacity) {
            deviceUsed.addAndGet(-bytes);
            return null;
        }
        return scope.allocate(Math.max(1, bytes), 64).reinterpret(bytes, scope, s -> deviceUsed.addAndGet(-bytes));
    }

    /** A "device" block from outside the store's allocations, for {@link SpillStore#put}. */
    Block deviceBlock(long bytes) {
        Block b = allocateDevice(bytes);
        if (b == null) {
            throw new IllegalStateException("test device full");
        }
        return b;
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
        return maxDeviceAllocation;
    }

    @Override
    public void copy(MemorySegment dst, MemorySegment src) {
        copies.incrementAndGet();
        beforeCopy.run();
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    }

    @Override
    public long deviceCapacity() {
        return deviceCapacity;
    }

    @Override
    public String deviceName() {
        return "test-device";
    }

    @Override
    public void close() {
        closed = true;
        host.close();
    }

    private static final class ArenaBlock implements Block {
        private final Arena arena = Arena.ofShared();
        private final MemorySegment segment;
        private final AtomicLong counter;
        private boolean freed;

        ArenaBlock(long bytes, AtomicLong counter) {
            this.segment = arena.allocate(bytes, 64);
            this.counter = counter;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public synchronized void close() {
            if (!freed) {
                arena.close(); // throws, changing nothing, while another thread is in a call on the segment
                freed = true;
                counter.addAndGet(-segment.byteSize());
            }
        }
    }
}
