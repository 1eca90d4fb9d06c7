package org.ucx4j.internal.config;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Reads {@code -Ducx4j.<key>=<value>} system properties: {@code -Ducx4j.tcp=true},
 * {@code -Ducx4j.memory-pool.size=1GB}, {@code -Ducx4j.environment.some-key=v}.
 *
 * <p>Every {@code ucx4j.*} property must be a known key, except the {@link #RESERVED} ones that
 * other parts of ucx4j read. {@code none} means null, as in environment variables.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class SystemPropertyReader {
    /** The property prefix. */
    public static final String PREFIX = "ucx4j.";
    /** The config file to read instead of searching ({@code UCX4J_CONFIG} as a property). */
    public static final String CONFIG_FILE_PROPERTY = "ucx4j.config";
    /**
     * {@code ucx4j.*} properties that are not configuration keys: the config file itself and the UCX
     * library path, which the native loader reads before any configuration exists.
     */
    public static final Set<String> RESERVED = Set.of(CONFIG_FILE_PROPERTY, "ucx4j.ucx.library");
    /**
     * {@code ucx4j.*} namespaces of tools rather than of the library's configuration (the command line's
     * {@code -Ducx4j.cli.trace}, say): never configuration keys, so never "unknown key" errors.
     */
    public static final Set<String> RESERVED_PREFIXES = Set.of("ucx4j.cli.", "ucx4j.bench.");

    private SystemPropertyReader() {}

    /**
     * Reads the {@code ucx4j.*} properties.
     *
     * @param properties a snapshot of the system properties (injected for tests)
     * @param schema the registered keys
     * @return the layer
     * @throws org.ucx4j.UcxConfigException for unknown keys
     */
    public static ConfigLayer read(Map<String, String> properties, ConfigSchema schema) {
        ConfigLayer layer = new ConfigLayer("system properties ucx4j.*", true);
        for (Map.Entry<String, String> e : new TreeMap<>(properties).entrySet()) {
            String name = e.getKey();
            if (!name.startsWith(PREFIX)
                    || RESERVED.contains(name)
                    || RESERVED_PREFIXES.stream().anyMatch(name::startsWith)) {
                continue;
            }
            String path = ConfigSchema.normalize(name.substring(PREFIX.length()));
            ConfigNamespace.UCX4J.accept(
                    layer, schema, path, LiteralValues.noneToNull(e.getValue()), e.getValue(), "-D" + name);
        }
        return layer;
    }
}
