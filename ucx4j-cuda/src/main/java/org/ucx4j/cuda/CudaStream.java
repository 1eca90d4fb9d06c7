package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ucx4j.cuda.internal.CudaDriver;

/**
 * A CUDA stream of one device: copies queued on it run in order, asynchronously to the calling thread.
 *
 * <p>Ownership: created by {@link CudaDevice#newStream()}, closed by the caller; closing waits for queued
 * work first. Segments given to {@link #copyAsync} must stay open until {@link #synchronize()} returns.
 *
 * <p>Threading: safe from any thread; work is ordered in the order calls reach the driver.
 */
public final class CudaStream implements AutoCloseable {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaStream(CudaDevice device, MemorySegment handle) {
        this.device = device;
        this.handle = handle;
    }

    static CudaStream create(CudaDevice device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            CudaDriver.check(
                    (int) CudaDriver.cuStreamCreate.invokeExact(out, CudaDriver.STREAM_NON_BLOCKING), "cuStreamCreate");
            return new CudaStream(device, out.get(ADDRESS, 0));
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * The device the stream belongs to.
     *
     * @return the device
     */
    public CudaDevice device() {
        return device;
    }

    /**
     * Queues a copy of {@code src.byteSize()} bytes into the start of {@code dst} (any kinds of native
     * memory; host memory should be pinned for the copy to be truly asynchronous).
     *
     * @param dst where to copy to
     * @param src what to copy
     * @throws IllegalArgumentException when a segment is on the heap, or {@code dst} is smaller
     * @throws IllegalStateException when the stream is closed
     */
    public void copyAsync(MemorySegment dst, MemorySegment src) {
        if (!dst.isNative() || !src.isNative()) {
            throw new IllegalArgumentException("asynchronous copies need native segments (a heap segment may move)");
        }
        if (dst.byteSize() < src.byteSize()) {
            throw new IllegalArgumentException("copy of " + src.byteSize() + " bytes into " + dst.byteSize());
        }
        ensureOpen();
        Cuda.requireAlive(dst, "destination");
        Cuda.requireAlive(src, "source");
        device.makeCurrent();
        try {
            CudaDriver.check(
                    (int) CudaDriver.cuMemcpyAsync.invokeExact(dst, src, src.byteSize(), handle),
                    "cuMemcpyAsync(" + src.byteSize() + " bytes)");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Waits until everything queued so far is done.
     *
     * @throws CudaException when queued work failed
     */
    public void synchronize() {
        ensureOpen();
        try {
            CudaDriver.check((int) CudaDriver.cuStreamSynchronize.invokeExact(handle), "cuStreamSynchronize");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Measures the GPU time of the work a task queues on this stream, with two events.
     *
     * @param task queues work on this stream
     * @return milliseconds between the events around the work, as the GPU measured them
     */
    public float timeMillis(Runnable task) {
        ensureOpen();
        device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            CudaDriver.check(
                    (int) CudaDriver.cuEventCreate.invokeExact(out, CudaDriver.EVENT_DEFAULT), "cuEventCreate");
            MemorySegment start = out.get(ADDRESS, 0);
            CudaDriver.check(
                    (int) CudaDriver.cuEventCreate.invokeExact(out, CudaDriver.EVENT_DEFAULT), "cuEventCreate");
            MemorySegment stop = out.get(ADDRESS, 0);
            try {
                CudaDriver.check((int) CudaDriver.cuEventRecord.invokeExact(start, handle), "cuEventRecord");
                task.run();
                CudaDriver.check((int) CudaDriver.cuEventRecord.invokeExact(stop, handle), "cuEventRecord");
                CudaDriver.check((int) CudaDriver.cuEventSynchronize.invokeExact(stop), "cuEventSynchronize");
                MemorySegment ms = a.allocate(JAVA_FLOAT);
                CudaDriver.check(
                        (int) CudaDriver.cuEventElapsedTime.invokeExact(ms, start, stop), "cuEventElapsedTime");
                return ms.get(JAVA_FLOAT, 0);
            } finally {
                int r1 = (int) CudaDriver.cuEventDestroy.invokeExact(start);
                int r2 = (int) CudaDriver.cuEventDestroy.invokeExact(stop);
                assert r1 == 0 && r2 == 0;
            }
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("CUDA stream already closed");
        }
    }

    /**
     * Waits for queued work, then destroys the stream. Idempotent.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                int sync = (int) CudaDriver.cuStreamSynchronize.invokeExact(handle);
                int rc = (int) CudaDriver.cuStreamDestroy.invokeExact(handle);
                CudaDriver.check(sync, "cuStreamSynchronize");
                CudaDriver.check(rc, "cuStreamDestroy");
            } catch (Throwable t) {
                throw CudaDriver.rethrow(t);
            }
        }
    }
}
