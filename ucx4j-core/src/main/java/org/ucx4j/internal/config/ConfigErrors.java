package org.ucx4j.internal.config;

import org.ucx4j.UcxConfigException;

/**
 * Builds the {@link UcxConfigException}s of the loader, so that every message has the same shape:
 * what was wrong, the key, the value as written, and where it came from.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class ConfigErrors {
    private ConfigErrors() {}

    /**
     * A value that does not fit its key.
     *
     * @param key the canonical key
     * @param written the value as written (not shown when {@code secret})
     * @param origin where it came from
     * @param reason why it was refused
     * @param secret whether the value must not be shown
     * @return the exception to throw
     */
    public static UcxConfigException invalidValue(
            String key, String written, ConfigOrigin origin, String reason, boolean secret) {
        String shown = secret ? "(secret)" : written;
        return new UcxConfigException(
                "invalid value '" + shown + "' for ucx4j config key '" + key + "' from " + origin + ": " + reason,
                key,
                secret ? null : written,
                origin.description());
    }

    /**
     * A key the schema does not know, in a source where that is an error.
     *
     * @param key the key as normalised
     * @param written the value as written
     * @param origin where it came from
     * @param schema the registered keys, to list them
     * @return the exception to throw
     */
    public static UcxConfigException unknownKey(String key, String written, ConfigOrigin origin, ConfigSchema schema) {
        return new UcxConfigException(
                "unknown ucx4j config key '" + key + "' (value '" + written + "') from " + origin + "; known keys: "
                        + schema.knownKeys(),
                key,
                written,
                origin.description());
    }

    /**
     * The same key given twice by one source (for example {@code UCX4J__TCP} and {@code ucx4j__tcp}).
     *
     * @param key the canonical key
     * @param first where the first value came from
     * @param second where the second value came from
     * @param written the second value as written
     * @return the exception to throw
     */
    public static UcxConfigException duplicate(String key, ConfigOrigin first, ConfigOrigin second, String written) {
        return new UcxConfigException(
                "ucx4j config key '" + key + "' is set twice in one source: by " + first + " and by " + second
                        + "; keep one",
                key,
                written,
                second.description());
    }
}
