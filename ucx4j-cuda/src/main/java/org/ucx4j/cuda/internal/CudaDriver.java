package org.ucx4j.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import org.ucx4j.cuda.CudaException;

/**
 * The CUDA driver API ({@code libcuda.so.1}, installed with the NVIDIA driver), bound once. Signatures
 * are those of {@code cuda.h} (CUDA 12/13): {@code CUresult} and {@code CUdevice} are {@code int},
 * {@code CUdeviceptr} is a 64-bit integer, contexts, streams and events are pointers. The copies and the
 * memset take their {@code CUdeviceptr}s as {@code ADDRESS}: callers pass the segments themselves, so the
 * segments' arenas stay open for the length of the call (another thread's close then fails instead of
 * freeing the memory under the driver). The {@code _v2}
 * names are the ones {@code cuda.h} maps the plain names to since CUDA 3.2/4.0, and every driver since
 * keeps exporting them.
 *
 * <p>Loading: the first use of this class opens the library and calls {@code cuInit(0)}; when either
 * fails, {@link #failure()} says why in one sentence and every handle is null.
 *
 * <p>Threading: the handles are immutable; the driver API is thread-safe. Calls that need a context use
 * the one current on the calling OS thread: callers make it current first.
 */
public final class CudaDriver {
    /** {@code CUDA_SUCCESS}. */
    public static final int SUCCESS = 0;
    /** {@code CUDA_ERROR_INVALID_VALUE}. */
    public static final int ERROR_INVALID_VALUE = 1;
    /** {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public static final int ERROR_OUT_OF_MEMORY = 2;
    /** {@code CUDA_ERROR_INSUFFICIENT_DRIVER}. */
    public static final int ERROR_INSUFFICIENT_DRIVER = 35;
    /** {@code CUDA_ERROR_NO_DEVICE}. */
    public static final int ERROR_NO_DEVICE = 100;
    /** {@code CUDA_ERROR_NOT_READY} (an event or stream still has work). */
    public static final int ERROR_NOT_READY = 600;
    /** {@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}. */
    public static final int ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR}. */
    public static final int ATTR_CC_MAJOR = 75;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}. */
    public static final int ATTR_CC_MINOR = 76;
    /** {@code CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING}. */
    public static final int ATTR_UNIFIED_ADDRESSING = 41;
    /** {@code CU_POINTER_ATTRIBUTE_MEMORY_TYPE}: a {@code CUmemorytype} (1 host, 2 device, 4 unified). */
    public static final int POINTER_MEMORY_TYPE = 2;
    /** {@code CU_POINTER_ATTRIBUTE_IS_MANAGED}. */
    public static final int POINTER_IS_MANAGED = 8;
    /** {@code CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL}. */
    public static final int POINTER_DEVICE_ORDINAL = 9;
    /** {@code CU_MEMORYTYPE_HOST}. */
    public static final int MEMORYTYPE_HOST = 1;
    /** {@code CU_MEMORYTYPE_DEVICE}. */
    public static final int MEMORYTYPE_DEVICE = 2;
    /** {@code CU_MEMHOSTALLOC_PORTABLE}: pinned memory usable from every context. */
    public static final int MEMHOSTALLOC_PORTABLE = 1;
    /** {@code CU_STREAM_NON_BLOCKING}. */
    public static final int STREAM_NON_BLOCKING = 1;
    /** {@code CU_EVENT_DEFAULT}. */
    public static final int EVENT_DEFAULT = 0;

    /** The oldest driver API this binding accepts: 11.4 ({@code cuDeviceGetUuid_v2}). */
    public static final int MINIMUM_DRIVER_VERSION = 11040;

    private static final FunctionDescriptor I_I = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor I_P = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_PI = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor I_PII = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);

    public static final MethodHandle cuDriverGetVersion;
    public static final MethodHandle cuDeviceGetCount;
    public static final MethodHandle cuDeviceGet;
    public static final MethodHandle cuDeviceGetName;
    public static final MethodHandle cuDeviceGetUuid;
    public static final MethodHandle cuDeviceGetPCIBusId;
    public static final MethodHandle cuDeviceTotalMem;
    public static final MethodHandle cuDeviceGetAttribute;
    public static final MethodHandle cuDevicePrimaryCtxRetain;
    public static final MethodHandle cuDevicePrimaryCtxRelease;
    public static final MethodHandle cuCtxSetCurrent;
    public static final MethodHandle cuCtxGetCurrent;
    public static final MethodHandle cuCtxGetDevice;
    public static final MethodHandle cuCtxEnablePeerAccess;
    public static final MethodHandle cuDeviceCanAccessPeer;
    public static final MethodHandle cuMemAlloc;
    public static final MethodHandle cuMemFree;
    public static final MethodHandle cuMemHostAlloc;
    public static final MethodHandle cuMemFreeHost;
    public static final MethodHandle cuMemcpy;
    public static final MethodHandle cuMemcpyAsync;
    public static final MethodHandle cuMemsetD8;
    public static final MethodHandle cuMemGetInfo;
    public static final MethodHandle cuStreamCreate;
    public static final MethodHandle cuStreamSynchronize;
    public static final MethodHandle cuStreamDestroy;
    public static final MethodHandle cuEventCreate;
    public static final MethodHandle cuEventRecord;
    public static final MethodHandle cuEventSynchronize;
    public static final MethodHandle cuEventQuery;
    public static final MethodHandle cuEventElapsedTime;
    public static final MethodHandle cuEventDestroy;
    public static final MethodHandle cuPointerGetAttribute;
    private static final MethodHandle cuGetErrorName;

    private static final String FAILURE;
    private static final int DRIVER_VERSION;

    static {
        SymbolLookup lib = null;
        String failure = null;
        try {
            lib = CudaLinker.open("libcuda.so.1");
        } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
            failure = "no NVIDIA driver: libcuda.so.1 cannot be loaded (" + e.getMessage() + ")";
        }
        MethodHandle[] h = new MethodHandle[34];
        int version = 0;
        if (lib != null) {
            try {
                MethodHandle init = CudaLinker.downcall(lib, "cuInit", I_I);
                h[0] = CudaLinker.downcall(lib, "cuDriverGetVersion", I_P);
                h[1] = CudaLinker.downcall(lib, "cuDeviceGetCount", I_P);
                h[2] = CudaLinker.downcall(lib, "cuDeviceGet", I_PI);
                h[3] = CudaLinker.downcall(lib, "cuDeviceGetName", I_PII);
                h[4] = CudaLinker.firstDowncall(lib, I_PI, "cuDeviceGetUuid_v2", "cuDeviceGetUuid")
                        .orElseThrow(() -> new UnsatisfiedLinkError("symbol not found: cuDeviceGetUuid"));
                h[5] = CudaLinker.downcall(lib, "cuDeviceGetPCIBusId", I_PII);
                h[6] = CudaLinker.downcall(lib, "cuDeviceTotalMem_v2", I_PI);
                h[7] = CudaLinker.downcall(lib, "cuDeviceGetAttribute", I_PII);
                h[8] = CudaLinker.downcall(lib, "cuDevicePrimaryCtxRetain", I_PI);
                h[9] = CudaLinker.downcall(lib, "cuDevicePrimaryCtxRelease_v2", I_I);
                h[10] = CudaLinker.downcall(lib, "cuCtxSetCurrent", I_P);
                h[11] = CudaLinker.downcall(lib, "cuCtxGetCurrent", I_P);
                h[12] = CudaLinker.downcall(lib, "cuCtxGetDevice", I_P);
                h[13] = CudaLinker.downcall(lib, "cuCtxEnablePeerAccess", I_PI);
                h[14] = CudaLinker.downcall(lib, "cuDeviceCanAccessPeer", I_PII);
                h[15] = CudaLinker.downcall(lib, "cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
                h[16] = CudaLinker.downcall(lib, "cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
                h[17] = CudaLinker.downcall(
                        lib, "cuMemHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
                h[18] = CudaLinker.downcall(lib, "cuMemFreeHost", I_P);
                h[19] = CudaLinker.downcall(
                        lib, "cuMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
                h[20] = CudaLinker.downcall(
                        lib, "cuMemcpyAsync", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
                h[21] = CudaLinker.downcall(
                        lib, "cuMemsetD8_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_LONG));
                h[22] = CudaLinker.downcall(lib, "cuMemGetInfo_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
                h[23] = CudaLinker.downcall(lib, "cuStreamCreate", I_PI);
                h[24] = CudaLinker.downcall(lib, "cuStreamSynchronize", I_P);
                h[25] = CudaLinker.downcall(lib, "cuStreamDestroy_v2", I_P);
                h[26] = CudaLinker.downcall(lib, "cuEventCreate", I_PI);
                h[27] = CudaLinker.downcall(lib, "cuEventRecord", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
                h[28] = CudaLinker.downcall(lib, "cuEventSynchronize", I_P);
                h[29] = CudaLinker.downcall(lib, "cuEventQuery", I_P);
                h[30] = CudaLinker.downcall(
                        lib, "cuEventElapsedTime", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
                h[31] = CudaLinker.downcall(lib, "cuEventDestroy_v2", I_P);
                h[32] = CudaLinker.downcall(
                        lib, "cuPointerGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
                h[33] = CudaLinker.downcall(lib, "cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
                int rc = (int) init.invokeExact(0);
                if (rc == ERROR_NO_DEVICE) {
                    failure = "no GPU: the NVIDIA driver is installed but sees no CUDA device"
                            + " (CUDA_VISIBLE_DEVICES=" + System.getenv("CUDA_VISIBLE_DEVICES") + ")";
                } else if (rc == ERROR_INSUFFICIENT_DRIVER) {
                    failure = "NVIDIA driver too old for this CUDA (cuInit: CUDA_ERROR_INSUFFICIENT_DRIVER)";
                } else if (rc != SUCCESS) {
                    failure = "cuInit failed with CUresult " + rc;
                } else {
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment v = a.allocate(JAVA_INT);
                        int vr = (int) h[0].invokeExact(v);
                        version = vr == SUCCESS ? v.get(JAVA_INT, 0) : 0;
                        MemorySegment n = a.allocate(JAVA_INT);
                        int cr = (int) h[1].invokeExact(n);
                        if (version < MINIMUM_DRIVER_VERSION) {
                            failure = "NVIDIA driver too old: CUDA driver API " + versionText(version)
                                    + ", ucx4j-cuda needs " + versionText(MINIMUM_DRIVER_VERSION) + " or newer";
                        } else if (cr != SUCCESS || n.get(JAVA_INT, 0) == 0) {
                            failure = "no GPU: the NVIDIA driver sees no CUDA device";
                        }
                    }
                }
            } catch (UnsatisfiedLinkError e) {
                failure = "libcuda.so.1 lacks a function ucx4j-cuda needs (" + e.getMessage() + ")";
            } catch (Throwable t) {
                failure = "the CUDA driver failed to initialise: " + t;
            }
        }
        FAILURE = failure;
        DRIVER_VERSION = version;
        boolean ok = failure == null;
        cuDriverGetVersion = ok ? h[0] : null;
        cuDeviceGetCount = ok ? h[1] : null;
        cuDeviceGet = ok ? h[2] : null;
        cuDeviceGetName = ok ? h[3] : null;
        cuDeviceGetUuid = ok ? h[4] : null;
        cuDeviceGetPCIBusId = ok ? h[5] : null;
        cuDeviceTotalMem = ok ? h[6] : null;
        cuDeviceGetAttribute = ok ? h[7] : null;
        cuDevicePrimaryCtxRetain = ok ? h[8] : null;
        cuDevicePrimaryCtxRelease = ok ? h[9] : null;
        cuCtxSetCurrent = ok ? h[10] : null;
        cuCtxGetCurrent = ok ? h[11] : null;
        cuCtxGetDevice = ok ? h[12] : null;
        cuCtxEnablePeerAccess = ok ? h[13] : null;
        cuDeviceCanAccessPeer = ok ? h[14] : null;
        cuMemAlloc = ok ? h[15] : null;
        cuMemFree = ok ? h[16] : null;
        cuMemHostAlloc = ok ? h[17] : null;
        cuMemFreeHost = ok ? h[18] : null;
        cuMemcpy = ok ? h[19] : null;
        cuMemcpyAsync = ok ? h[20] : null;
        cuMemsetD8 = ok ? h[21] : null;
        cuMemGetInfo = ok ? h[22] : null;
        cuStreamCreate = ok ? h[23] : null;
        cuStreamSynchronize = ok ? h[24] : null;
        cuStreamDestroy = ok ? h[25] : null;
        cuEventCreate = ok ? h[26] : null;
        cuEventRecord = ok ? h[27] : null;
        cuEventSynchronize = ok ? h[28] : null;
        cuEventQuery = ok ? h[29] : null;
        cuEventElapsedTime = ok ? h[30] : null;
        cuEventDestroy = ok ? h[31] : null;
        cuPointerGetAttribute = ok ? h[32] : null;
        cuGetErrorName = h[33];
    }

    private CudaDriver() {}

    /**
     * Why the driver cannot be used, in one sentence.
     *
     * @return the reason, or null when the driver loaded, initialised and sees at least one device
     */
    public static String failure() {
        return FAILURE;
    }

    /**
     * The driver's CUDA API version.
     *
     * @return for example 13000 for CUDA 13.0; 0 when unknown
     */
    public static int driverVersion() {
        return DRIVER_VERSION;
    }

    /**
     * Throws unless the driver is usable.
     *
     * @throws CudaException with {@link #failure()}
     */
    public static void require() {
        if (FAILURE != null) {
            throw new CudaException("CUDA is not available: " + FAILURE);
        }
    }

    /**
     * Turns a {@code CUresult} into an exception unless it is {@code CUDA_SUCCESS}.
     *
     * @param result what the call returned
     * @param call the call and its arguments, for the message
     * @throws CudaException naming the call and the result's name
     */
    public static void check(int result, String call) {
        if (result != SUCCESS) {
            throw new CudaException(call + " failed: " + errorName(result) + " (" + result + ")", result);
        }
    }

    /**
     * The name of a {@code CUresult}.
     *
     * @param result the code
     * @return for example {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public static String errorName(int result) {
        if (cuGetErrorName == null) {
            return "CUresult " + result;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int rc = (int) cuGetErrorName.invokeExact(result, out);
            String name = rc == SUCCESS ? CudaLinker.cString(out.get(ADDRESS, 0)) : null;
            return name != null ? name : "CUresult " + result;
        } catch (Throwable t) {
            return "CUresult " + result;
        }
    }

    /**
     * A driver API version as text.
     *
     * @param version for example 13000
     * @return for example {@code 13.0}
     */
    public static String versionText(int version) {
        return (version / 1000) + "." + (version % 1000) / 10;
    }

    /**
     * Rethrows what a downcall threw: method handles declare {@code Throwable}, but these downcalls throw
     * only errors and unchecked exceptions.
     *
     * @param t what was thrown
     * @return never returns
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
