package org.ucx4j.cuda;

import org.ucx4j.testsupport.Requirements;

/**
 * GPU tests call {@link #assumeGpu()}: without a usable GPU they skip, unless {@code UCX4J_REQUIRE_GPU=1}
 * (the GPU machine's run), where that is a failure ({@link Requirements}, the project's one guard).
 */
final class GpuRequirement {
    private GpuRequirement() {}

    static void assumeGpu() {
        Requirements.assume(
                "a CUDA GPU",
                Cuda.isAvailable(),
                Cuda.unavailabilityReason().orElse("no GPU"),
                Requirements.REQUIRE_GPU);
    }

    static void assumeGpuAndUcx() {
        assumeGpu();
        Requirements.assumeUcx();
    }
}
