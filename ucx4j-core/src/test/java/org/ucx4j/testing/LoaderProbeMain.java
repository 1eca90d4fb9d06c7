package org.ucx4j.testing;

import java.util.Map;
import org.ucx4j.Ucx;
import org.ucx4j.internal.Libc;

/**
 * Child JVM for {@code UcxLibraryLoaderTest}: loads UCX the way this JVM was told to and prints what
 * happened as {@code key=value} lines, then the unavailability message between {@code CAUSE-BEGIN} and
 * {@code CAUSE-END}.
 */
public final class LoaderProbeMain {
    private LoaderProbeMain() {}

    public static void main(String[] args) {
        boolean available = Ucx.isAvailable();
        System.out.println("available=" + available);
        if (available) {
            System.out.println("origin=" + Ucx.libraryOrigin());
            System.out.println("path=" + Ucx.libraryPath());
            System.out.println("version=" + Ucx.version());
            Map<String, String> preset = Ucx.presetEnvironment();
            System.out.println("preset=" + preset);
            System.out.println("preset.UCX_ERROR_SIGNALS="
                    + (preset.containsKey("UCX_ERROR_SIGNALS")
                            ? "'" + preset.get("UCX_ERROR_SIGNALS") + "'"
                            : "<absent>"));
            String env = Libc.getenv("UCX_ERROR_SIGNALS");
            System.out.println("getenv.UCX_ERROR_SIGNALS=" + (env == null ? "<null>" : "'" + env + "'"));
        } else {
            Throwable cause = Ucx.unavailabilityCause();
            System.out.println("causeType=" + cause.getClass().getName());
            System.out.println("CAUSE-BEGIN");
            System.out.println(cause.getMessage());
            System.out.println("CAUSE-END");
            for (Throwable c = cause.getCause(); c != null; c = c.getCause()) {
                System.out.println("nestedCause=" + c);
            }
        }
        System.out.flush();
    }
}
