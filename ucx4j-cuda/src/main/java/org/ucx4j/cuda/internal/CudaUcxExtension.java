package org.ucx4j.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.spi.UcxExtension;

/**
 * ucx4j-cuda's hook into the core (found through {@link java.util.ServiceLoader}). Where CUDA is
 * available it applies {@code create-cuda-context} — the process's GPU (CUDA ordinal 0: the first of
 * {@code CUDA_VISIBLE_DEVICES}, which ucx4j's launcher rotates so that each worker's own GPU comes
 * first) gets its primary context made current before UCX initialises, and on every progress thread —
 * and it adds two of UCXX's three CUDA defaults ({@code RNDV_THRESH=8192},
 * {@code RNDV_FRAG_MEM_TYPE=cuda}) where the user has not set them. A context already current on another
 * GPU is kept, with a warning naming both. Where CUDA is not available it does nothing.
 *
 * <p>Why not UCXX's third, {@code MEMTYPE_CACHE=n}: measured on an H100 (docs/BENCHMARKS.md), it makes
 * UCX ask the driver about every buffer of every operation, host buffers included: cuda_ipc 2.3x slower
 * at 64 MiB and 4.8x at 1 MiB for ucx_perftest as for ucx4j, and ucx4j's host tag latency 1.5x slower on
 * a GPU machine. UCX's cache sees the {@code cuMemAlloc} of ucx4j's pool and devices; users of allocators
 * it does not intercept (stream-ordered {@code cudaMallocAsync}) set {@code UCX_MEMTYPE_CACHE=n} (docs/GPU.md).
 *
 * <p>Threading: safe from any thread; its one flag (whether UCX started without a GPU context) is volatile.
 */
public final class CudaUcxExtension implements UcxExtension {
    private static final Logger LOG = LoggerFactory.getLogger(CudaUcxExtension.class);
    private static volatile boolean ucxWithoutContext;

    /** The UCX defaults for GPU memory ucx4j applies where unset, UCX option names without {@code UCX_}. */
    public static final Map<String, String> CUDA_DEFAULTS = defaults();

    /** Public for {@link java.util.ServiceLoader}. */
    public CudaUcxExtension() {}

    private static Map<String, String> defaults() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("RNDV_THRESH", "8192");
        m.put("RNDV_FRAG_MEM_TYPE", "cuda");
        return java.util.Collections.unmodifiableMap(m);
    }

    @Override
    public Map<String, String> beforeContextInit(UcxConfig config) {
        if (!Cuda.isAvailable()) {
            return Map.of();
        }
        try {
            if (config.find(UcxKeys.CREATE_CUDA_CONTEXT).orElse(true)) {
                makeProcessGpuCurrent();
            } else if (!Cuda.device(0).hasContext()) {
                ucxWithoutContext = true;
            }
        } catch (RuntimeException e) {
            LOG.warn("cannot make the GPU's CUDA context current before UCX initialises", e);
        }
        return CUDA_DEFAULTS;
    }

    /**
     * Warns when a GPU context is created after UCX initialised without one (create-cuda-context false):
     * UCX may then have set up its CUDA transports without it.
     *
     * @param device the device whose context was just created
     */
    public static void contextCreated(CudaDevice device) {
        if (ucxWithoutContext) {
            LOG.warn(
                    "the CUDA context of {} was created after UCX initialised without one (create-cuda-context "
                            + "is false); create it first (CudaDevice.makeCurrent() before the first UcxContext)",
                    device);
        }
    }

    @Override
    public void onProgressThreadStart() {
        if (Cuda.isAvailable() && Cuda.device(0).hasContext()) {
            Cuda.device(0).makeCurrent();
        }
    }

    /**
     * Makes the process's GPU current on this thread unless a context of another GPU already is; warns
     * then, naming both.
     */
    static void makeProcessGpuCurrent() {
        CudaDevice gpu = Cuda.device(0);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ctx = a.allocate(ADDRESS);
            CudaDriver.check((int) CudaDriver.cuCtxGetCurrent.invokeExact(ctx), "cuCtxGetCurrent");
            if (!ctx.get(ADDRESS, 0).equals(MemorySegment.NULL)) {
                MemorySegment dev = a.allocate(JAVA_INT);
                CudaDriver.check((int) CudaDriver.cuCtxGetDevice.invokeExact(dev), "cuCtxGetDevice");
                int current = dev.get(JAVA_INT, 0);
                if (current != 0) {
                    LOG.warn(
                            "a CUDA context of {} is already current while UCX initialises; this process's GPU "
                                    + "is {} (CUDA_VISIBLE_DEVICES={}): UCX will use the current one",
                            Cuda.device(current),
                            gpu,
                            System.getenv("CUDA_VISIBLE_DEVICES"));
                    return;
                }
            }
        } catch (Throwable t) {
            throw CudaDriver.rethrow(t);
        }
        gpu.makeCurrent();
    }
}
