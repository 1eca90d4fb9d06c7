package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.UUID;
import org.ucx4j.cuda.internal.CudaDriver;
import org.ucx4j.cuda.internal.CudaUcxExtension;
import org.ucx4j.cuda.internal.Nvml;
import org.ucx4j.cuda.internal.PciBusId;

/**
 * One GPU as this process sees it: its identity, its primary context, and the memory allocated on it.
 * Obtained from {@link Cuda#devices()} or {@link Cuda#device(int)}; one instance per device per process.
 *
 * <p>Contexts: ucx4j uses each device's primary context (the one the CUDA runtime, CuPy and UCX use), so
 * memory allocated here is usable by UCX and by any CUDA library in the process. The context is
 * retained on first use and kept for the life of the process. Every method that needs it makes it
 * current on the calling thread first; {@link #makeCurrent()} does that explicitly for code that calls
 * CUDA libraries of its own.
 *
 * <p>Threading: safe from any thread, virtual threads included (a context is made current immediately
 * before each driver call, on the carrier that makes the call).
 */
public final class CudaDevice {
    private final int ordinal;
    private final int handle;
    private final String name;
    private final UUID uuid;
    private final String pciBusId;
    private final long totalMemory;
    private final int ccMajor;
    private final int ccMinor;
    private volatile MemorySegment context;

    private CudaDevice(
            int ordinal,
            int handle,
            String name,
            UUID uuid,
            String pciBusId,
            long totalMemory,
            int ccMajor,
            int ccMinor) {
        this.ordinal = ordinal;
        this.handle = handle;
        this.name = name;
        this.uuid = uuid;
        this.pciBusId = pciBusId;
        this.totalMemory = totalMemory;
        this.ccMajor = ccMajor;
        this.ccMinor = ccMinor;
    }

    static CudaDevice open(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dev = a.allocate(JAVA_INT);
            CudaDriver.check((int) CudaDriver.cuDeviceGet.invokeExact(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
            int h = dev.get(JAVA_INT, 0);
            MemorySegment text = a.allocate(256);
            CudaDriver.check((int) CudaDriver.cuDeviceGetName.invokeExact(text, 256, h), "cuDeviceGetName");
            String name = text.getString(0);
            MemorySegment raw = a.allocate(16);
            CudaDriver.check((int) CudaDriver.cuDeviceGetUuid.invokeExact(raw, h), "cuDeviceGetUuid");
            ByteBuffer bb = raw.asByteBuffer();
            UUID uuid = new UUID(bb.getLong(0), bb.getLong(8));
            CudaDriver.check((int) CudaDriver.cuDeviceGetPCIBusId.invokeExact(text, 256, h), "cuDeviceGetPCIBusId");
            String bus = PciBusId.normalize(text.getString(0));
            MemorySegment total = a.allocate(JAVA_LONG);
            CudaDriver.check((int) CudaDriver.cuDeviceTotalMem.invokeExact(total, h), "cuDeviceTotalMem");
            MemorySegment attr = a.allocate(JAVA_INT);
            CudaDriver.check(
                    (int) CudaDriver.cuDeviceGetAttribute.invokeExact(attr, CudaDriver.ATTR_CC_MAJOR, h),
                    "cuDeviceGetAttribute");
            int major = attr.get(JAVA_INT, 0);
            CudaDriver.check(
                    (int) CudaDriver.cuDeviceGetAttribute.invokeExact(attr, CudaDriver.ATTR_CC_MINOR, h),
                    "cuDeviceGetAttribute");
            int minor = attr.get(JAVA_INT, 0);
            return new CudaDevice(ordinal, h, name, uuid, bus, total.get(JAVA_LONG, 0), major, minor);
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * CUDA's ordinal of this device in this process.
     *
     * @return 0 for the first visible GPU
     */
    public int ordinal() {
        return ordinal;
    }

    /**
     * The product name.
     *
     * @return for example {@code NVIDIA H100 80GB HBM3}
     */
    public String name() {
        return name;
    }

    /**
     * The GPU's UUID, as {@code nvidia-smi -L} prints it after {@code GPU-}.
     *
     * @return the UUID
     */
    public UUID uuid() {
        return uuid;
    }

    /**
     * The PCI bus id.
     *
     * @return {@code dddd:bb:dd.f}, lower case
     */
    public String pciBusId() {
        return pciBusId;
    }

    /**
     * The device's memory.
     *
     * @return bytes
     */
    public long totalMemory() {
        return totalMemory;
    }

    /**
     * The compute capability.
     *
     * @return for example {@code 9.0} for Hopper
     */
    public String computeCapability() {
        return ccMajor + "." + ccMinor;
    }

    /**
     * Retains this device's primary context (once per process) and makes it current on the calling
     * thread, for code that calls CUDA libraries of its own. ucx4j's own calls do this themselves.
     *
     * @throws CudaException when the driver refuses
     */
    public void makeCurrent() {
        MemorySegment ctx = context();
        try {
            CudaDriver.check((int) CudaDriver.cuCtxSetCurrent.invokeExact(ctx), "cuCtxSetCurrent");
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Whether this process has retained this device's primary context yet (through ucx4j).
     *
     * @return true after the first {@link #makeCurrent()}, allocation, copy or stream on this device
     */
    public boolean hasContext() {
        return context != null;
    }

    private MemorySegment context() {
        MemorySegment ctx = context;
        if (ctx == null) {
            synchronized (this) {
                ctx = context;
                if (ctx == null) {
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment out = a.allocate(ADDRESS);
                        CudaDriver.check(
                                (int) CudaDriver.cuDevicePrimaryCtxRetain.invokeExact(out, handle),
                                "cuDevicePrimaryCtxRetain(device " + ordinal + ")");
                        context = ctx = out.get(ADDRESS, 0);
                        CudaUcxExtension.contextCreated(this);
                    } catch (Throwable t) {
                        throw CudaDriver.rethrow(t);
                    }
                }
            }
        }
        return ctx;
    }

    /**
     * Allocates device memory with {@code cuMemAlloc}, outside any pool: UCX's {@code cuda_ipc} maps each
     * such allocation separately when a peer process first sees it. For many buffers, use a
     * {@link GpuMemoryPool}.
     *
     * @param bytes the size (0 gives an empty buffer that owns nothing)
     * @return the memory, owned by the caller (close it to free)
     * @throws CudaException when the device is out of memory (the message says how much was free)
     */
    public DeviceMemory allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        if (bytes == 0) {
            return new DeviceMemory(this, 0, 0, null);
        }
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            int rc = (int) CudaDriver.cuMemAlloc.invokeExact(out, bytes);
            if (rc == CudaDriver.ERROR_OUT_OF_MEMORY) {
                throw new CudaException(
                        "out of GPU memory on device " + ordinal + ": cuMemAlloc(" + bytes + " bytes) with "
                                + freeMemoryOrUnknown() + " free",
                        rc);
            }
            CudaDriver.check(rc, "cuMemAlloc(" + bytes + " bytes) on device " + ordinal);
            long address = out.get(JAVA_LONG, 0);
            return new DeviceMemory(this, address, bytes, DeviceMemory::freeDirect);
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Allocates page-locked (pinned) host memory ({@code cuMemHostAlloc}, portable to every context):
     * the memory host-device copies and staging are fastest from.
     *
     * @param bytes the size, at least 1
     * @return the memory, owned by the caller (close it to free)
     * @throws CudaException when the driver refuses
     */
    public PinnedMemory allocatePinned(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("pinned memory of " + bytes + " bytes");
        }
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            CudaDriver.check(
                    (int) CudaDriver.cuMemHostAlloc.invokeExact(out, bytes, CudaDriver.MEMHOSTALLOC_PORTABLE),
                    "cuMemHostAlloc(" + bytes + " bytes)");
            return new PinnedMemory(this, out.get(ADDRESS, 0).address(), bytes);
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Creates a stream on this device (non-blocking with respect to the legacy default stream).
     *
     * @return the stream, owned by the caller
     */
    public CudaStream newStream() {
        makeCurrent();
        return CudaStream.create(this);
    }

    /**
     * Free and total memory of this device, as the driver reports it now.
     *
     * @return {@code [free, total]} in bytes
     */
    public long[] memoryInfo() {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment free = a.allocate(JAVA_LONG);
            MemorySegment total = a.allocate(JAVA_LONG);
            CudaDriver.check((int) CudaDriver.cuMemGetInfo.invokeExact(free, total), "cuMemGetInfo");
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    private String freeMemoryOrUnknown() {
        try {
            return memoryInfo()[0] + " bytes";
        } catch (CudaException e) {
            return "an unknown amount";
        }
    }

    /**
     * Whether this device can read and write another's memory directly (NVLink or PCIe peer access).
     *
     * @param peer the other device
     * @return true when {@code cuDeviceCanAccessPeer} says so
     */
    public boolean canAccessPeer(CudaDevice peer) {
        if (peer == this) {
            return true;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            CudaDriver.check(
                    (int) CudaDriver.cuDeviceCanAccessPeer.invokeExact(out, handle, peer.handle),
                    "cuDeviceCanAccessPeer");
            return out.get(JAVA_INT, 0) != 0;
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * Lets this device's context access a peer's memory. Enabling twice is harmless.
     *
     * @param peer the other device
     * @throws CudaException when the devices cannot be peers
     */
    public void enablePeerAccess(CudaDevice peer) {
        if (peer == this) {
            return;
        }
        MemorySegment peerCtx = peer.context();
        makeCurrent();
        try {
            int rc = (int) CudaDriver.cuCtxEnablePeerAccess.invokeExact(peerCtx, 0);
            if (rc != CudaDriver.ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                CudaDriver.check(rc, "cuCtxEnablePeerAccess(device " + ordinal + " -> " + peer.ordinal + ")");
            }
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
    }

    /**
     * What NVML says of this GPU: CPU affinity, memory in use, NVLink links and their far ends.
     *
     * @return the facts; {@link GpuTopology#problem()} says what NVML could not tell
     */
    public GpuTopology topology() {
        Nvml.GpuFacts f = Nvml.query(pciBusId);
        return new GpuTopology(
                f.cpuAffinity(),
                f.memoryUsed(),
                f.memoryTotal(),
                f.activeNvLinks(),
                f.nvLinkRemoteBusIds(),
                java.util.Optional.ofNullable(f.problem()));
    }

    @Override
    public String toString() {
        return "cuda:" + ordinal + " (" + name + ", " + pciBusId + ")";
    }
}
