package org.ucx4j.internal.config;

/**
 * One value as a source gave it, before conversion.
 *
 * <p>Threading: an immutable value.
 *
 * @param path the canonical key name, or {@code environment.<name>} for an entry of that map
 * @param value text from a file, variable or property, a typed value from the builder, or null
 *     for an explicit none
 * @param written the value as the user wrote it, for error messages (null when not text)
 * @param origin where it came from
 */
public record RawSetting(String path, Object value, String written, ConfigOrigin origin) {}
