package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.ucx4j.MemoryKind;
import org.ucx4j.cuda.internal.CudaDriver;
import org.ucx4j.cuda.internal.CudaLinker;

/**
 * Entry point of ucx4j-cuda: whether CUDA can be used in this process, its GPUs, and copies between any
 * two kinds of memory.
 *
 * <p>Why a facade: a CPU-only machine is a normal place for ucx4j to run. {@link #isAvailable()} and
 * {@link #unavailabilityReason()} say in one sentence why GPU memory cannot be used (no driver, no
 * device, driver too old); every other entry point then throws a {@link CudaException} with that
 * sentence, never a linkage error or a crash.
 *
 * <p>Devices are numbered as CUDA numbers them in this process: {@code CUDA_VISIBLE_DEVICES} and
 * {@code CUDA_DEVICE_ORDER} apply (ucx4j's launcher sets {@code CUDA_DEVICE_ORDER=PCI_BUS_ID}).
 *
 * <p>Threading: every method is safe from any thread. The driver is loaded and initialised once, on
 * first use; the device list never changes afterwards.
 */
public final class Cuda {
    private static volatile List<CudaDevice> devices;

    private Cuda() {}

    /**
     * Whether the CUDA driver loaded, initialised and sees at least one GPU.
     *
     * @return true when GPU memory can be used
     */
    public static boolean isAvailable() {
        return CudaDriver.failure() == null;
    }

    /**
     * Why CUDA cannot be used, in one sentence for a person.
     *
     * @return the reason, or empty when {@link #isAvailable()}
     */
    public static Optional<String> unavailabilityReason() {
        return Optional.ofNullable(CudaDriver.failure());
    }

    /**
     * Throws unless CUDA is available.
     *
     * @throws CudaException whose message is "CUDA is not available: " and the reason
     */
    public static void ensureAvailable() {
        CudaDriver.require();
    }

    /**
     * The CUDA version of the installed driver's API.
     *
     * @return for example {@code 13.0}
     * @throws CudaException when CUDA is unavailable
     */
    public static String driverVersion() {
        CudaDriver.require();
        return CudaDriver.versionText(CudaDriver.driverVersion());
    }

    /**
     * The GPUs this process sees, in CUDA's order.
     *
     * @return an unmodifiable list, never empty
     * @throws CudaException when CUDA is unavailable
     */
    public static List<CudaDevice> devices() {
        List<CudaDevice> d = devices;
        if (d == null) {
            synchronized (Cuda.class) {
                d = devices;
                if (d == null) {
                    CudaDriver.require();
                    int count;
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment n = a.allocate(JAVA_INT);
                        CudaDriver.check((int) CudaDriver.cuDeviceGetCount.invokeExact(n), "cuDeviceGetCount");
                        count = n.get(JAVA_INT, 0);
                    } catch (Throwable t) {
                        throw CudaDriver.rethrow(t);
                    }
                    List<CudaDevice> list = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) {
                        list.add(CudaDevice.open(i));
                    }
                    devices = d = List.copyOf(list);
                }
            }
        }
        return d;
    }

    /**
     * One GPU by CUDA ordinal.
     *
     * @param ordinal 0 for the first visible GPU
     * @return the device
     * @throws CudaException when CUDA is unavailable
     * @throws IllegalArgumentException when there is no such device (the message says how many there are)
     */
    public static CudaDevice device(int ordinal) {
        List<CudaDevice> all = devices();
        if (ordinal < 0 || ordinal >= all.size()) {
            throw new IllegalArgumentException(
                    "no CUDA device " + ordinal + ": this process sees " + all.size() + " (0.." + (all.size() - 1)
                            + "; CUDA_VISIBLE_DEVICES=" + System.getenv("CUDA_VISIBLE_DEVICES") + ")");
        }
        return all.get(ordinal);
    }

    /**
     * What kind of memory an address is, asked of the driver ({@code cuPointerGetAttribute}).
     *
     * @param segment any native segment; heap segments are host memory
     * @return {@link MemoryKind#CUDA} for device memory (also managed memory), {@link MemoryKind#HOST}
     *     for everything else, including host memory CUDA does not know
     */
    public static MemoryKind memoryKindOf(MemorySegment segment) {
        return deviceOf(segment).isPresent() ? MemoryKind.CUDA : MemoryKind.HOST;
    }

    /**
     * The GPU a device address belongs to.
     *
     * @param segment any segment
     * @return the device, or empty for host memory (or when CUDA is unavailable)
     */
    public static Optional<CudaDevice> deviceOf(MemorySegment segment) {
        if (!segment.isNative() || !isAvailable()) {
            return Optional.empty();
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment type = a.allocate(JAVA_INT);
            int rc = (int) CudaDriver.cuPointerGetAttribute.invokeExact(
                    type, CudaDriver.POINTER_MEMORY_TYPE, segment.address());
            if (rc != CudaDriver.SUCCESS || type.get(JAVA_INT, 0) != CudaDriver.MEMORYTYPE_DEVICE) {
                return Optional.empty();
            }
            MemorySegment ordinal = a.allocate(JAVA_INT);
            CudaDriver.check(
                    (int) CudaDriver.cuPointerGetAttribute.invokeExact(
                            ordinal, CudaDriver.POINTER_DEVICE_ORDINAL, segment.address()),
                    "cuPointerGetAttribute(DEVICE_ORDINAL)");
            return Optional.of(device(ordinal.get(JAVA_INT, 0)));
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Copies {@code src.byteSize()} bytes into the start of {@code dst}, between any kinds of memory
     * (host to device, device to host, device to device on one or two GPUs), and returns when the copy
     * is done. Heap segments are staged through native memory.
     *
     * @param dst where to copy to, at least as large as {@code src}
     * @param src what to copy
     * @throws IllegalArgumentException when {@code dst} is smaller than {@code src}
     * @throws IllegalStateException when either segment is closed (freed)
     * @throws CudaException when the driver fails or CUDA is unavailable
     */
    public static void copy(MemorySegment dst, MemorySegment src) {
        CudaDriver.require();
        // A closed segment still has its address: the driver would be handed freed memory (and may fault).
        requireAlive(dst, "destination");
        requireAlive(src, "source");
        long n = src.byteSize();
        if (dst.byteSize() < n) {
            throw new IllegalArgumentException("copy of " + n + " bytes into a segment of " + dst.byteSize());
        }
        if (n == 0) {
            return;
        }
        if (!src.isNative()) {
            try (Arena a = Arena.ofConfined()) {
                copy(dst, a.allocate(n, 64).copyFrom(src));
            }
            return;
        }
        if (!dst.isNative()) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment staging = a.allocate(n, 64);
                copy(staging, src);
                MemorySegment.copy(staging, 0, dst, 0, n);
            }
            return;
        }
        ensureSomeContext(dst, src);
        try {
            CudaDriver.check((int) CudaDriver.cuMemcpy.invokeExact(dst, src, n), "cuMemcpy(" + n + " bytes)");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Sets every byte of device memory to {@code value} ({@code cuMemsetD8}, on the device) and returns
     * when done.
     *
     * @param dst device memory (a segment of {@link DeviceMemory}, a pool, or any CUDA allocation)
     * @param value the byte
     * @throws IllegalArgumentException when {@code dst} is not device memory
     * @throws IllegalStateException when {@code dst} is closed
     */
    public static void fill(MemorySegment dst, byte value) {
        CudaDriver.require();
        requireAlive(dst, "destination");
        if (dst.byteSize() == 0) {
            return;
        }
        CudaDevice device = deviceOf(dst)
                .orElseThrow(() ->
                        new IllegalArgumentException("Cuda.fill needs device memory; " + dst + " is host memory"));
        device.makeCurrent();
        try {
            CudaDriver.check((int) CudaDriver.cuMemsetD8.invokeExact(dst, value, dst.byteSize()), "cuMemsetD8");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Fails when a segment's memory was freed (its arena closed), before its address reaches the driver.
     *
     * @param segment the segment
     * @param what its role, for the message
     * @throws IllegalStateException naming the role
     */
    static void requireAlive(MemorySegment segment, String what) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the copy's " + what + " is already closed (its memory was freed)");
        }
    }

    /**
     * cuMemcpy needs a context current on the calling thread (any, with unified addressing): that of
     * a device involved, or the first GPU's.
     */
    static void ensureSomeContext(MemorySegment a, MemorySegment b) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment current = arena.allocate(ADDRESS);
            CudaDriver.check((int) CudaDriver.cuCtxGetCurrent.invokeExact(current), "cuCtxGetCurrent");
            if (!current.get(ADDRESS, 0).equals(MemorySegment.NULL)) {
                return;
            }
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
        deviceOf(a).or(() -> deviceOf(b)).orElseGet(() -> device(0)).makeCurrent();
    }

    /** Views device or pinned memory; for this module's classes. */
    static MemorySegment view(long address, long size, Arena arena) {
        return CudaLinker.view(address, size, arena);
    }
}
