package org.ucx4j.spi;

import java.util.Map;
import org.ucx4j.UcxConfig;

/**
 * A hook that a module on the class or module path gives the core, found with {@link java.util.ServiceLoader}:
 * ucx4j-cuda uses it to make the process's GPU context current before UCX initialises and on every
 * progress thread, and to add its CUDA defaults. Applications do not implement it.
 *
 * <p>Threading: the core calls {@link #beforeContextInit} on the thread that builds a
 * {@code UcxContext}, and {@link #onProgressThreadStart} on each worker's progress thread before it
 * first calls UCX. Implementations must be thread-safe and must not throw: a failure is theirs to log.
 */
public interface UcxExtension {
    /**
     * Called before {@code ucp_init} of every context.
     *
     * @param config the context's configuration
     * @return UCX context options (names without {@code UCX_}) to apply where neither the configuration,
     *     the context builder nor a {@code UCX_*} environment variable sets them; an option the loaded UCX
     *     does not know is skipped
     */
    default Map<String, String> beforeContextInit(UcxConfig config) {
        return Map.of();
    }

    /** Called on each worker's progress thread when it starts, before its first UCX call. */
    default void onProgressThreadStart() {}
}
