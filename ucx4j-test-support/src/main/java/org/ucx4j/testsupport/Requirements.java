package org.ucx4j.testsupport;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import org.junit.jupiter.api.Assumptions;

/**
 * The one "skip, or fail when required" guard of ucx4j's tests. A test that needs something the machine
 * may lack (UCX, a GPU, Spark) calls {@link #assume} first: without it the test is skipped, unless the
 * environment variable named by the caller is {@code 1} or {@code true} (CI sets
 * {@code UCX4J_REQUIRE_NATIVE=1}, a GPU machine {@code UCX4J_REQUIRE_GPU=1}); then the test fails
 * instead, so a green run proves the guarded path ran.
 *
 * <p>Usage: {@code Requirements.assumeUcx();} for UCX;
 * {@code Requirements.assume("a CUDA GPU", Cuda.isAvailable(), Cuda.unavailabilityCause(),
 * Requirements.REQUIRE_GPU);} for anything else.
 *
 * <p>Threading: stateless; safe from any thread.
 */
public final class Requirements {
    /** The variable that turns a skipped UCX ("native") test into a failure. */
    public static final String REQUIRE_NATIVE = "UCX4J_REQUIRE_NATIVE";

    /** The variable that turns a skipped GPU test into a failure. */
    public static final String REQUIRE_GPU = "UCX4J_REQUIRE_GPU";

    /**
     * Set to {@code 1} to make tests that need a UCXX peer (Python with {@code ucxx-cu13}) fail instead of
     * skipping without one (CI installs it).
     */
    public static final String REQUIRE_UCXX = "UCX4J_REQUIRE_UCXX";

    private Requirements() {}

    /**
     * Returns when {@code available}; otherwise skips the calling test, or fails it when
     * {@code requireEnvVar} is set to {@code 1} or {@code true}.
     *
     * @param what what the test needs, for the message (e.g. {@code "UCX"}, {@code "a CUDA GPU"})
     * @param available whether it is there
     * @param reasonWhenNot why it is not there (ignored when available)
     * @param requireEnvVar the environment variable that makes it required (e.g. {@link #REQUIRE_GPU})
     * @throws org.opentest4j.TestAbortedException when not available and not required (the test is skipped)
     * @throws AssertionError when not available but required
     */
    public static void assume(String what, boolean available, String reasonWhenNot, String requireEnvVar) {
        if (!available) {
            unavailable(what, reasonWhenNot, null, requireEnvVar);
        }
    }

    /**
     * Like {@link #assume(String, boolean, String, String)}, with the exception that says why (its message
     * is the reason; a failure carries it as its cause).
     *
     * @param what what the test needs, for the message
     * @param available whether it is there
     * @param causeWhenNot why it is not there (ignored when available; may be null)
     * @param requireEnvVar the environment variable that makes it required
     */
    public static void assume(String what, boolean available, Throwable causeWhenNot, String requireEnvVar) {
        if (!available) {
            String reason = causeWhenNot == null ? "no reason given" : String.valueOf(causeWhenNot.getMessage());
            unavailable(what, reason, causeWhenNot, requireEnvVar);
        }
    }

    /**
     * Skips the calling test without UCX, or fails it when {@code UCX4J_REQUIRE_NATIVE=1}. Asks
     * {@code org.ucx4j.Ucx} of the test's class path (this module cannot depend on ucx4j-core, whose tests
     * depend on it).
     */
    public static void assumeUcx() {
        boolean available;
        Throwable cause;
        try {
            Class<?> ucx = Class.forName("org.ucx4j.Ucx");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            MethodHandle isAvailable = lookup.findStatic(ucx, "isAvailable", MethodType.methodType(boolean.class));
            MethodHandle whyNot = lookup.findStatic(ucx, "unavailabilityCause", MethodType.methodType(Throwable.class));
            available = (boolean) isAvailable.invokeExact();
            cause = available ? null : (Throwable) whyNot.invokeExact();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("assumeUcx needs ucx4j-core (org.ucx4j.Ucx) on the test class path", e);
        } catch (Throwable e) {
            throw new IllegalStateException("asking org.ucx4j.Ucx whether UCX is available failed", e);
        }
        assume("UCX", available, cause, REQUIRE_NATIVE);
    }

    /**
     * Whether the tests guarded by {@code requireEnvVar} must run.
     *
     * @param requireEnvVar e.g. {@link #REQUIRE_NATIVE}
     * @return true when the variable is {@code 1} or {@code true}
     */
    public static boolean required(String requireEnvVar) {
        String v = System.getenv(requireEnvVar);
        return v != null && (v.equals("1") || v.equalsIgnoreCase("true"));
    }

    private static void unavailable(String what, String reason, Throwable cause, String requireEnvVar) {
        if (required(requireEnvVar)) {
            throw new AssertionError(requireEnvVar + "=1 but " + what + " is unavailable: " + reason, cause);
        }
        Assumptions.abort(what + " is unavailable: " + reason);
    }
}
