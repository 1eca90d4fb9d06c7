package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryProvider;
import org.ucx4j.UcxConfig;
import org.ucx4j.cuda.internal.CudaDriver;
import org.ucx4j.cuda.internal.CudaLinker;

/**
 * A GPU memory pool of one device: large {@code cuMemAlloc} slabs, sub-allocated. The counterpart of
 * RMM's pool resource that Dask-CUDA sets up with {@code rmm.pool-size}.
 *
 * <p>Why: UCX's {@code cuda_ipc} transport maps a peer's GPU memory into this process per allocation
 * ({@code cuIpcOpenMemHandle}, up to ~100 ms each) and caches the mapping. Buffers carved from a few
 * large slabs share their slab's mapping, so a fresh buffer costs no new mapping; and no
 * {@code cuMemAlloc}/{@code cuMemFree} (which synchronise the device) runs per buffer. Stream-ordered
 * pools ({@code cuMemAllocAsync}) are no substitute: UCX 1.22 can export their memory only as fabric
 * handles, which PCIe and NVLink-bridge GPUs do not have.
 *
 * <p>Sizing: the first slab is {@code initialSize} (Dask's {@code rmm.pool-size}, ucx4j's
 * {@code memory-pool.size}); when it is full the pool grows by slabs of the same size (or the size of the
 * request, if larger) up to {@code maximumSize} ({@code memory-pool.maximum-size}; default: the whole
 * device). Past that, {@link #allocate(long)} fails with a {@link CudaException} saying how much the pool
 * holds, uses and may hold; it never crashes. A new slab's {@code cuMemAlloc} runs under the pool's lock. Allocations are aligned to 256 bytes. Slabs
 * stay reserved until {@link #releaseUnused()} or {@link #close()}.
 *
 * <p>Ownership: the pool owns its slabs; each {@link DeviceMemory} it hands out is owned by the caller
 * and returns to the pool when closed; memory from {@link #allocate(long, Arena)} returns when its arena
 * closes (the pool is also a {@link MemoryProvider}: {@code AmAllocator.of(pool)} receives active messages
 * into it, ucx4j-comm's {@code FrameAllocator.host().with(pool)} receives CUDA frames into it). Closing the pool closes every {@code DeviceMemory} still out (their
 * segments then fail with "already closed") and frees the slabs; a slab that still holds arena-scoped
 * memory is freed when that memory comes back. Memory received through {@code AmAllocator.of(pool)}
 * lives in automatic arenas: it returns to the pool only when the garbage collector finds its segment
 * unreachable, which a busy receiver may outpace (the pool then reports itself exhausted).
 *
 * <p>Threading: safe from any thread (one lock; allocation is a best-fit search over the free ranges).
 */
public final class GpuMemoryPool implements MemoryProvider, AutoCloseable {
    /** Alignment of every allocation, in bytes. */
    public static final long ALIGNMENT = 256;
    /** The slab size when no initial size is given: 256 MiB. */
    public static final long DEFAULT_SLAB_SIZE = 256L << 20;

    private static final long SLAB_GRANULE = 2L << 20;

    private final CudaDevice device;
    private final long slabSize;
    private final long maximumSize;
    private final List<Slab> slabs = new ArrayList<>();
    private final Set<DeviceMemory> outstanding = Collections.newSetFromMap(new IdentityHashMap<>());
    private long reserved;
    private long used;
    private boolean closed;

    private GpuMemoryPool(CudaDevice device, long slabSize, long maximumSize) {
        this.device = device;
        this.slabSize = slabSize;
        this.maximumSize = maximumSize;
    }

    /**
     * Creates a pool and reserves its first slab.
     *
     * @param device the GPU
     * @param initialSize bytes reserved now, and the size of each later slab; 0 reserves nothing now and
     *     grows by {@link #DEFAULT_SLAB_SIZE}
     * @param maximumSize the most the pool may hold; at least {@code initialSize}
     * @return the pool, owned by the caller
     * @throws IllegalArgumentException for negative sizes or a maximum below the initial size
     * @throws CudaException when the first slab cannot be allocated
     */
    public static GpuMemoryPool create(CudaDevice device, long initialSize, long maximumSize) {
        if (initialSize < 0 || maximumSize <= 0 || maximumSize < initialSize) {
            throw new IllegalArgumentException("GPU memory pool: initial size " + initialSize + " and maximum size "
                    + maximumSize + " (need 0 <= initial <= maximum, maximum > 0)");
        }
        long slab = initialSize > 0 ? roundUp(initialSize, SLAB_GRANULE) : DEFAULT_SLAB_SIZE;
        GpuMemoryPool pool = new GpuMemoryPool(device, slab, maximumSize);
        if (initialSize > 0) {
            synchronized (pool) {
                pool.addSlab(Math.min(slab, maximumSize), false);
            }
        }
        return pool;
    }

    /**
     * Creates a pool sized by a configuration's {@code memory-pool.size} (default 0: grow on demand) and
     * {@code memory-pool.maximum-size} (default: the device's memory).
     *
     * @param device the GPU
     * @param config the configuration
     * @return the pool, owned by the caller
     */
    public static GpuMemoryPool create(CudaDevice device, UcxConfig config) {
        long initial = config.find(CudaKeys.MEMORY_POOL_SIZE).orElse(0L);
        long maximum = config.find(CudaKeys.MEMORY_POOL_MAXIMUM_SIZE).orElse(Math.max(initial, device.totalMemory()));
        return create(device, initial, maximum);
    }

    /**
     * The GPU this pool allocates on.
     *
     * @return the device
     */
    public CudaDevice device() {
        return device;
    }

    /**
     * Allocates from the pool, growing it by a slab when no free range fits and the maximum allows.
     *
     * @param bytes the size (0 gives an empty buffer that owns nothing)
     * @return the memory, exactly {@code bytes} long, owned by the caller; closing it returns it to the pool
     * @throws CudaException when the pool is exhausted (its maximum reached) or the device is out of memory
     * @throws IllegalStateException when the pool is closed
     */
    public DeviceMemory allocate(long bytes) {
        DeviceMemory m = allocate(bytes, false);
        assert m != null;
        return m;
    }

    /**
     * Allocates as {@link #allocate(long)} does, but answers "no room" (the maximum reached, or the device
     * out of memory when growing) with null instead of an exception: the {@link SpillStore} then spills and
     * tries again.
     *
     * @param bytes the size
     * @return the memory, owned by the caller, or null when the pool has no room for it
     */
    DeviceMemory tryAllocate(long bytes) {
        return allocate(bytes, true);
    }

    private DeviceMemory allocate(long bytes, boolean orNull) {
        if (bytes == 0) {
            return new DeviceMemory(device, 0, 0, null);
        }
        synchronized (this) {
            Range r = take(bytes, orNull);
            if (r == null) {
                return null;
            }
            // Exactly what was asked (the range keeps its 256-byte rounding): a copy from a pooled buffer
            // into memory of the size asked for must fit (the spill store's did not, on an H100).
            DeviceMemory m = new DeviceMemory(device, r.slab.base + r.offset, bytes, mem -> release(r, mem));
            outstanding.add(m);
            return m;
        }
    }

    /**
     * Allocates from the pool memory that returns to it when {@code scope} closes (for an automatic arena:
     * when the segment becomes unreachable). Closing the pool first invalidates nothing here: the caller
     * must close the scope before the pool.
     *
     * @param byteSize the size
     * @param scope the arena the memory lives in
     * @return a device segment of exactly {@code byteSize} bytes
     * @throws CudaException when the pool is exhausted
     */
    @Override
    public MemorySegment allocate(long byteSize, Arena scope) {
        return allocate(byteSize, scope, false);
    }

    /**
     * Allocates as {@link #allocate(long, Arena)} does, but answers "no room" with null (see
     * {@link #tryAllocate(long)}).
     */
    MemorySegment tryAllocate(long byteSize, Arena scope) {
        return allocate(byteSize, scope, true);
    }

    private MemorySegment allocate(long byteSize, Arena scope, boolean orNull) {
        if (byteSize == 0) {
            return CudaLinker.view(0, 0, scope);
        }
        Range r;
        synchronized (this) {
            r = take(byteSize, orNull);
        }
        if (r == null) {
            return null;
        }
        try {
            return CudaLinker.view(r.slab.base + r.offset, byteSize, scope, seg -> release(r, null));
        } catch (RuntimeException e) {
            release(r, null);
            throw e;
        }
    }

    /**
     * The kind of memory this pool holds.
     *
     * @return {@link MemoryKind#CUDA}
     */
    @Override
    public MemoryKind kind() {
        return MemoryKind.CUDA;
    }

    /**
     * Copies between this pool's memory and host memory, or within device memory (see
     * {@link Cuda#copy(MemorySegment, MemorySegment)}).
     *
     * @param dst where to copy to
     * @param src what to copy
     */
    @Override
    public void copy(MemorySegment dst, MemorySegment src) {
        Cuda.copy(dst, src);
    }

    /**
     * Lock held: a best-fit free range, growing the pool by a slab when none fits; when there is no room,
     * null if {@code orNull}, else a {@link CudaException}.
     */
    private Range take(long bytes, boolean orNull) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        if (closed) {
            throw new IllegalStateException("GPU memory pool already closed");
        }
        long size = roundUp(bytes, ALIGNMENT);
        Slab best = null;
        long bestOffset = -1;
        long bestLength = Long.MAX_VALUE;
        for (Slab s : slabs) {
            for (Map.Entry<Long, Long> e : s.free.entrySet()) {
                if (e.getValue() >= size && e.getValue() < bestLength) {
                    best = s;
                    bestOffset = e.getKey();
                    bestLength = e.getValue();
                }
            }
        }
        if (best == null) {
            long grow = Math.max(slabSize, roundUp(size, SLAB_GRANULE));
            long room = maximumSize - reserved;
            if (room < size) {
                if (orNull) {
                    return null;
                }
                throw exhausted(bytes);
            }
            best = addSlab(Math.min(grow, room), orNull);
            if (best == null) {
                return null;
            }
            bestOffset = 0;
            bestLength = best.size;
        }
        best.free.remove(bestOffset);
        if (bestLength > size) {
            best.free.put(bestOffset + size, bestLength - size);
        }
        used += size;
        best.allocations++;
        return new Range(best, bestOffset, size);
    }

    private CudaException exhausted(long bytes) {
        long largest = 0;
        for (Slab s : slabs) {
            for (long len : s.free.values()) {
                largest = Math.max(largest, len);
            }
        }
        return new CudaException("GPU memory pool on cuda:" + device.ordinal() + " exhausted: asked for " + bytes
                + " bytes; the pool holds " + reserved + " bytes in " + slabs.size() + " slabs, " + used
                + " in use, largest free range " + largest + ", maximum size (memory-pool.maximum-size) "
                + maximumSize);
    }

    private Slab addSlab(long size, boolean orNull) {
        device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            int rc = (int) CudaDriver.cuMemAlloc.invokeExact(out, size);
            if (rc == CudaDriver.ERROR_OUT_OF_MEMORY && orNull) {
                return null;
            }
            if (rc == CudaDriver.ERROR_OUT_OF_MEMORY) {
                throw new CudaException(
                        "GPU memory pool on cuda:" + device.ordinal() + " cannot grow by " + size
                                + " bytes: the device is out of memory (the pool holds " + reserved + " bytes)",
                        rc);
            }
            CudaDriver.check(rc, "cuMemAlloc(" + size + " bytes) for a pool slab");
            Slab s = new Slab(out.get(JAVA_LONG, 0), size);
            slabs.add(s);
            reserved += size;
            return s;
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    private synchronized void release(Range r, DeviceMemory m) {
        if (m != null && !outstanding.remove(m)) {
            return;
        }
        Slab slab = r.slab;
        used -= r.size;
        slab.allocations--;
        long start = r.offset;
        long length = r.size;
        Map.Entry<Long, Long> before = slab.free.floorEntry(start);
        if (before != null && before.getKey() + before.getValue() == start) {
            start = before.getKey();
            length += before.getValue();
            slab.free.remove(before.getKey());
        }
        Long afterLength = slab.free.get(r.offset + r.size);
        if (afterLength != null) {
            slab.free.remove(r.offset + r.size);
            length += afterLength;
        }
        slab.free.put(start, length);
        if (closed && slab.allocations == 0) {
            freeSlab(slab); // the pool closed while this piece was out: its slab goes with it
            reserved -= slab.size;
            slabs.remove(slab);
        }
    }

    /**
     * Frees the slabs that hold no allocation.
     *
     * @return bytes given back to the device
     */
    public synchronized long releaseUnused() {
        long freed = 0;
        for (var it = slabs.iterator(); it.hasNext(); ) {
            Slab s = it.next();
            if (s.allocations == 0) {
                freeSlab(s);
                reserved -= s.size;
                freed += s.size;
                it.remove();
            }
        }
        return freed;
    }

    /**
     * Bytes reserved from the device.
     *
     * @return the sum of the slab sizes
     */
    public synchronized long reservedBytes() {
        return reserved;
    }

    /**
     * Bytes handed out and not yet returned (sizes rounded up to {@link #ALIGNMENT}).
     *
     * @return bytes in use
     */
    public synchronized long usedBytes() {
        return used;
    }

    /**
     * The most the pool may hold.
     *
     * @return bytes
     */
    public long maximumSize() {
        return maximumSize;
    }

    /**
     * How many slabs the pool holds.
     *
     * @return the count
     */
    public synchronized int slabCount() {
        return slabs.size();
    }

    private void freeSlab(Slab s) {
        device.makeCurrent();
        try {
            CudaDriver.check((int) CudaDriver.cuMemFree.invokeExact(s.base), "cuMemFree(pool slab)");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Closes every {@link DeviceMemory} still out, then frees the slabs that hold nothing. A slab that
     * still holds memory from {@link #allocate(long, Arena)} (a comm message or an active-message body not
     * yet released) is freed when its last piece comes back, so no segment ever points at freed memory.
     * Idempotent.
     *
     * @throws IllegalStateException when a {@link DeviceMemory} is in use by another thread right now (it
     *     stays allocated, and its slab with it, until it is closed)
     */
    @Override
    public void close() {
        List<DeviceMemory> open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = new ArrayList<>(outstanding);
        }
        IllegalStateException failure = null;
        for (DeviceMemory m : open) {
            try {
                m.close();
            } catch (IllegalStateException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        synchronized (this) {
            for (var it = slabs.iterator(); it.hasNext(); ) {
                Slab s = it.next();
                if (s.allocations == 0) {
                    freeSlab(s);
                    reserved -= s.size;
                    it.remove();
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static long roundUp(long v, long granule) {
        return (v + granule - 1) / granule * granule;
    }

    private record Range(Slab slab, long offset, long size) {}

    private static final class Slab {
        final long base;
        final long size;
        final TreeMap<Long, Long> free = new TreeMap<>();
        int allocations;

        Slab(long base, long size) {
            this.base = base;
            this.size = size;
            free.put(0L, size);
        }
    }
}
