package org.ucx4j;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.ucx4j.internal.config.ConfigErrors;
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
import org.ucx4j.spi.ConfigKeySet;

/**
 * The ucx4j configuration, one for every module: each module declares its typed keys
 * ({@link ConfigKey}; the core's are {@link UcxKeys}, ucx4j-comm's {@code CommKeys}, ucx4j-cuda's
 * {@code CudaKeys}) and registers them as a {@link ConfigKeySet}; this object loads every source once
 * and answers {@link #get(ConfigKey)} for any of them, with the extra {@code UCX_*} settings of the
 * {@code environment} map and, for every value, where it came from.
 *
 * <p>Sources, highest precedence first, resolved key by key: the {@link Builder}; system properties
 * ({@code -Ducx4j.tcp=true}); environment variables ({@code UCX4J__TCP=true}); the {@code ucx4j:}
 * block of the YAML file ({@code $UCX4J_CONFIG}, else the first of {@code ./ucx4j.yaml},
 * {@code ~/.config/ucx4j/ucx4j.yaml}, {@code /etc/ucx4j/ucx4j.yaml}); then Dask's spellings
 * ({@code distributed-ucxx:}, {@code DASK_DISTRIBUTED_UCXX__*}) and, deprecated, the legacy ones
 * ({@code distributed.comm.ucx.*}, {@code distributed.rmm.pool-size}, {@code DASK_UCX__*}); then
 * the defaults. docs/CONFIGURATION.md describes every key.
 *
 * <p>Every value is checked when the configuration is built, range included: a bad value fails
 * {@link Builder#build()} with a {@link UcxConfigException} naming the key, the value and its source,
 * never later at first use.
 *
 * <p>Threading: immutable and safe to share between threads. Ownership: holds no native resource.
 */
public final class UcxConfig {
    private final ConfigRegistry registry;
    private final ResolvedConfig resolved;
    private final UcxSettings settings;
    private final Map<String, String> settingSources;

    private UcxConfig(ConfigRegistry registry, ResolvedConfig resolved) {
        this.registry = registry;
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
     * One key's effective value.
     *
     * @param key a key of the core ({@link UcxKeys}) or of a module on the path
     * @param <T> the key's type
     * @return the value, or null when the key is unset (only keys without a default can be)
     * @throws IllegalArgumentException when the key is not registered (its module's
     *     {@link ConfigKeySet} was not found)
     */
    public <T> T get(ConfigKey<T> key) {
        return resolved.value(key);
    }

    /**
     * One key's effective value, for keys that may be unset ("let UCX decide").
     *
     * @param key a registered key
     * @param <T> the key's type
     * @return the value, empty when unset
     * @throws IllegalArgumentException when the key is not registered
     */
    public <T> Optional<T> find(ConfigKey<T> key) {
        return Optional.ofNullable(resolved.value(key));
    }

    /**
     * Where one key's value came from.
     *
     * @param key a registered key
     * @return {@code default}, {@code builder}, {@code -Ducx4j.tcp}, {@code env UCX4J__TCP},
     *     {@code /path/ucx4j.yaml:3}; Dask spellings add the Dask key in parentheses
     * @throws IllegalArgumentException when the key is not registered
     */
    public String source(ConfigKey<?> key) {
        return resolved.origin(key).description();
    }

    /**
     * Every registered key: the core's, then each module's on the path, in documentation order.
     *
     * @return an unmodifiable list
     */
    public List<ConfigKey<?>> keys() {
        return registry.keys();
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
     * Every effective key with its display value and source: the registered keys in documentation
     * order ({@link #keys()}), then the {@code environment.<name>} entries. Secrets show as {@code (set)}.
     *
     * @return an unmodifiable list
     */
    public List<ConfigEntry> entries() {
        List<ConfigEntry> out = new ArrayList<>();
        for (ConfigKey<?> key : registry.keys()) {
            out.add(new ConfigEntry(
                    key.name(),
                    key.display(resolved.value(key)),
                    resolved.origin(key).description()));
        }
        resolved.environment()
                .forEach((name, v) -> out.add(new ConfigEntry(
                        ConfigSchema.ENVIRONMENT + "." + name,
                        (String) v.value(),
                        v.origin().description())));
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
        for (ConfigKey<?> key : registry.keys()) {
            keys.put(key.name(), valueAndSource(key.toJson(resolved.value(key)), resolved.origin(key)));
        }
        resolved.environment()
                .forEach((name, v) ->
                        keys.put(ConfigSchema.ENVIRONMENT + "." + name, valueAndSource(v.value(), v.origin())));
        Map<String, Object> ucx = new LinkedHashMap<>();
        ucx.put("context", new LinkedHashMap<>(settings.contextOptions()));
        ucx.put("global", new LinkedHashMap<>(settings.globalOptions()));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put(
                "file",
                resolved.configFile() == null ? null : resolved.configFile().toString());
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
     * also hides lower sources), which only keys without a default allow.
     *
     * <p>Threading: not thread-safe; use from one thread, then {@link #build()}.
     */
    public static final class Builder {
        /** By canonical path; text values ({@link #set(String, String)}) are classified again at build. */
        private final Map<String, Pending> values = new LinkedHashMap<>();

        private record Pending(RawSetting setting, boolean text) {}

        private Builder() {}

        /**
         * Sets one key: {@code set(UcxKeys.TCP, true)}, {@code set(CommKeys.MAX_FRAMES, 10)}. The value
         * is checked by {@link #build()}, range included.
         *
         * @param key the key, of the core or of a module on the path
         * @param value the value, or null for "unset" (keys without a default only)
         * @param <T> the key's type
         * @return this builder
         */
        public <T> Builder set(ConfigKey<T> key, T value) {
            Objects.requireNonNull(key, "key");
            String written = value == null ? "none" : key.isSecret() ? "(secret)" : key.display(value);
            if (value instanceof Number n) {
                written = n.toString();
            }
            values.put(
                    key.name(), new Pending(new RawSetting(key.name(), value, written, ConfigOrigin.BUILDER), false));
            return this;
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
            values.put(path, new Pending(new RawSetting(path, value, value, ConfigOrigin.BUILDER), false));
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
         * Sets any key from text, as a file or variable would: {@code set("memory-pool.size", "1GB")},
         * {@code set("environment.log-level", "info")}; {@code none} means unset. The value is
         * checked by {@link #build()}.
         *
         * @param key a canonical key ({@code _} and {@code -} alike, case-insensitive)
         * @param value the value as text
         * @return this builder
         * @throws UcxConfigException when the key is unknown (neither registered nor of a ucx4j module
         *     that is not on the path)
         */
        public Builder set(String key, String value) {
            Objects.requireNonNull(key, "key");
            String path = ConfigSchema.normalize(key);
            ConfigSchema schema = ConfigRegistry.discovered().schema();
            if (schema.classify(path, false) instanceof ConfigSchema.Unknown) {
                throw ConfigErrors.unknownKey(path, ConfigOrigin.BUILDER, schema);
            }
            values.put(
                    path,
                    new Pending(
                            new RawSetting(path, LiteralValues.noneToNull(value), value, ConfigOrigin.BUILDER), true));
            return this;
        }

        /**
         * Loads the other sources (system properties, environment, YAML file) and resolves every
         * registered key.
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
            return build(sources, ConfigRegistry.discovered());
        }

        /**
         * As {@link #build(ConfigSources)}, with the given keys instead of the modules found on the path.
         *
         * @param sources the sources
         * @param registry the keys
         * @return the configuration
         */
        UcxConfig build(ConfigSources sources, ConfigRegistry registry) {
            ConfigLayer layer = new ConfigLayer("builder", true);
            for (Pending p : values.values()) {
                RawSetting s = p.setting();
                if (p.text()) {
                    ConfigNamespace.UCX4J.accept(
                            layer,
                            registry.schema(),
                            s.path(),
                            s.value(),
                            s.written(),
                            s.origin().description());
                } else if (registry.named(s.path()) != null || s.path().startsWith(ConfigSchema.ENVIRONMENT + ".")) {
                    layer.add(s);
                } else {
                    throw ConfigErrors.unknownKey(s.path(), s.origin(), registry.schema());
                }
            }
            return new UcxConfig(
                    registry, ConfigResolution.resolve(registry, ConfigLoader.load(sources, layer, registry.schema())));
        }
    }
}
