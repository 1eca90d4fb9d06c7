package org.ucx4j;

import java.util.List;
import java.util.Map;
import org.ucx4j.internal.UcxLibrary;

/**
 * Entry point: whether UCX can be used in this JVM, which library was loaded and why others were not.
 * Loading happens once, on the first call to any method here or on the first {@link UcxContext}.
 *
 * <p>Why a facade: the binding is pure Java over whatever {@code libucp.so} is installed, so "UCX is
 * missing" is a normal state to ask about, not a crash. Ask {@link #isAvailable()} to choose a fallback
 * transport, or {@link #ensureAvailable()} to fail with a message that says what was tried and how to
 * install UCX.
 *
 * <p>Threading: every method is safe from any thread; results never change once computed.
 */
public final class Ucx {
    private Ucx() {}

    /**
     * Prepares UCX's process-wide options from a configuration, then loads UCX. The configuration's
     * global options (those libucs reads when it loads, such as {@code LOG_LEVEL}) can only take effect
     * before the first load: call this first thing when a configuration sets any. Contexts built with
     * {@link UcxContext.Builder#config} do the same on their own.
     *
     * @param config the configuration whose global options to apply
     * @return whether UCX is available
     * @throws IllegalStateException when UCX is already loaded and the configuration asks for a global
     *     option it was not loaded with (the message names the option and how to set it instead)
     */
    public static boolean configure(UcxConfig config) {
        UcxContext.prepareGlobals(config);
        return isAvailable();
    }

    /**
     * Sends UCX's own log (its warnings and errors) to stderr instead of UCX's default, stdout, by setting
     * {@code UCX_LOG_FILE=stderr} before UCX loads. For programs whose stdout is data, such as the
     * {@code ucx4j} command line's {@code --json} output. A {@code UCX_LOG_FILE} in the process
     * environment, or a configuration's {@code environment.log-file}, still wins.
     *
     * <p>Threading: call once, first thing, before anything loads UCX (this class's other methods, a
     * {@link UcxContext}).
     *
     * @throws IllegalStateException when UCX is already loaded in this JVM
     */
    public static void logToStderr() {
        UcxLibrary.requestGlobalDefault("LOG_FILE", "stderr");
    }

    /**
     * Whether UCX loaded.
     *
     * @return true when a supported {@code libucp} was found and loaded
     */
    public static boolean isAvailable() {
        return UcxLibrary.state().library() != null;
    }

    /**
     * Why UCX is unavailable.
     *
     * @return the error that explains what was tried and how to install UCX, or null when available
     */
    public static Throwable unavailabilityCause() {
        return UcxLibrary.state().failure();
    }

    /**
     * Throws when UCX is unavailable.
     *
     * @throws UnsatisfiedLinkError with every candidate tried and install instructions
     */
    public static void ensureAvailable() {
        UcxLibrary.require();
    }

    /**
     * The loaded UCX version.
     *
     * @return for example {@code 1.13.1}
     * @throws UnsatisfiedLinkError when UCX is unavailable
     */
    public static String version() {
        return UcxLibrary.require().version();
    }

    /**
     * The file the library was loaded from.
     *
     * @return an absolute path to {@code libucp.so*}
     * @throws UnsatisfiedLinkError when UCX is unavailable
     */
    public static String libraryPath() {
        return UcxLibrary.require().path();
    }

    /**
     * How the library was found ({@code -Ducx4j.ucx.library}, {@code UCX4J_UCX_LIBRARY}, {@code system
     * loader} or {@code usual prefix}).
     *
     * @return the origin of the loaded library
     * @throws UnsatisfiedLinkError when UCX is unavailable
     */
    public static String libraryOrigin() {
        return UcxLibrary.require().origin();
    }

    /**
     * Every candidate looked at, in order, with what happened: one line each, for diagnostics.
     *
     * @return lines such as {@code libucp.so.0 (system loader): loaded /usr/lib/...}
     */
    public static List<String> loadAttempts() {
        UcxLibrary lib = UcxLibrary.state().library();
        if (lib == null) {
            return List.of(UcxLibrary.state().failure().getMessage().split("\n"));
        }
        return lib.attempts().stream()
                .map(a -> a.candidate() + " (" + a.origin() + "): " + a.outcome())
                .toList();
    }

    /**
     * The {@code UCX_*} environment variables ucx4j set before loading UCX (variables the user set are
     * left alone and not listed).
     *
     * @return variable name to value
     */
    public static Map<String, String> presetEnvironment() {
        UcxLibrary lib = UcxLibrary.state().library();
        return lib == null ? Map.of() : lib.environment();
    }
}
