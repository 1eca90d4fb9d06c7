package org.ucx4j.internal.config;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The values one source gave (the builder, system properties, one family of environment variables,
 * one block of a YAML file), keyed by canonical path.
 *
 * <p>A strict layer (ucx4j's own sources) refuses the same key twice; a Dask layer keeps the first
 * spelling it was given, so that the documented spelling can be added before the older one.
 *
 * <p>Threading: filled by one thread while loading, then only read.
 */
public final class ConfigLayer {
    private final String name;
    private final boolean strict;
    private final Map<String, RawSetting> settings = new LinkedHashMap<>();

    /**
     * Creates an empty layer.
     *
     * @param name for logs, for example {@code env UCX4J__*}
     * @param strict whether unknown keys and duplicates are errors
     */
    public ConfigLayer(String name, boolean strict) {
        this.name = name;
        this.strict = strict;
    }

    /**
     * The layer's name.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * Whether unknown keys and duplicates are errors here.
     *
     * @return true for ucx4j's own sources
     */
    public boolean strict() {
        return strict;
    }

    /**
     * Adds one value.
     *
     * @param setting the value
     * @throws org.ucx4j.UcxConfigException when a strict layer already has the key
     */
    public void add(RawSetting setting) {
        RawSetting previous = settings.get(setting.path());
        if (previous == null) {
            settings.put(setting.path(), setting);
        } else if (strict) {
            throw ConfigErrors.duplicate(setting.path(), previous.origin(), setting.origin());
        }
    }

    /**
     * The value for a path.
     *
     * @param path a canonical key or {@code environment.<name>}
     * @return the value, or null when this layer does not set it
     */
    public RawSetting get(String path) {
        return settings.get(path);
    }

    /**
     * All values, in the order they were added.
     *
     * @return an unmodifiable view
     */
    public Collection<RawSetting> settings() {
        return Collections.unmodifiableCollection(settings.values());
    }
}
