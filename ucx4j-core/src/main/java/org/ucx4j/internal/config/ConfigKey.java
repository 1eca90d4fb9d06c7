package org.ucx4j.internal.config;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.ucx4j.ProgressMode;

/**
 * One key of the ucx4j configuration schema: its canonical hyphenated name, its type, its default.
 *
 * <p>The {@code environment} map is not a key of its own: each of its entries is resolved as
 * {@code environment.<name>} (see {@link ConfigSchema}).
 *
 * <p>Threading: immutable constants.
 *
 * @param <T> the Java type of the value
 */
public final class ConfigKey<T> {
    /** Transport management and TCP ({@code TLS=tcp}). */
    public static final ConfigKey<Boolean> TCP = tristate("tcp");
    /** NVLink: adds {@code cuda_copy,cuda_ipc} to {@code TLS}. */
    public static final ConfigKey<Boolean> NVLINK = tristate("nvlink");
    /** InfiniBand: prefixes {@code rc,} to {@code TLS}. */
    public static final ConfigKey<Boolean> INFINIBAND = tristate("infiniband");
    /** RDMA CM for connection set-up ({@code SOCKADDR_TLS_PRIORITY=rdmacm}). */
    public static final ConfigKey<Boolean> RDMACM = tristate("rdmacm");
    /** CUDA copy: adds {@code cuda_copy} to {@code TLS}. */
    public static final ConfigKey<Boolean> CUDA_COPY = tristate("cuda-copy");
    /** Create a CUDA context before UCX starts. */
    public static final ConfigKey<Boolean> CREATE_CUDA_CONTEXT = tristate("create-cuda-context");
    /** Send all frames of a message in one multi-send. */
    public static final ConfigKey<Boolean> MULTI_BUFFER = tristate("multi-buffer");
    /** Initial GPU memory pool size in bytes. */
    public static final ConfigKey<Long> MEMORY_POOL_SIZE =
            new ConfigKey<>("memory-pool.size", ValueType.BYTES, Long.class, null, false);
    /** Maximum GPU memory pool size in bytes. */
    public static final ConfigKey<Long> MEMORY_POOL_MAXIMUM_SIZE =
            new ConfigKey<>("memory-pool.maximum-size", ValueType.BYTES, Long.class, null, false);
    /** How long connection set-up may take. */
    public static final ConfigKey<Duration> CONNECT_TIMEOUT =
            new ConfigKey<>("connect-timeout", ValueType.DURATION, Duration.class, Duration.ofSeconds(5), false);
    /** UCX {@code NET_DEVICES}. */
    public static final ConfigKey<String> NET_DEVICES =
            new ConfigKey<>("net-devices", ValueType.STRING, String.class, null, false);
    /** How workers make progress. */
    public static final ConfigKey<ProgressMode> PROGRESS_MODE = new ConfigKey<>(
            "progress-mode", ValueType.PROGRESS_MODE, ProgressMode.class, ProgressMode.THREAD_BLOCKING, false);
    /**
     * Whether endpoints detect a dead peer ({@code UCP_ERR_HANDLING_MODE_PEER}); off lets UCX use
     * shared memory between processes, which it leaves out for endpoints that detect peer failure.
     */
    public static final ConfigKey<Boolean> PEER_ERROR_HANDLING =
            new ConfigKey<>("peer-error-handling", ValueType.BOOLEAN, Boolean.class, Boolean.TRUE, false);
    /** Most frames one message may carry. */
    public static final ConfigKey<Integer> MAX_FRAMES =
            new ConfigKey<>("max-frames", ValueType.POSITIVE_INT, Integer.class, 100_000, false);
    /** Largest single frame in bytes. */
    public static final ConfigKey<Long> MAX_FRAME_SIZE =
            new ConfigKey<>("max-frame-size", ValueType.BYTES, Long.class, 64L << 30, false);
    /** Shared secret for the handshake; never displayed. */
    public static final ConfigKey<String> AUTH_SECRET =
            new ConfigKey<>("auth.secret", ValueType.STRING, String.class, null, true);
    /** File holding the shared secret. */
    public static final ConfigKey<String> AUTH_SECRET_FILE =
            new ConfigKey<>("auth.secret-file", ValueType.STRING, String.class, null, false);

    /** Every key, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(
            TCP, NVLINK, INFINIBAND, RDMACM, CUDA_COPY, CREATE_CUDA_CONTEXT, MULTI_BUFFER,
            MEMORY_POOL_SIZE, MEMORY_POOL_MAXIMUM_SIZE, CONNECT_TIMEOUT, NET_DEVICES, PROGRESS_MODE,
            PEER_ERROR_HANDLING, MAX_FRAMES, MAX_FRAME_SIZE, AUTH_SECRET, AUTH_SECRET_FILE);

    private static final Map<String, ConfigKey<?>> BY_NAME =
            ALL.stream().collect(Collectors.toUnmodifiableMap(ConfigKey::name, Function.identity()));

    private final String name;
    private final ValueType type;
    private final Class<T> javaType;
    private final T defaultValue;
    private final boolean secret;

    private ConfigKey(String name, ValueType type, Class<T> javaType, T defaultValue, boolean secret) {
        this.name = name;
        this.type = type;
        this.javaType = javaType;
        this.defaultValue = defaultValue;
        this.secret = secret;
    }

    private static ConfigKey<Boolean> tristate(String name) {
        return new ConfigKey<>(name, ValueType.BOOLEAN, Boolean.class, null, false);
    }

    /**
     * Looks a key up by canonical name.
     *
     * @param name for example {@code memory-pool.size}
     * @return the key, or null when there is none of that name
     */
    public static ConfigKey<?> named(String name) {
        return BY_NAME.get(name);
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
     * The value type.
     *
     * @return the type
     */
    public ValueType type() {
        return type;
    }

    /**
     * The default, used when no source sets the key.
     *
     * @return the default, or null (meaning "unset: let UCX decide")
     */
    public T defaultValue() {
        return defaultValue;
    }

    /**
     * Whether the value must never be shown.
     *
     * @return true for secrets
     */
    public boolean secret() {
        return secret;
    }

    /**
     * Converts a raw value to this key's type.
     *
     * @param raw text or a typed value, never null
     * @return the checked value
     * @throws IllegalArgumentException with the reason, without key or source
     */
    public T convert(Object raw) {
        Objects.requireNonNull(raw, "raw");
        return javaType.cast(type.convert(raw, javaType));
    }

    /**
     * Shows a value of this key; secrets as {@code (set)}.
     *
     * @param value a value of this key, or null
     * @return the display text
     */
    public String display(Object value) {
        if (secret && value != null) {
            return "(set)";
        }
        return type.display(value);
    }

    /**
     * A JSON-friendly form of a value of this key; secrets as {@code (set)}.
     *
     * @param value a value of this key, or null
     * @return a Boolean, Number, String or null
     */
    public Object toJson(Object value) {
        if (secret && value != null) {
            return "(set)";
        }
        return type.toJson(value);
    }

    @Override
    public String toString() {
        return name;
    }
}
