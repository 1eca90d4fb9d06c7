package org.ucx4j;

import java.util.Objects;

/**
 * One effective configuration key of a {@link UcxConfig}: its value for display and where the
 * value came from.
 *
 * <p>Secrets are shown as {@code (set)}; unset optional keys as {@code none}.
 *
 * <p>Threading: an immutable value.
 *
 * @param key the canonical key, for example {@code memory-pool.size} or {@code environment.log-level}
 * @param value the value as display text, for example {@code 1 GB (1000000000 bytes)}
 * @param source where it came from: {@code default}, {@code builder}, {@code -Ducx4j.tcp},
 *     {@code env UCX4J__TCP}, {@code /path/ucx4j.yaml:3}; Dask spellings add the Dask key
 */
public record ConfigEntry(String key, String value, String source) {
    /**
     * Checks that no component is null.
     *
     * @param key the canonical key
     * @param value the display value
     * @param source the source description
     */
    public ConfigEntry {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(source, "source");
    }

    @Override
    public String toString() {
        return key + " = " + value + "  [" + source + "]";
    }
}
