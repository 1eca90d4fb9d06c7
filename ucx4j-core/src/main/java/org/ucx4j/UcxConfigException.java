package org.ucx4j;

import java.util.Optional;

/**
 * A configuration value could not be accepted: an unknown key, a value of the wrong type, a
 * negative size, an unreadable or malformed YAML file.
 *
 * <p>The message always names what was wrong and where it came from (the file and line, the
 * environment variable, the {@code -D} system property or the builder), so that it can be shown to
 * a user as is. When one key is at fault, {@link #key()}, {@link #value()} and {@link #source()}
 * give the same facts to code. Secret values are never echoed.
 *
 * <p>Threading: immutable once thrown.
 */
public final class UcxConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String key;
    private final String value;
    private final String source;

    /**
     * Creates an exception about one key.
     *
     * @param message the complete message, already naming the key, value and source
     * @param key the configuration key at fault, or {@code null} when the fault is not one key's
     * @param value the offending value as written, or {@code null}
     * @param source where the value came from, or {@code null}
     */
    public UcxConfigException(String message, String key, String value, String source) {
        super(message);
        this.key = key;
        this.value = value;
        this.source = source;
    }

    /**
     * Creates an exception about one key with an underlying cause.
     *
     * @param message the complete message
     * @param key the configuration key at fault, or {@code null}
     * @param value the offending value as written, or {@code null}
     * @param source where the value came from, or {@code null}
     * @param cause the underlying failure (an I/O or YAML parser error)
     */
    public UcxConfigException(String message, String key, String value, String source, Throwable cause) {
        super(message, cause);
        this.key = key;
        this.value = value;
        this.source = source;
    }

    /**
     * The configuration key at fault, in canonical form ({@code memory-pool.size}).
     *
     * @return the key, or empty when the error is not about one key (a YAML syntax error)
     */
    public Optional<String> key() {
        return Optional.ofNullable(key);
    }

    /**
     * The rejected value as it was written.
     *
     * @return the value, or empty when there is none to show (or it is a secret)
     */
    public Optional<String> value() {
        return Optional.ofNullable(value);
    }

    /**
     * Where the rejected value came from: {@code /etc/ucx4j/ucx4j.yaml:12}, {@code env UCX4J__TCP},
     * {@code -Ducx4j.tcp}, {@code builder}.
     *
     * @return the source, or empty when unknown
     */
    public Optional<String> source() {
        return Optional.ofNullable(source);
    }
}
