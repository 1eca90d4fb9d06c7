package org.ucx4j.internal.config;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.ucx4j.ConfigKey;

/**
 * The outcome of loading: every key's effective value and source, the {@code environment} map's
 * entries, the process's own {@code UCX_*} variables (which win over that map), and the YAML file
 * that was read, if any.
 *
 * <p>Threading: immutable.
 *
 * @param values every registered key, in documentation order (the core's keys, then each module's)
 * @param environment the effective {@code environment} entries by normalised name, sorted
 * @param ucxVariables the process environment's {@code UCX_*} variables at load time
 * @param configFile the YAML file read, or null when none was found
 */
public record ResolvedConfig(
        Map<ConfigKey<?>, ResolvedValue> values,
        SortedMap<String, ResolvedValue> environment,
        Map<String, String> ucxVariables,
        Path configFile) {
    /**
     * Copies the maps.
     *
     * @param values the values
     * @param environment the entries
     * @param ucxVariables the {@code UCX_*} variables
     * @param configFile the file or null
     */
    public ResolvedConfig {
        values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
        environment = Collections.unmodifiableSortedMap(new TreeMap<>(environment));
        ucxVariables = Map.copyOf(ucxVariables);
    }

    /**
     * One key's effective value.
     *
     * @param key the key
     * @param <T> its type
     * @return the value, or null when unset
     * @throws IllegalArgumentException when the key is not registered
     */
    public <T> T value(ConfigKey<T> key) {
        return key.type().cast(resolved(key).value());
    }

    /**
     * One key's source.
     *
     * @param key the key
     * @return where its value came from
     * @throws IllegalArgumentException when the key is not registered
     */
    public ConfigOrigin origin(ConfigKey<?> key) {
        return resolved(key).origin();
    }

    private ResolvedValue resolved(ConfigKey<?> key) {
        ResolvedValue v = values.get(key);
        if (v == null) {
            throw new IllegalArgumentException(
                    "configuration key '" + key + "' is not registered: its module provides "
                            + "it as an org.ucx4j.spi.ConfigKeySet (module-info provides, or META-INF/services on the class path)");
        }
        return v;
    }
}
