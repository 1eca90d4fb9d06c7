package org.ucx4j.comm;

import org.junit.jupiter.api.Assumptions;
import org.ucx4j.Ucx;

/**
 * UCX tests skip without UCX, except with {@code UCX4J_REQUIRE_NATIVE=1} (CI), where that is a failure.
 * (Core's test classes are not visible here: this module's tests are patched into its named module.)
 */
public final class NativeUcxAccess {
    private NativeUcxAccess() {}

    public static void require() {
        if (Ucx.isAvailable()) {
            return;
        }
        String v = System.getenv("UCX4J_REQUIRE_NATIVE");
        if ("1".equals(v) || "true".equalsIgnoreCase(v)) {
            throw new AssertionError("UCX4J_REQUIRE_NATIVE=1 but UCX is unavailable", Ucx.unavailabilityCause());
        }
        Assumptions.abort("UCX is unavailable: " + Ucx.unavailabilityCause().getMessage());
    }
}
