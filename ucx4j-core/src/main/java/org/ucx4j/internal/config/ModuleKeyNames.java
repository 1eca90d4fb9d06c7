package org.ucx4j.internal.config;

import java.util.Map;
import java.util.Optional;

/**
 * The names that ucx4j's other modules own, so that the core can tell a key of a module that is not on
 * the path (ignored with a warning: one {@code ucx4j.yaml} serves applications with different sets of
 * modules) from a misspelt key (an error).
 *
 * <p>Registering a key of a ucx4j module that is not listed here under that module fails, so a key
 * added to a module without an entry here breaks that module's tests.
 *
 * <p>Threading: immutable constants.
 */
public final class ModuleKeyNames {
    /** A key name, or a group that covers the keys below it, to the module that owns it. */
    public static final Map<String, String> OWNERS = Map.ofEntries(
            Map.entry("multi-buffer", "ucx4j-comm"),
            Map.entry("max-frames", "ucx4j-comm"),
            Map.entry("max-frame-size", "ucx4j-comm"),
            Map.entry("max-message-size", "ucx4j-comm"),
            Map.entry("max-in-flight", "ucx4j-comm"),
            Map.entry("max-in-flight-per-listener", "ucx4j-comm"),
            Map.entry("max-pending-handshakes", "ucx4j-comm"),
            Map.entry("max-pending-handshakes-per-source", "ucx4j-comm"),
            Map.entry("handshake-eviction-age", "ucx4j-comm"),
            Map.entry("max-unclosed-bytes", "ucx4j-comm"),
            Map.entry("same-host-shared-memory", "ucx4j-comm"),
            Map.entry("auth", "ucx4j-comm"),
            Map.entry("memory-pool", "ucx4j-cuda"),
            Map.entry("device-memory-limit", "ucx4j-cuda"),
            Map.entry("memory-limit", "ucx4j-cuda"),
            Map.entry("local-directory", "ucx4j-cuda"),
            Map.entry("log-spilling", "ucx4j-cuda"));

    private ModuleKeyNames() {}

    /**
     * The module owning a path: the path is an owned name, lies below one, or is a group above one.
     *
     * @param path a normalised dotted path, for example {@code auth.secret} or {@code memory-pool}
     * @return the module, or empty when no other module owns the name
     */
    public static Optional<String> owner(String path) {
        return OWNERS.entrySet().stream()
                .filter(e -> path.equals(e.getKey())
                        || path.startsWith(e.getKey() + ".")
                        || e.getKey().startsWith(path + "."))
                .map(Map.Entry::getValue)
                .findFirst();
    }
}
