package org.ucx4j.internal.config;

import java.util.Objects;

/**
 * An effective value and the source it came from.
 *
 * <p>Threading: an immutable value.
 *
 * @param value the checked value, or null for "unset"
 * @param origin where it came from ({@link ConfigOrigin#DEFAULT} for defaults)
 */
public record ResolvedValue(Object value, ConfigOrigin origin) {
    /**
     * Checks the origin.
     *
     * @param value the value or null
     * @param origin the origin
     */
    public ResolvedValue {
        Objects.requireNonNull(origin, "origin");
    }
}
