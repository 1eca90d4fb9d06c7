package org.ucx4j.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * NVML ({@code libnvidia-ml.so.1}, installed with the NVIDIA driver), bound once: identity, memory in
 * use, CPU affinity and NVLink state of a GPU. NVML numbers GPUs by PCI bus, ignoring
 * {@code CUDA_VISIBLE_DEVICES}, so devices are found by their PCI bus id.
 *
 * <p>Loading: the first use opens the library and calls {@code nvmlInit_v2}; when that fails,
 * {@link #failure()} says why and every query returns nothing. NVML stays initialised for the life of the
 * JVM (its handles are cheap; {@code nvmlShutdown} would invalidate handles other code may hold).
 *
 * <p>Threading: NVML is thread-safe; so is this class.
 */
public final class Nvml {
    /** {@code NVML_NVLINK_MAX_LINKS} (nvml.h, driver 580). */
    public static final int MAX_LINKS = 18;

    private static final int SUCCESS = 0;

    private static final MethodHandle byPciBusId;
    private static final MethodHandle getCpuAffinity;
    private static final MethodHandle getMemoryInfo;
    private static final MethodHandle getNvLinkState;
    private static final MethodHandle getNvLinkRemotePciInfo;
    private static final MethodHandle errorString;
    private static final String FAILURE;

    static {
        String failure = null;
        MethodHandle[] h = new MethodHandle[6];
        try {
            SymbolLookup lib = CudaLinker.open("libnvidia-ml.so.1");
            MethodHandle init = CudaLinker.downcall(lib, "nvmlInit_v2", FunctionDescriptor.of(JAVA_INT));
            h[0] = CudaLinker.downcall(
                    lib, "nvmlDeviceGetHandleByPciBusId_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[1] = CudaLinker.downcall(
                    lib, "nvmlDeviceGetCpuAffinity", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            h[2] = CudaLinker.downcall(
                    lib, "nvmlDeviceGetMemoryInfo", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[3] = CudaLinker.downcall(
                    lib, "nvmlDeviceGetNvLinkState", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            h[4] = CudaLinker.downcall(
                    lib,
                    "nvmlDeviceGetNvLinkRemotePciInfo_v2",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            h[5] = CudaLinker.downcall(lib, "nvmlErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
            int rc = (int) init.invokeExact();
            if (rc != SUCCESS) {
                failure = "nvmlInit_v2 failed with nvmlReturn_t " + rc;
            }
        } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
            failure = "NVML unavailable: " + e.getMessage();
        } catch (Throwable t) {
            failure = "NVML failed to initialise: " + t;
        }
        FAILURE = failure;
        boolean ok = failure == null;
        byPciBusId = ok ? h[0] : null;
        getCpuAffinity = ok ? h[1] : null;
        getMemoryInfo = ok ? h[2] : null;
        getNvLinkState = ok ? h[3] : null;
        getNvLinkRemotePciInfo = ok ? h[4] : null;
        errorString = ok ? h[5] : null;
    }

    private Nvml() {}

    /**
     * Why NVML cannot be used.
     *
     * @return the reason, or null when it is usable
     */
    public static String failure() {
        return FAILURE;
    }

    /** What NVML says of one GPU; empty fields where NVML could not say. */
    public record GpuFacts(
            BitSet cpuAffinity,
            long memoryUsed,
            long memoryTotal,
            int activeNvLinks,
            List<String> nvLinkRemoteBusIds,
            String problem) {}

    /**
     * Queries one GPU by PCI bus id.
     *
     * @param pciBusId as CUDA prints it, {@code 0000:18:00.0}
     * @return the facts; {@code problem} says what could not be read (null when all could)
     */
    public static GpuFacts query(String pciBusId) {
        if (FAILURE != null) {
            return new GpuFacts(new BitSet(), -1, -1, 0, List.of(), FAILURE);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dev = a.allocate(ADDRESS);
            int rc = (int) byPciBusId.invokeExact(a.allocateFrom(pciBusId), dev);
            if (rc != SUCCESS) {
                return new GpuFacts(
                        new BitSet(),
                        -1,
                        -1,
                        0,
                        List.of(),
                        "nvmlDeviceGetHandleByPciBusId_v2(" + pciBusId + "): " + error(rc));
            }
            MemorySegment handle = dev.get(ADDRESS, 0);
            String problem = null;
            int words = 16; // 1,024 CPUs
            MemorySegment mask = a.allocate(JAVA_LONG, words);
            BitSet cpus = new BitSet();
            rc = (int) getCpuAffinity.invokeExact(handle, words, mask);
            if (rc == SUCCESS) {
                cpus = BitSet.valueOf(mask.toArray(JAVA_LONG));
            } else {
                problem = "nvmlDeviceGetCpuAffinity: " + error(rc);
            }
            MemorySegment mem = a.allocate(JAVA_LONG, 3); // nvmlMemory_t {total, free, used}
            long used = -1;
            long total = -1;
            rc = (int) getMemoryInfo.invokeExact(handle, mem);
            if (rc == SUCCESS) {
                total = mem.getAtIndex(JAVA_LONG, 0);
                used = mem.getAtIndex(JAVA_LONG, 2);
            } else if (problem == null) {
                problem = "nvmlDeviceGetMemoryInfo: " + error(rc);
            }
            int active = 0;
            List<String> remotes = new ArrayList<>();
            MemorySegment state = a.allocate(JAVA_INT);
            MemorySegment pci = a.allocate(68); // nvmlPciInfo_t; busId at offset 36 (char[32])
            for (int link = 0; link < MAX_LINKS; link++) {
                rc = (int) getNvLinkState.invokeExact(handle, link, state);
                if (rc != SUCCESS || state.get(JAVA_INT, 0) == 0) {
                    continue;
                }
                active++;
                rc = (int) getNvLinkRemotePciInfo.invokeExact(handle, link, pci);
                if (rc == SUCCESS) {
                    remotes.add(PciBusId.normalize(pci.getString(36)));
                }
            }
            return new GpuFacts(cpus, used, total, active, List.copyOf(remotes), problem);
        } catch (Throwable t) {
            return new GpuFacts(new BitSet(), -1, -1, 0, List.of(), "NVML query failed: " + t);
        }
    }

    private static String error(int rc) {
        try {
            String s = CudaLinker.cString((MemorySegment) errorString.invokeExact(rc));
            return (s != null ? s : "error") + " (" + rc + ")";
        } catch (Throwable t) {
            return "nvmlReturn_t " + rc;
        }
    }
}
