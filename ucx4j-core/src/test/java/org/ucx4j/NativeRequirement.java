package org.ucx4j;

import org.junit.jupiter.api.Assumptions;

/**
 * Native tests call {@link #assumeUcx()}: without UCX they skip, unless {@code UCX4J_REQUIRE_NATIVE=1}
 * (as in CI), where a missing UCX fails the test instead, so a green run proves the native path ran.
 */
public final class NativeRequirement {
    private NativeRequirement() {}

    /** Skips (or, when native tests are required, fails) unless UCX is available. */
    public static void assumeUcx() {
        if (Ucx.isAvailable()) {
            return;
        }
        if (required()) {
            throw new AssertionError("UCX4J_REQUIRE_NATIVE=1 but UCX is unavailable", Ucx.unavailabilityCause());
        }
        Assumptions.abort("UCX is unavailable: " + Ucx.unavailabilityCause().getMessage());
    }

    /** Whether native tests must run. */
    public static boolean required() {
        String v = System.getenv("UCX4J_REQUIRE_NATIVE");
        return v != null && (v.equals("1") || v.equalsIgnoreCase("true"));
    }
}
