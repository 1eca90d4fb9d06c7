package org.ucx4j;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import org.ucx4j.internal.config.ConfigSchema;
import org.ucx4j.internal.config.Durations;
import org.ucx4j.spi.ConfigKeySet;

/**
 * One typed key of the ucx4j configuration: its canonical hyphenated name, its type, its default, its
 * valid range, and whether its value is secret. Read a value with {@link UcxConfig#get(ConfigKey)},
 * set one with {@link UcxConfig.Builder#set(ConfigKey, Object)}.
 *
 * <p>Each module declares the keys it reads as constants ({@link UcxKeys} in the core,
 * {@code CommKeys} in ucx4j-comm, {@code CudaKeys} in ucx4j-cuda) and registers them with a
 * {@link ConfigKeySet}; every source (builder, {@code -Ducx4j.*}, {@code UCX4J__*},
 * {@code ucx4j.yaml}, Dask's spellings) is read the same way for every key of every module.
 *
 * <p>Keys are compared by identity; two modules may not declare the same name.
 *
 * <p>Threading: immutable; the {@code with...} methods return new keys.
 *
 * @param <T> the Java type of the value
 */
public final class ConfigKey<T> {
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]*(\\.[a-z0-9][a-z0-9-]*)*");

    private final String name;
    private final ValueType type;
    private final Class<T> javaType;
    private final T defaultValue;
    private final T minimum;
    private final T maximum;
    private final boolean secret;
    private final String daskSpelling;
    private final ConfigKey<T> atLeast;
    private final String description;

    private ConfigKey(
            String name,
            ValueType type,
            Class<T> javaType,
            T defaultValue,
            T minimum,
            T maximum,
            boolean secret,
            String daskSpelling,
            ConfigKey<T> atLeast,
            String description) {
        if (!NAME.matcher(Objects.requireNonNull(name, "name")).matches()
                || name.equals(ConfigSchema.ENVIRONMENT)
                || name.startsWith(ConfigSchema.ENVIRONMENT + ".")) {
            throw new IllegalArgumentException("not a valid configuration key name: '" + name
                    + "' (lower-case segments of letters, digits and '-', separated by '.'; not environment)");
        }
        this.name = name;
        this.type = type;
        this.javaType = javaType;
        this.defaultValue = defaultValue;
        this.minimum = minimum;
        this.maximum = maximum;
        this.secret = secret;
        this.daskSpelling = daskSpelling;
        this.atLeast = atLeast;
        this.description = Objects.requireNonNull(description, "description");
        if (defaultValue != null) {
            check(defaultValue);
        }
    }

    /**
     * A boolean that may be left unset ("let UCX decide"), as distributed-ucxx's switches are.
     *
     * @param name the canonical name, for example {@code tcp}
     * @param description one line for the documentation and {@code ucx4j info}
     * @return the key, default unset
     */
    public static ConfigKey<Boolean> flag(String name, String description) {
        return new ConfigKey<>(
                name, ValueType.BOOLEAN, Boolean.class, null, null, null, false, null, null, description);
    }

    /**
     * A boolean with a default; it cannot be unset.
     *
     * @param name the canonical name
     * @param defaultValue the default
     * @param description one line for the documentation
     * @return the key
     */
    public static ConfigKey<Boolean> flag(String name, boolean defaultValue, String description) {
        return new ConfigKey<>(
                name, ValueType.BOOLEAN, Boolean.class, defaultValue, null, null, false, null, null, description);
    }

    /**
     * A byte size ({@link ByteSize}: {@code 1GB} = 10^9, {@code 1GiB} = 2^30) that may be left unset;
     * never negative.
     *
     * @param name the canonical name, for example {@code memory-pool.size}
     * @param description one line for the documentation
     * @return the key, default unset, range 0 and up
     */
    public static ConfigKey<Long> size(String name, String description) {
        return new ConfigKey<>(
                name, ValueType.BYTES, Long.class, null, 0L, Long.MAX_VALUE, false, null, null, description);
    }

    /**
     * A byte size with a default and a range; it cannot be unset.
     *
     * @param name the canonical name
     * @param defaultValue the default in bytes
     * @param minimum the smallest valid value (at least 0)
     * @param maximum the largest valid value
     * @param description one line for the documentation
     * @return the key
     */
    public static ConfigKey<Long> size(String name, long defaultValue, long minimum, long maximum, String description) {
        if (minimum < 0 || maximum < minimum) {
            throw new IllegalArgumentException("bad range " + minimum + ".." + maximum + " for " + name);
        }
        return new ConfigKey<>(
                name, ValueType.BYTES, Long.class, defaultValue, minimum, maximum, false, null, null, description);
    }

    /**
     * A duration ({@code 5s}, {@code 250ms}, a number of seconds) with a default and a range; it
     * cannot be unset.
     *
     * @param name the canonical name, for example {@code connect-timeout}
     * @param defaultValue the default
     * @param minimum the shortest valid value (not negative)
     * @param maximum the longest valid value
     * @param description one line for the documentation
     * @return the key
     */
    public static ConfigKey<Duration> duration(
            String name, Duration defaultValue, Duration minimum, Duration maximum, String description) {
        if (minimum.isNegative() || maximum.compareTo(minimum) < 0) {
            throw new IllegalArgumentException("bad range " + minimum + ".." + maximum + " for " + name);
        }
        return new ConfigKey<>(
                name,
                ValueType.DURATION,
                Duration.class,
                defaultValue,
                minimum,
                maximum,
                false,
                null,
                null,
                description);
    }

    /**
     * A whole number of at least 1 that fits an {@code int}, with a default; it cannot be unset.
     *
     * @param name the canonical name, for example {@code max-frames}
     * @param defaultValue the default
     * @param description one line for the documentation
     * @return the key
     */
    public static ConfigKey<Integer> count(String name, int defaultValue, String description) {
        return new ConfigKey<>(
                name,
                ValueType.POSITIVE_INT,
                Integer.class,
                defaultValue,
                1,
                Integer.MAX_VALUE,
                false,
                null,
                null,
                description);
    }

    /**
     * Free text that may be left unset; blank text is refused.
     *
     * @param name the canonical name, for example {@code net-devices}
     * @param description one line for the documentation
     * @return the key, default unset
     */
    public static ConfigKey<String> text(String name, String description) {
        return new ConfigKey<>(name, ValueType.STRING, String.class, null, null, null, false, null, null, description);
    }

    /**
     * Text that is never shown: {@code (set)} in {@link UcxConfig#entries()}, {@code (secret)} in error
     * messages. May be left unset.
     *
     * @param name the canonical name, for example {@code auth.secret}
     * @param description one line for the documentation
     * @return the key, default unset
     */
    public static ConfigKey<String> secret(String name, String description) {
        return new ConfigKey<>(name, ValueType.STRING, String.class, null, null, null, true, null, null, description);
    }

    /** The core's progress-mode key; a type of its own because only the core has one. */
    static ConfigKey<ProgressMode> progressMode(String name, ProgressMode defaultValue, String description) {
        return new ConfigKey<>(
                name,
                ValueType.PROGRESS_MODE,
                ProgressMode.class,
                defaultValue,
                null,
                null,
                false,
                null,
                null,
                description);
    }

    /**
     * The same key, also read from Dask's blocks under another name: {@code rmm.pool-size} for
     * {@code memory-pool.size} ({@code distributed-ucxx.rmm.pool-size}, {@code DASK_RMM__POOL_SIZE},
     * ...). Dask's blocks read every key under its own name as well.
     *
     * @param daskName the dotted name below Dask's UCX block, for example {@code rmm.pool-size}
     * @return a new key
     */
    public ConfigKey<T> withDaskSpelling(String daskName) {
        return new ConfigKey<>(
                name,
                type,
                javaType,
                defaultValue,
                minimum,
                maximum,
                secret,
                Objects.requireNonNull(daskName, "daskName"),
                atLeast,
                description);
    }

    /**
     * The same key, which must be at least another key's value when both are set (checked at load, the
     * error naming both sources): {@code memory-pool.maximum-size} at least {@code memory-pool.size}.
     *
     * @param other a key of the same type; where it is not registered, nothing is checked
     * @return a new key
     */
    public ConfigKey<T> withAtLeast(ConfigKey<T> other) {
        if (!Comparable.class.isAssignableFrom(javaType)) {
            throw new IllegalStateException(name + " has no order");
        }
        return new ConfigKey<>(
                name,
                type,
                javaType,
                defaultValue,
                minimum,
                maximum,
                secret,
                daskSpelling,
                Objects.requireNonNull(other, "other"),
                description);
    }

    /**
     * The canonical hyphenated name.
     *
     * @return for example {@code memory-pool.size}
     */
    public String name() {
        return name;
    }

    /**
     * One line saying what the key does.
     *
     * @return the description
     */
    public String description() {
        return description;
    }

    /**
     * The Java type of the value.
     *
     * @return for example {@code Long.class}
     */
    public Class<T> type() {
        return javaType;
    }

    /**
     * The default, used when no source sets the key.
     *
     * @return the default, or empty when the key is unset by default ("let UCX decide")
     */
    public Optional<T> defaultValue() {
        return Optional.ofNullable(defaultValue);
    }

    /**
     * Whether the value is never shown.
     *
     * @return true for secrets
     */
    public boolean isSecret() {
        return secret;
    }

    /**
     * The name under which Dask's blocks also read this key.
     *
     * @return for example {@code rmm.pool-size}, or empty when Dask spells it as ucx4j does
     */
    public Optional<String> daskSpelling() {
        return Optional.ofNullable(daskSpelling);
    }

    /**
     * Parses text as a file, variable or property gives it, and checks the key's range.
     *
     * @param text for example {@code 1GB}, {@code 5s}, {@code true}
     * @return the value
     * @throws IllegalArgumentException with the reason and what a valid value looks like (the caller adds
     *     the key and where the text came from)
     */
    public T parse(String text) {
        return convert(Objects.requireNonNull(text, "text"));
    }

    /** Text from a source, or a typed value from the builder, checked. */
    T convert(Object raw) {
        try {
            return check(javaType.cast(type.convert(raw, javaType)));
        } catch (IllegalArgumentException e) {
            String reason = e.getMessage();
            throw new IllegalArgumentException(
                    reason.startsWith("expected") ? reason : reason + "; expected " + type.expected(), e);
        }
    }

    @SuppressWarnings("unchecked")
    private T check(T value) {
        if (minimum == null) {
            return value;
        }
        Comparable<T> v = (Comparable<T>) value;
        boolean unbounded = maximum.equals(Long.MAX_VALUE) || maximum.equals(Integer.MAX_VALUE);
        if (v.compareTo(minimum) < 0 || v.compareTo(maximum) > 0) {
            if (type == ValueType.BYTES && minimum.equals(0L)) {
                throw new IllegalArgumentException("a size cannot be negative");
            }
            throw new IllegalArgumentException(
                    unbounded
                            ? "must be at least " + type.display(minimum)
                            : "must be from " + type.display(minimum) + " to " + type.display(maximum));
        }
        return value;
    }

    /** The key this one must be at least, or null. */
    ConfigKey<T> atLeast() {
        return atLeast;
    }

    /** Shows a value of this key; secrets as {@code (set)}, unset as {@code none}. */
    String display(Object value) {
        if (secret && value != null) {
            return "(set)";
        }
        return type.display(value);
    }

    /** A JSON-friendly form: booleans, numbers and text stay; durations and modes become text; secrets {@code (set)}. */
    Object toJson(Object value) {
        if (secret && value != null) {
            return "(set)";
        }
        return value instanceof Duration d
                ? Durations.format(d)
                : value instanceof ProgressMode ? display(value) : value;
    }

    @Override
    public String toString() {
        return name;
    }
}
