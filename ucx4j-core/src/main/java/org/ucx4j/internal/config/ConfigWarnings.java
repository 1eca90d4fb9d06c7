package org.ucx4j.internal.config;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs each configuration warning at most once per process: a deprecated (legacy Dask) key read, or a
 * key of a ucx4j module that is not on the path ignored.
 *
 * <p>Why global state: the promise is "once per key per process", however many configurations
 * are loaded (every {@code CommOptions} loads one); a per-config flag would repeat the warning on every load.
 *
 * <p>Threading: safe from any thread; the first caller for a key logs, later callers do not.
 */
public final class ConfigWarnings {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigWarnings.class);
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    private static volatile BiConsumer<String, String> observer;

    private ConfigWarnings() {}

    /**
     * Logs a warning about a key, unless one was already logged for it in this process.
     *
     * @param legacyKey what the warning is about, for example the legacy key {@code distributed.comm.ucx.tcp}
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
