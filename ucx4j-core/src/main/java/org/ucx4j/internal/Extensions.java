package org.ucx4j.internal;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfig;
import org.ucx4j.spi.UcxExtension;

/**
 * The {@link UcxExtension}s on the path, found once (like the loaded library, a fact of the process).
 *
 * <p>Threading: immutable after class initialisation; safe from any thread.
 */
public final class Extensions {
    private static final Logger LOG = LoggerFactory.getLogger(Extensions.class);
    private static final List<UcxExtension> ALL = ServiceLoader.load(UcxExtension.class).stream()
            .map(ServiceLoader.Provider::get)
            .toList();

    private Extensions() {}

    /**
     * Runs every extension's {@link UcxExtension#beforeContextInit}.
     *
     * @param config the context's configuration
     * @return the default UCX options they ask for, first extension first
     */
    public static Map<String, String> beforeContextInit(UcxConfig config) {
        Map<String, String> defaults = new LinkedHashMap<>();
        for (UcxExtension e : ALL) {
            try {
                e.beforeContextInit(config).forEach(defaults::putIfAbsent);
            } catch (Throwable ex) { // an extension must never stop a context from being built
                LOG.warn(
                        "ucx4j extension {} failed before UCX initialised",
                        e.getClass().getName(),
                        ex);
            }
        }
        return defaults;
    }

    /** Runs every extension's {@link UcxExtension#onProgressThreadStart}. */
    public static void onProgressThreadStart() {
        for (UcxExtension e : ALL) {
            try {
                e.onProgressThreadStart();
            } catch (Throwable ex) { // nor a progress thread from running
                LOG.warn(
                        "ucx4j extension {} failed on a progress thread",
                        e.getClass().getName(),
                        ex);
            }
        }
    }
}
