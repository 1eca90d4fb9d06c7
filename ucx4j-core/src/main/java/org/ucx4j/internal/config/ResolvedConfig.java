package org.ucx4j.internal.config;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The outcome of loading: every key's effective value and source, the {@code environment} map's
 * entries, the process's own {@code UCX_*} variables (which win over that map), and the YAML file
 * that was read, if any.
 *
 * <p>Threading: immutable.
 *
 * @param values every key of {@link ConfigKey#ALL}, in that order
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
        for (ConfigKey<?> key : ConfigKey.ALL) {
            Objects.requireNonNull(values.get(key), key.name());
        }
    }

    /**
     * One key's effective value.
     *
     * @param key the key
     * @param <T> its type
     * @return the value, or null when unset
     */
    @SuppressWarnings("unchecked")
    public <T> T value(ConfigKey<T> key) {
        return (T) values.get(key).value();
    }

    /**
     * One key's source.
     *
     * @param key the key
     * @return where its value came from
     */
    public ConfigOrigin origin(ConfigKey<?> key) {
        return values.get(key).origin();
    }
}
