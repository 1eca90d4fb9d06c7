package org.ucx4j.cuda;

import java.lang.foreign.MemorySegment;
import org.ucx4j.MemoryKind;
import org.ucx4j.cuda.internal.CudaDriver;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}, portable): host memory that Java reads and writes
 * as any native segment, and that GPUs copy to and from at full PCIe/NVLink-C2C speed. ucx4j-comm stages
 * device frames through it on transports that cannot carry GPU memory ({@code tcp://}).
 *
 * <p>Ownership: {@link #close()} frees it and closes the segment (later use fails with "already
 * closed"). Closing twice is harmless.
 *
 * <p>Threading: safe from any thread.
 */
public final class PinnedMemory implements AutoCloseable {
    private final CudaDevice device;
    private final Lifetime lifetime = new Lifetime();
    private final MemorySegment segment;

    PinnedMemory(CudaDevice device, long address, long size) {
        this.device = device;
        this.segment = Cuda.view(address, size, lifetime.arena());
    }

    /**
     * The memory.
     *
     * @return a native segment of kind host, closed when this is
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
        return segment.byteSize();
    }

    /**
     * The memory's kind.
     *
     * @return always {@link MemoryKind#HOST}
     */
    public MemoryKind kind() {
        return MemoryKind.HOST;
    }

    /**
     * Frees the memory. Idempotent.
     *
     * @throws IllegalStateException when another thread uses the segment right now: it then stays allocated
     */
    @Override
    public void close() {
        if (!lifetime.end()) {
            return;
        }
        device.makeCurrent();
        try {
            CudaDriver.check(
                    (int) CudaDriver.cuMemFreeHost.invokeExact(MemorySegment.ofAddress(segment.address())),
                    "cuMemFreeHost");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }
}
