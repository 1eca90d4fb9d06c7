package org.ucx4j.internal.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Reads one namespace from environment variables, the way Dask does: after the prefix,
 * {@code __} nests, {@code _} and {@code -} are the same, names are case-insensitive, and the
 * values {@code none} (or {@code null}, or empty) mean null.
 *
 * <p>{@code UCX4J__MEMORY_POOL__SIZE=1GB} sets {@code memory-pool.size};
 * {@code DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE=1GB} sets it through Dask's spelling.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class EnvironmentVariableReader {
    private EnvironmentVariableReader() {}

    /**
     * Reads the variables of one namespace.
     *
     * @param environment the process environment (injected, so tests need not touch the real one)
     * @param namespace the namespace, which gives the prefix
     * @param schema the registered keys
     * @return the layer, values in variable-name order
     * @throws org.ucx4j.UcxConfigException for unknown keys in a strict namespace, or one key set
     *     by two spellings of a variable there
     */
    public static ConfigLayer read(Map<String, String> environment, ConfigNamespace namespace, ConfigSchema schema) {
        ConfigLayer layer = new ConfigLayer("env " + namespace.envPrefix() + "*", namespace.strict());
        // Sorted, so that which of two clashing spellings is reported (or kept) does not depend on hash order.
        for (Map.Entry<String, String> e : new TreeMap<>(environment).entrySet()) {
            String name = e.getKey();
            String upper = name.toUpperCase(Locale.ROOT);
            if (!upper.startsWith(namespace.envPrefix())
                    || upper.length() == namespace.envPrefix().length()) {
                continue;
            }
            String path = Arrays.stream(
                            name.substring(namespace.envPrefix().length()).split("__", -1))
                    .map(ConfigSchema::normalize)
                    .collect(Collectors.joining("."));
            namespace.accept(layer, schema, path, LiteralValues.noneToNull(e.getValue()), e.getValue(), "env " + name);
        }
        return layer;
    }
}
