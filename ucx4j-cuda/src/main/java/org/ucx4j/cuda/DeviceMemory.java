package org.ucx4j.cuda;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.ucx4j.MemoryKind;
import org.ucx4j.cuda.internal.CudaDriver;

/**
 * GPU memory owned by the Java code that allocated it: from {@link CudaDevice#allocate(long)} (its own
 * {@code cuMemAlloc}) or from a {@link GpuMemoryPool} (a piece of a pool slab).
 *
 * <p>The {@link #segment()} is a {@code MemorySegment} whose address is a device pointer, of kind
 * {@link MemoryKind#CUDA}: hand it to ucx4j (tag, stream, active messages, RMA, comm frames) and UCX moves
 * it with its CUDA transports ({@code cuda_copy}, {@code cuda_ipc}). Java code must not read or write it
 * directly; copy with {@link #copyFrom(MemorySegment)}, {@link #copyTo(MemorySegment)} or
 * {@link Cuda#copy(MemorySegment, MemorySegment)}.
 *
 * <p>Ownership: {@link #close()} frees the memory (or returns it to its pool) and closes the segment:
 * any later use of the segment, by Java or by a ucx4j call, fails with "already closed" instead of
 * touching freed memory. Closing twice is harmless. The caller must not close it while a transfer that
 * uses it is in flight (as for any buffer given to UCX).
 *
 * <p>Threading: safe from any thread; copies block the calling thread until done.
 */
public final class DeviceMemory implements AutoCloseable {
    private final CudaDevice device;
    private final long address;
    private final long size;
    private final Lifetime lifetime = new Lifetime();
    private final MemorySegment segment;
    private final Consumer<DeviceMemory> release;

    DeviceMemory(CudaDevice device, long address, long size, Consumer<DeviceMemory> release) {
        this.device = device;
        this.address = address;
        this.size = size;
        this.segment = size == 0 ? Cuda.view(0, 0, lifetime.arena()) : Cuda.view(address, size, lifetime.arena());
        this.release = release;
    }

    static void freeDirect(DeviceMemory m) {
        try {
            m.device.makeCurrent();
            CudaDriver.check((int) CudaDriver.cuMemFree.invokeExact(m.address), "cuMemFree");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * The memory as a segment of device addresses.
     *
     * @return the segment; closed when this memory is
     */
    public MemorySegment segment() {
        return segment;
    }

    /**
     * The size.
     *
     * @return bytes
     */
    public long byteSize() {
        return size;
    }

    /**
     * The GPU this memory is on.
     *
     * @return the device
     */
    public CudaDevice device() {
        return device;
    }

    /**
     * The memory's kind.
     *
     * @return always {@link MemoryKind#CUDA}
     */
    public MemoryKind kind() {
        return MemoryKind.CUDA;
    }

    /**
     * Whether the memory is still allocated.
     *
     * @return false once closed
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    long address() {
        return address;
    }

    /**
     * Copies {@code src} (host or device memory, of any GPU) into the start of this memory, and returns
     * when done.
     *
     * @param src the bytes to copy; at most {@link #byteSize()}
     * @throws IllegalStateException when this memory is closed
     * @throws IllegalArgumentException when {@code src} is larger than this memory
     */
    public void copyFrom(MemorySegment src) {
        Cuda.copy(segment, src);
    }

    /**
     * Copies the first {@code dst.byteSize()} bytes of this memory into {@code dst} (host or device
     * memory), and returns when done.
     *
     * @param dst where to copy to; at most {@link #byteSize()}
     * @throws IllegalStateException when this memory is closed
     * @throws IllegalArgumentException when {@code dst} is larger than this memory
     */
    public void copyTo(MemorySegment dst) {
        if (dst.byteSize() > size) {
            throw new IllegalArgumentException("copy of " + dst.byteSize() + " bytes out of device memory of " + size);
        }
        Cuda.copy(dst, segment.asSlice(0, dst.byteSize()));
    }

    /**
     * Sets every byte to {@code value} ({@code cuMemsetD8}) and returns when done.
     *
     * @param value the byte
     * @throws IllegalStateException when this memory is closed
     */
    public void fill(byte value) {
        Cuda.fill(segment, value);
    }

    /**
     * Frees the memory, or returns it to its pool. Idempotent.
     *
     * @throws IllegalStateException when another thread uses the segment right now (a copy in the driver,
     *     a Java access): the memory then stays allocated and open
     */
    @Override
    public void close() {
        if (lifetime.end() && release != null) {
            release.accept(this);
        }
    }

    @Override
    public String toString() {
        return "DeviceMemory[" + size + " bytes on cuda:" + device.ordinal() + (isOpen() ? "" : ", closed") + "]";
    }
}
