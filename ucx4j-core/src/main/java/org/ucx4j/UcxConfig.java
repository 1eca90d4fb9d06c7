package org.ucx4j;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.ucx4j.internal.config.ConfigKey;
import org.ucx4j.internal.config.ConfigLayer;
import org.ucx4j.internal.config.ConfigLoader;
import org.ucx4j.internal.config.ConfigNamespace;
import org.ucx4j.internal.config.ConfigOrigin;
import org.ucx4j.internal.config.ConfigSchema;
import org.ucx4j.internal.config.ConfigSources;
import org.ucx4j.internal.config.LiteralValues;
import org.ucx4j.internal.config.RawSetting;
import org.ucx4j.internal.config.ResolvedConfig;
import org.ucx4j.internal.config.UcxSettingsMapper;

/**
 * The ucx4j configuration: which UCX transports to manage, extra {@code UCX_*} settings, the GPU
 * memory pool, timeouts, the progress mode, message limits and the shared secret; and for every
 * value, where it came from.
 *
 * <p>Sources, highest precedence first, resolved key by key: the {@link Builder}; system properties
 * ({@code -Ducx4j.tcp=true}); environment variables ({@code UCX4J__TCP=true}); the {@code ucx4j:}
 * block of the YAML file ({@code $UCX4J_CONFIG}, else the first of {@code ./ucx4j.yaml},
 * {@code ~/.config/ucx4j/ucx4j.yaml}, {@code /etc/ucx4j/ucx4j.yaml}); then Dask's spellings
 * ({@code distributed-ucxx:}, {@code DASK_DISTRIBUTED_UCXX__*}) and, deprecated, the legacy ones
 * ({@code distributed.comm.ucx.*}, {@code distributed.rmm.pool-size}, {@code DASK_UCX__*}); then
 * the defaults. docs/CONFIGURATION.md describes every key.
 *
 * <p>Unset optional values ("let UCX decide") are empty {@link Optional}s.
 *
 * <p>Threading: immutable and safe to share between threads. Ownership: holds no native resource.
 */
public final class UcxConfig {
    private final ResolvedConfig resolved;
    private final UcxSettings settings;
    private final Map<String, String> settingSources;

    private UcxConfig(ResolvedConfig resolved) {
        this.resolved = resolved;
        UcxSettingsMapper.Mapped mapped = UcxSettingsMapper.map(resolved);
        this.settings = new UcxSettings(mapped.context(), mapped.global());
        this.settingSources = mapped.sources();
    }

    /**
     * Loads the configuration from system properties, the environment and the YAML file, with
     * nothing from code. The same as {@code builder().build()}.
     *
     * @return the configuration
     * @throws UcxConfigException naming the key, value and source of the first problem found
     */
    public static UcxConfig load() {
        return builder().build();
    }

    /**
     * A builder whose values take precedence over every other source.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Whether transport management is on with TCP: {@code TLS} includes {@code tcp}.
     *
     * @return the setting, empty when unset (UCX decides)
     */
    public Optional<Boolean> tcp() {
        return optional(ConfigKey.TCP);
    }

    /**
     * Whether NVLink is used: {@code cuda_copy,cuda_ipc} join {@code TLS}.
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> nvlink() {
        return optional(ConfigKey.NVLINK);
    }

    /**
     * Whether InfiniBand is used: {@code rc} joins {@code TLS}.
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> infiniband() {
        return optional(ConfigKey.INFINIBAND);
    }

    /**
     * Whether connections are set up through RDMA CM ({@code SOCKADDR_TLS_PRIORITY=rdmacm}).
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> rdmacm() {
        return optional(ConfigKey.RDMACM);
    }

    /**
     * Whether {@code cuda_copy} joins {@code TLS}.
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> cudaCopy() {
        return optional(ConfigKey.CUDA_COPY);
    }

    /**
     * Whether a CUDA context is created before UCX starts.
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> createCudaContext() {
        return optional(ConfigKey.CREATE_CUDA_CONTEXT);
    }

    /**
     * Whether the frames of a message are sent in one multi-send.
     *
     * @return the setting, empty when unset
     */
    public Optional<Boolean> multiBuffer() {
        return optional(ConfigKey.MULTI_BUFFER);
    }

    /**
     * The extra UCX settings, by normalised name ({@code log-level}, meaning {@code UCX_LOG_LEVEL}),
     * before the clash and outside-environment rules of {@link #ucxSettings()} are applied.
     *
     * @return an unmodifiable map sorted by name
     */
    public Map<String, String> environment() {
        Map<String, String> out = new TreeMap<>();
        resolved.environment().forEach((name, v) -> out.put(name, (String) v.value()));
        return Collections.unmodifiableMap(out);
    }

    /**
     * The initial GPU memory pool size.
     *
     * @return bytes, empty when no pool is asked for
     */
    public OptionalLong memoryPoolSize() {
        return optionalLong(ConfigKey.MEMORY_POOL_SIZE);
    }

    /**
     * The largest the GPU memory pool may grow.
     *
     * @return bytes, empty when unlimited or unset
     */
    public OptionalLong memoryPoolMaximumSize() {
        return optionalLong(ConfigKey.MEMORY_POOL_MAXIMUM_SIZE);
    }

    /**
     * How long connection set-up may take before it fails.
     *
     * @return the timeout (default 5 s)
     */
    public Duration connectTimeout() {
        return resolved.value(ConfigKey.CONNECT_TIMEOUT);
    }

    /**
     * UCX's {@code NET_DEVICES}, for example {@code mlx5_0:1}.
     *
     * @return the devices, empty when unset (UCX uses all)
     */
    public Optional<String> netDevices() {
        return optional(ConfigKey.NET_DEVICES);
    }

    /**
     * How workers make progress.
     *
     * @return the mode (default {@link ProgressMode#THREAD_BLOCKING})
     */
    public ProgressMode progressMode() {
        return resolved.value(ConfigKey.PROGRESS_MODE);
    }

    /**
     * Whether workers' endpoints detect a dead peer (default true); see
     * {@link WorkerOptions#peerErrorHandling()} for what turning it off trades.
     *
     * @return the {@code peer-error-handling} value
     */
    public boolean peerErrorHandling() {
        return resolved.value(ConfigKey.PEER_ERROR_HANDLING);
    }

    /**
     * The most frames one message may carry; a peer claiming more is refused.
     *
     * @return at least 1 (default 100000)
     */
    public int maxFrames() {
        return resolved.value(ConfigKey.MAX_FRAMES);
    }

    /**
     * The largest single frame accepted from a peer.
     *
     * @return bytes (default 64 GiB)
     */
    public long maxFrameSize() {
        return resolved.value(ConfigKey.MAX_FRAME_SIZE);
    }

    /**
     * The shared secret for the handshake. Never printed by {@link #toString()}, {@link #entries()}
     * or {@link #toMap()}.
     *
     * @return the secret, empty when unset
     */
    public Optional<String> authSecret() {
        return optional(ConfigKey.AUTH_SECRET);
    }

    /**
     * A file holding the shared secret.
     *
     * @return the path as configured, empty when unset
     */
    public Optional<String> authSecretFile() {
        return optional(ConfigKey.AUTH_SECRET_FILE);
    }

    /**
     * The YAML file that was read.
     *
     * @return the file, empty when none was found
     */
    public Optional<Path> configFile() {
        return Optional.ofNullable(resolved.configFile());
    }

    /**
     * The UCX settings this configuration asks for, mapped as distributed-ucxx maps them (see
     * docs/CONFIGURATION.md): context options for {@code ucp_config_modify}, and global options that
     * must be in the environment before UCX loads. Options the process environment already sets
     * ({@code UCX_<name>}) are left out: the outside environment wins.
     *
     * @return the settings; both maps empty when nothing is configured
     */
    public UcxSettings ucxSettings() {
        return settings;
    }

    /**
     * Checks that this configuration's global UCX options can still take effect.
     *
     * @param ucxAlreadyLoaded whether libucs is already loaded in this process
     * @throws IllegalStateException when UCX is loaded and global options are asked for, naming the
     *     first option and the key and source that asked for it
     */
    public void checkGlobalsApplicable(boolean ucxAlreadyLoaded) {
        checkGlobalsApplicable(ucxAlreadyLoaded, Map.of());
    }

    /**
     * Checks that this configuration's global UCX options can still take effect, accepting those that
     * were set to the same value when UCX loaded.
     *
     * @param ucxAlreadyLoaded whether libucs is already loaded in this process
     * @param appliedAtLoad the global options (names without {@code UCX_}) set before UCX loaded, with
     *     their values; an option asked for with the same value is fine
     * @throws IllegalStateException when UCX is loaded and a global option is asked for that was not
     *     applied at load with the same value
     */
    public void checkGlobalsApplicable(boolean ucxAlreadyLoaded, Map<String, String> appliedAtLoad) {
        if (!ucxAlreadyLoaded) {
            return;
        }
        for (Map.Entry<String, String> e : settings.globalOptions().entrySet()) {
            String name = e.getKey();
            if (!e.getValue().equals(appliedAtLoad.get(name))) {
                throw new IllegalStateException("UCX global option " + name + " must be set before UCX loads; set UCX_"
                        + name + " in the environment or configure before first use (asked for by "
                        + settingSources.get(name) + ")");
            }
        }
    }

    /**
     * Every effective key with its display value and source: the keys of the schema in
     * documentation order, then the {@code environment.<name>} entries. Secrets show as {@code (set)}.
     *
     * @return an unmodifiable list
     */
    public List<ConfigEntry> entries() {
        List<ConfigEntry> out = new ArrayList<>();
        for (ConfigKey<?> key : ConfigKey.ALL) {
            out.add(new ConfigEntry(key.name(), key.display(resolved.value(key)), resolved.origin(key).description()));
        }
        resolved.environment().forEach((name, v) -> out.add(new ConfigEntry(
                ConfigSchema.ENVIRONMENT + "." + name, (String) v.value(), v.origin().description())));
        return List.copyOf(out);
    }

    /**
     * A JSON-friendly form, for {@code ucx4j info --json}: {@code file} (the YAML file or null),
     * {@code keys} (each key of {@link #entries()} to a map of {@code value} and {@code source};
     * values are Boolean, Long, Integer, String or null; durations as text such as {@code 5s}), and
     * {@code ucx} ({@code context} and {@code global} option maps). Secrets show as {@code (set)}.
     *
     * @return a new mutable map of maps, strings, numbers, booleans and nulls
     */
    public Map<String, Object> toMap() {
        Map<String, Object> keys = new LinkedHashMap<>();
        for (ConfigKey<?> key : ConfigKey.ALL) {
            keys.put(key.name(), valueAndSource(key.toJson(resolved.value(key)), resolved.origin(key)));
        }
        resolved.environment().forEach((name, v) ->
                keys.put(ConfigSchema.ENVIRONMENT + "." + name, valueAndSource(v.value(), v.origin())));
        Map<String, Object> ucx = new LinkedHashMap<>();
        ucx.put("context", new LinkedHashMap<>(settings.contextOptions()));
        ucx.put("global", new LinkedHashMap<>(settings.globalOptions()));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("file", resolved.configFile() == null ? null : resolved.configFile().toString());
        out.put("keys", keys);
        out.put("ucx", ucx);
        return out;
    }

    /**
     * One line per effective key, with its source; secrets show as {@code (set)}.
     *
     * @return a multi-line description
     */
    @Override
    public String toString() {
        return entries().stream().map(e -> "  " + e).collect(Collectors.joining("\n", "UcxConfig{\n", "\n}"));
    }

    private static Map<String, Object> valueAndSource(Object value, ConfigOrigin origin) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("value", value);
        m.put("source", origin.description());
        return m;
    }

    private <T> Optional<T> optional(ConfigKey<T> key) {
        return Optional.ofNullable(resolved.value(key));
    }

    private OptionalLong optionalLong(ConfigKey<Long> key) {
        Long v = resolved.value(key);
        return v == null ? OptionalLong.empty() : OptionalLong.of(v);
    }

    /**
     * The UCX settings a configuration maps to, names without the {@code UCX_} prefix.
     *
     * <p>Threading: immutable.
     *
     * @param contextOptions options for {@code ucp_config_modify} on the context's config, in order
     *     ({@code TLS}, {@code SOCKADDR_TLS_PRIORITY}, {@code NET_DEVICES}, then environment entries)
     * @param globalOptions options libucs reads only when it loads ({@code LOG_LEVEL},
     *     {@code ERROR_SIGNALS}, ...): set them with {@code setenv("UCX_" + name)} before the first load
     */
    public record UcxSettings(Map<String, String> contextOptions, Map<String, String> globalOptions) {
        /**
         * Makes unmodifiable copies that keep the order.
         *
         * @param contextOptions the context options
         * @param globalOptions the global options
         */
        public UcxSettings {
            contextOptions = Collections.unmodifiableMap(new LinkedHashMap<>(contextOptions));
            globalOptions = Collections.unmodifiableMap(new LinkedHashMap<>(globalOptions));
        }

        /**
         * Whether there is nothing to set (UCX's own defaults apply, {@code TLS=all}).
         *
         * @return true when both maps are empty
         */
        public boolean isEmpty() {
            return contextOptions.isEmpty() && globalOptions.isEmpty();
        }

        /**
         * The global options as environment variables.
         *
         * @return {@code UCX_<name>} to value, in order
         */
        public Map<String, String> globalEnvironmentVariables() {
            Map<String, String> out = new LinkedHashMap<>();
            globalOptions.forEach((name, value) -> out.put("UCX_" + name, value));
            return Collections.unmodifiableMap(out);
        }
    }

    /**
     * Collects values set in code; they take precedence over every other source. Each setter
     * replaces an earlier value for the same key; a null sets the key to "unset" explicitly (which
     * also hides lower sources), which only optional keys allow.
     *
     * <p>Threading: not thread-safe; use from one thread, then {@link #build()}.
     */
    public static final class Builder {
        private final Map<String, RawSetting> values = new LinkedHashMap<>();

        private Builder() {
        }

        /**
         * Sets {@code tcp}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder tcp(Boolean value) {
            return put(ConfigKey.TCP, value);
        }

        /**
         * Sets {@code nvlink}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder nvlink(Boolean value) {
            return put(ConfigKey.NVLINK, value);
        }

        /**
         * Sets {@code infiniband}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder infiniband(Boolean value) {
            return put(ConfigKey.INFINIBAND, value);
        }

        /**
         * Sets {@code rdmacm}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder rdmacm(Boolean value) {
            return put(ConfigKey.RDMACM, value);
        }

        /**
         * Sets {@code cuda-copy}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder cudaCopy(Boolean value) {
            return put(ConfigKey.CUDA_COPY, value);
        }

        /**
         * Sets {@code create-cuda-context}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder createCudaContext(Boolean value) {
            return put(ConfigKey.CREATE_CUDA_CONTEXT, value);
        }

        /**
         * Sets {@code multi-buffer}.
         *
         * @param value true, false, or null for unset
         * @return this builder
         */
        public Builder multiBuffer(Boolean value) {
            return put(ConfigKey.MULTI_BUFFER, value);
        }

        /**
         * Sets one {@code environment} entry: {@code ("log-level", "info")} asks for
         * {@code UCX_LOG_LEVEL=info}.
         *
         * @param name the entry name ({@code _} and {@code -} alike, case-insensitive)
         * @param value the value, or null to remove an entry that a lower source sets
         * @return this builder
         */
        public Builder environment(String name, String value) {
            Objects.requireNonNull(name, "name");
            String path = ConfigSchema.ENVIRONMENT + "." + ConfigSchema.normalize(name);
            values.put(path, new RawSetting(path, value, value, ConfigOrigin.BUILDER));
            return this;
        }

        /**
         * Sets several {@code environment} entries; see {@link #environment(String, String)}.
         *
         * @param entries the entries
         * @return this builder
         */
        public Builder environment(Map<String, String> entries) {
            entries.forEach(this::environment);
            return this;
        }

        /**
         * Sets {@code memory-pool.size}.
         *
         * @param bytes the size in bytes, or null for no pool
         * @return this builder
         */
        public Builder memoryPoolSize(Long bytes) {
            return put(ConfigKey.MEMORY_POOL_SIZE, bytes);
        }

        /**
         * Sets {@code memory-pool.maximum-size}.
         *
         * @param bytes the size in bytes, or null for unset
         * @return this builder
         */
        public Builder memoryPoolMaximumSize(Long bytes) {
            return put(ConfigKey.MEMORY_POOL_MAXIMUM_SIZE, bytes);
        }

        /**
         * Sets {@code connect-timeout}.
         *
         * @param timeout a non-negative duration
         * @return this builder
         */
        public Builder connectTimeout(Duration timeout) {
            return put(ConfigKey.CONNECT_TIMEOUT, Objects.requireNonNull(timeout, "timeout"));
        }

        /**
         * Sets {@code net-devices}.
         *
         * @param devices for example {@code mlx5_0:1}, or null for unset
         * @return this builder
         */
        public Builder netDevices(String devices) {
            return put(ConfigKey.NET_DEVICES, devices);
        }

        /**
         * Sets {@code progress-mode}.
         *
         * @param mode the mode
         * @return this builder
         */
        public Builder progressMode(ProgressMode mode) {
            return put(ConfigKey.PROGRESS_MODE, Objects.requireNonNull(mode, "mode"));
        }

        /**
         * Sets {@code peer-error-handling}.
         *
         * @param enabled false to let UCX use transports that cannot detect a dead peer (shared memory)
         * @return this builder
         */
        public Builder peerErrorHandling(boolean enabled) {
            return put(ConfigKey.PEER_ERROR_HANDLING, enabled);
        }

        /**
         * Sets {@code max-frames}.
         *
         * @param frames at least 1
         * @return this builder
         */
        public Builder maxFrames(int frames) {
            return put(ConfigKey.MAX_FRAMES, frames);
        }

        /**
         * Sets {@code max-frame-size}.
         *
         * @param bytes the largest frame in bytes
         * @return this builder
         */
        public Builder maxFrameSize(long bytes) {
            return put(ConfigKey.MAX_FRAME_SIZE, bytes);
        }

        /**
         * Sets {@code auth.secret}.
         *
         * @param secret the shared secret, or null for unset
         * @return this builder
         */
        public Builder authSecret(String secret) {
            return put(ConfigKey.AUTH_SECRET, secret);
        }

        /**
         * Sets {@code auth.secret-file}.
         *
         * @param file the file holding the secret, or null for unset
         * @return this builder
         */
        public Builder authSecretFile(String file) {
            return put(ConfigKey.AUTH_SECRET_FILE, file);
        }

        /**
         * Sets any key from text, as a file or variable would: {@code set("memory-pool.size", "1GB")},
         * {@code set("environment.log-level", "info")}; {@code none} means unset. The value is
         * checked by {@link #build()}.
         *
         * @param key a canonical key ({@code _} and {@code -} alike, case-insensitive)
         * @param value the value as text
         * @return this builder
         * @throws UcxConfigException when the key is unknown
         */
        public Builder set(String key, String value) {
            Objects.requireNonNull(key, "key");
            ConfigLayer parsed = new ConfigLayer("builder", true);
            ConfigNamespace.UCX4J.accept(parsed, ConfigSchema.normalize(key), LiteralValues.noneToNull(value),
                    value, ConfigOrigin.BUILDER.description());
            parsed.settings().forEach(s -> values.put(s.path(), s));
            return this;
        }

        /**
         * Loads the other sources (system properties, environment, YAML file) and resolves every key.
         *
         * @return the configuration
         * @throws UcxConfigException naming the key, value and source of the first problem found;
         *     nothing is half-applied
         */
        public UcxConfig build() {
            return build(ConfigSources.system());
        }

        /**
         * As {@link #build()}, with injected sources: for tests, which must not depend on the real
         * environment.
         *
         * @param sources the environment, system properties and file search path to use
         * @return the configuration
         */
        UcxConfig build(ConfigSources sources) {
            ConfigLayer layer = new ConfigLayer("builder", true);
            values.values().forEach(layer::add);
            return new UcxConfig(ConfigLoader.load(sources, layer));
        }

        private Builder put(ConfigKey<?> key, Object value) {
            String written = value == null ? "none" : key.secret() ? "(secret)" : String.valueOf(value);
            values.put(key.name(), new RawSetting(key.name(), value, written, ConfigOrigin.BUILDER));
            return this;
        }
    }
}
