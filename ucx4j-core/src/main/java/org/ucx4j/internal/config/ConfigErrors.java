package org.ucx4j.internal.config;

import org.ucx4j.UcxConfigException;

/**
 * Builds the {@link UcxConfigException}s of the loader, so that every message has the same shape:
 * what was wrong, the key, the value as written, and where it came from.
 *
 * <p>Values are shown only where the key is known and not secret: the value of an unknown key, of a
 * group or of a key given twice is never shown, because a misspelled {@code auth.secrte} or a duplicate
 * {@code auth.secret} would otherwise print the secret. The exception's {@link UcxConfigException#value()}
 * follows the same rule, so code that logs it leaks nothing either.
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
     * A key the schema does not know, in a source where that is an error. Its value is not shown (nor
     * kept in the exception): an unknown key may be a misspelled secret.
     *
     * @param key the key as normalised
     * @param origin where it came from
     * @param schema the registered keys, to list them
     * @return the exception to throw
     */
    public static UcxConfigException unknownKey(String key, ConfigOrigin origin, ConfigSchema schema) {
        return new UcxConfigException(
                "unknown ucx4j config key '" + key + "' from " + origin + " (its value is not shown: it may be a "
                        + "misspelled secret); known keys: " + schema.knownKeys(),
                key,
                null,
                origin.description());
    }

    /**
     * A value given to a name that takes none: a group such as {@code auth} or the {@code environment}
     * map. Its value is not shown, for the same reason as an unknown key's.
     *
     * @param key the name as normalised
     * @param origin where it came from
     * @param reason what to set instead
     * @return the exception to throw
     */
    public static UcxConfigException misplacedValue(String key, ConfigOrigin origin, String reason) {
        return new UcxConfigException(
                "ucx4j config key '" + key + "' from " + origin + " takes no value: " + reason,
                key,
                null,
                origin.description());
    }

    /**
     * The same key given twice by one source (for example {@code UCX4J__TCP} and {@code ucx4j__tcp}).
     *
     * @param key the canonical key
     * @param first where the first value came from
     * @param second where the second value came from
     * @return the exception to throw (without either value: the key may be a secret)
     */
    public static UcxConfigException duplicate(String key, ConfigOrigin first, ConfigOrigin second) {
        return new UcxConfigException(
                "ucx4j config key '" + key + "' is set twice in one source: by " + first + " and by " + second
                        + "; keep one",
                key,
                null,
                second.description());
    }
}
