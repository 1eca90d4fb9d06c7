package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.ucx4j.Ucx;

/**
 * GPU tests call {@link #assumeGpu()}: without a usable GPU they skip, unless {@code UCX4J_REQUIRE_GPU=1}
 * (the GPU machine's run), where that is a failure. Tests that also move data with UCX call
 * {@link #assumeGpuAndUcx()}, which requires UCX under {@code UCX4J_REQUIRE_NATIVE=1} likewise.
 */
final class GpuRequirement {
    private GpuRequirement() {}

    static void assumeGpu() {
        if (!Cuda.isAvailable()) {
            if ("1".equals(System.getenv("UCX4J_REQUIRE_GPU"))) {
                throw new AssertionError("UCX4J_REQUIRE_GPU=1 but " + Cuda.unavailabilityReason().orElse("no GPU"));
            }
            assumeTrue(false, "no GPU: " + Cuda.unavailabilityReason().orElse(""));
        }
    }

    static void assumeGpuAndUcx() {
        assumeGpu();
        if (!Ucx.isAvailable()) {
            if ("1".equals(System.getenv("UCX4J_REQUIRE_NATIVE")) || "1".equals(System.getenv("UCX4J_REQUIRE_GPU"))) {
                throw new AssertionError("UCX is required but unavailable", Ucx.unavailabilityCause());
            }
            assumeTrue(false, "no UCX");
        }
    }
}
