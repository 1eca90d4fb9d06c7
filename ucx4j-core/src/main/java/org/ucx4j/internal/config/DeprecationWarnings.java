package org.ucx4j.internal.config;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs each deprecated (legacy Dask) key at most once per process.
 *
 * <p>Why global state: the promise is "once per key per process", however many configurations
 * are loaded; a per-config flag would repeat the warning on every load.
 *
 * <p>Threading: safe from any thread; the first caller for a key logs, later callers do not.
 */
public final class DeprecationWarnings {
    private static final Logger LOG = LoggerFactory.getLogger(DeprecationWarnings.class);
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    private static volatile BiConsumer<String, String> observer;

    private DeprecationWarnings() {
    }

    /**
     * Logs a warning for a legacy key, unless one was already logged for it in this process.
     *
     * @param legacyKey the legacy key, for example {@code distributed.comm.ucx.tcp}
     * @param message the full warning, naming the key to use instead
     * @return true when this call logged
     */
    public static boolean warnOnce(String legacyKey, String message) {
        if (!WARNED.add(legacyKey)) {
            return false;
        }
        LOG.warn(message);
        BiConsumer<String, String> o = observer;
        if (o != null) {
            o.accept(legacyKey, message);
        }
        return true;
    }

    /**
     * Test hook: receives every warning actually logged (key and message), or stops when null.
     *
     * @param newObserver the observer, or null
     */
    public static void observeForTesting(BiConsumer<String, String> newObserver) {
        observer = newObserver;
    }

    /** Test hook: forgets which keys were warned about. */
    public static void resetForTesting() {
        WARNED.clear();
    }
}
