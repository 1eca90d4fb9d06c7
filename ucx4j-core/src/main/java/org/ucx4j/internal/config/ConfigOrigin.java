package org.ucx4j.internal.config;

import java.util.Objects;

/**
 * Where one configuration value came from.
 *
 * <p>Threading: an immutable value.
 *
 * @param description for people and error messages: {@code default}, {@code builder},
 *     {@code -Ducx4j.tcp}, {@code env UCX4J__TCP}, {@code /etc/ucx4j/ucx4j.yaml:3}; Dask spellings
 *     add the Dask key in parentheses
 * @param deprecatedKey the legacy Dask key this value was read from ({@code distributed.comm.ucx.tcp}),
 *     or {@code null} when the spelling is current
 * @param nullMeansUnset true for Dask sources, whose schema gives every key a null default: a null
 *     there is "not set" and the next source is consulted; in ucx4j's own sources an explicit
 *     {@code none} is a value that wins
 */
public record ConfigOrigin(String description, String deprecatedKey, boolean nullMeansUnset) {
    /** The built-in default. */
    public static final ConfigOrigin DEFAULT = new ConfigOrigin("default", null, false);
    /** A value given to {@code UcxConfig.Builder}. */
    public static final ConfigOrigin BUILDER = new ConfigOrigin("builder", null, false);

    /**
     * Checks the description.
     *
     * @param description the description
     * @param deprecatedKey the legacy key, or null
     * @param nullMeansUnset whether null defers to the next source
     */
    public ConfigOrigin {
        Objects.requireNonNull(description, "description");
    }

    /**
     * An origin in one of ucx4j's own sources.
     *
     * @param description the description
     * @return the origin
     */
    public static ConfigOrigin of(String description) {
        return new ConfigOrigin(description, null, false);
    }

    @Override
    public String toString() {
        return description;
    }
}
