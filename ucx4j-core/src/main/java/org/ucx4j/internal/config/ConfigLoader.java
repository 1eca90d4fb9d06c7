package org.ucx4j.internal.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfigException;

/**
 * Loads the configuration from every source and resolves it key by key.
 *
 * <p>Precedence, highest first (the first source that sets a key wins, per key):
 * <ol>
 *   <li>the builder;</li>
 *   <li>system properties {@code -Ducx4j.<key>};</li>
 *   <li>environment variables {@code UCX4J__<KEY>};</li>
 *   <li>the {@code ucx4j:} block of the YAML file;</li>
 *   <li>Dask's {@code DASK_DISTRIBUTED_UCXX__*} variables, then the file's {@code distributed-ucxx:} block;</li>
 *   <li>legacy Distributed spellings (deprecated): {@code DASK_DISTRIBUTED__RMM__POOL_SIZE},
 *       {@code DASK_DISTRIBUTED__COMM__UCX__*}, then the file's {@code distributed.rmm.pool-size} and
 *       {@code distributed.comm.ucx.*} (also {@code distributed.comm.ucx.rmm.pool-size});</li>
 *   <li>Dask-CUDA's older variables (deprecated): {@code DASK_RMM__POOL_SIZE}, {@code DASK_UCX__*};</li>
 *   <li>the default.</li>
 * </ol>
 * In Dask's sources a null value means "unset" and the next source is consulted (a newer key set
 * to false still wins); in ucx4j's own an explicit {@code none} wins. Every value of every source is
 * checked, also those that lose, so that a mistake is reported where it was made. Either a complete
 * {@link ResolvedConfig} comes back or a {@link UcxConfigException} is thrown.
 *
 * <p>Threading: stateless; each call works on its own data (deprecation warnings are logged once per
 * process, see {@link DeprecationWarnings}).
 */
public final class ConfigLoader {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigLoader.class);

    private ConfigLoader() {
    }

    /**
     * Loads and resolves.
     *
     * @param sources the environment, system properties and file search path
     * @param builder the builder's values (a strict layer), highest precedence
     * @return the resolved configuration
     * @throws UcxConfigException naming the key, the value and the source of the first problem
     */
    public static ResolvedConfig load(ConfigSources sources, ConfigLayer builder) {
        Path file = findFile(sources);
        YamlConfigFile yaml = file == null ? null : YamlConfigFile.parse(file);
        if (file != null) {
            LOG.debug("reading ucx4j configuration from {}", file);
        }
        Map<String, String> env = sources.environment();
        List<ConfigLayer> layers = new ArrayList<>();
        layers.add(builder);
        layers.add(SystemPropertyReader.read(sources.systemProperties()));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.UCX4J));
        addFileLayer(layers, yaml, ConfigNamespace.UCX4J);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_UCXX));
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_UCXX);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_RMM));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_COMM_UCX));
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_RMM);
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_COMM_UCX);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DASK_CUDA_RMM));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DASK_CUDA_UCX));

        List<Map<String, ResolvedValue>> converted = layers.stream().map(ConfigLoader::convert).toList();

        Map<ConfigKey<?>, ResolvedValue> values = new LinkedHashMap<>();
        for (ConfigKey<?> key : ConfigKey.ALL) {
            ResolvedValue winner = resolve(converted, key.name());
            if (winner != null && winner.value() == null && key.defaultValue() != null) {
                throw ConfigErrors.invalidValue(key.name(), "none", winner.origin(), "this key cannot be unset; leave it out"
                        + " to get the default " + key.display(key.defaultValue()), false);
            }
            values.put(key, winner != null ? winner : new ResolvedValue(key.defaultValue(), ConfigOrigin.DEFAULT));
        }
        TreeSet<String> entryPaths = new TreeSet<>();
        converted.forEach(layer -> layer.keySet().stream()
                .filter(p -> p.startsWith(ConfigSchema.ENVIRONMENT + "."))
                .forEach(entryPaths::add));
        Map<String, ResolvedValue> environment = new TreeMap<>();
        for (String path : entryPaths) {
            ResolvedValue winner = resolve(converted, path);
            if (winner != null && winner.value() != null) {
                environment.put(path.substring(ConfigSchema.ENVIRONMENT.length() + 1), winner);
            }
        }
        checkPoolSizes(values);
        return new ResolvedConfig(values, new TreeMap<>(environment), sources.ucxVariables(), file);
    }

    private static void addFileLayer(List<ConfigLayer> layers, YamlConfigFile yaml, ConfigNamespace namespace) {
        if (yaml != null) {
            layers.add(yaml.read(namespace));
        }
    }

    /** The explicit file ({@code -Ducx4j.config}, then {@code UCX4J_CONFIG}) must exist; else the first existing of the search path. */
    private static Path findFile(ConfigSources sources) {
        String property = sources.systemProperties().get(SystemPropertyReader.CONFIG_FILE_PROPERTY);
        String variable = sources.environment().get(ConfigSources.CONFIG_FILE_VARIABLE);
        String explicit = property != null && !property.isBlank() ? property : variable;
        if (explicit != null && !explicit.isBlank()) {
            String source = explicit == property ? "-D" + SystemPropertyReader.CONFIG_FILE_PROPERTY
                    : "env " + ConfigSources.CONFIG_FILE_VARIABLE;
            Path path = Path.of(explicit);
            if (!Files.isRegularFile(path)) {
                throw new UcxConfigException("ucx4j config file '" + explicit + "' named by " + source
                        + " does not exist or is not a regular file", null, explicit, source);
            }
            return path;
        }
        return sources.searchPath().stream().filter(Files::isRegularFile).findFirst().orElse(null);
    }

    private static Map<String, ResolvedValue> convert(ConfigLayer layer) {
        Map<String, ResolvedValue> out = new LinkedHashMap<>();
        for (RawSetting s : layer.settings()) {
            out.put(s.path(), new ResolvedValue(s.value() == null ? null : convertValue(s), s.origin()));
        }
        return out;
    }

    private static Object convertValue(RawSetting s) {
        ConfigKey<?> key = ConfigKey.named(s.path());
        String written = s.written() != null ? s.written() : String.valueOf(s.value());
        if (key == null) {
            String name = s.path().substring(ConfigSchema.ENVIRONMENT.length() + 1);
            if (!ConfigSchema.isValidEntryName(name)) {
                throw ConfigErrors.invalidValue(s.path(), written, s.origin(),
                        "environment entry names are letters, digits and '-' (some-key becomes UCX_SOME_KEY)", false);
            }
            if (!(s.value() instanceof String)) {
                throw ConfigErrors.invalidValue(s.path(), written, s.origin(), "expected text", false);
            }
            return s.value();
        }
        try {
            return key.convert(s.value());
        } catch (IllegalArgumentException e) {
            String reason = e.getMessage().startsWith("expected") ? e.getMessage()
                    : e.getMessage() + "; expected " + key.type().expected();
            throw ConfigErrors.invalidValue(key.name(), written, s.origin(), reason, key.secret());
        }
    }

    private static ResolvedValue resolve(List<Map<String, ResolvedValue>> layers, String path) {
        for (Map<String, ResolvedValue> layer : layers) {
            ResolvedValue v = layer.get(path);
            if (v == null || (v.value() == null && v.origin().nullMeansUnset())) {
                continue;
            }
            if (v.origin().deprecatedKey() != null) {
                String key = v.origin().deprecatedKey();
                DeprecationWarnings.warnOnce(key, "ucx4j config: " + v.origin().description()
                        + " is a deprecated spelling; use " + replacement(path) + " instead");
            }
            return v;
        }
        return null;
    }

    private static String replacement(String path) {
        boolean entry = path.startsWith(ConfigSchema.ENVIRONMENT + ".");
        String dask = path.equals(ConfigKey.MEMORY_POOL_SIZE.name()) ? "rmm.pool-size" : path;
        String ucx4j = entry ? ConfigSchema.ENVIRONMENT : path;
        return "'distributed-ucxx." + (entry ? ConfigSchema.ENVIRONMENT : dask) + "' or ucx4j's own '" + ucx4j
                + "' (UCX4J__" + ucx4j.toUpperCase(Locale.ROOT).replace("-", "_").replace(".", "__") + ")";
    }

    private static void checkPoolSizes(Map<ConfigKey<?>, ResolvedValue> values) {
        ResolvedValue size = values.get(ConfigKey.MEMORY_POOL_SIZE);
        ResolvedValue max = values.get(ConfigKey.MEMORY_POOL_MAXIMUM_SIZE);
        if (size.value() != null && max.value() != null && (Long) max.value() < (Long) size.value()) {
            String shown = ConfigKey.MEMORY_POOL_MAXIMUM_SIZE.display(max.value());
            throw ConfigErrors.invalidValue(ConfigKey.MEMORY_POOL_MAXIMUM_SIZE.name(), shown, max.origin(),
                    "must be at least memory-pool.size, which is " + ConfigKey.MEMORY_POOL_SIZE.display(size.value())
                            + " from " + size.origin(), false);
        }
    }
}
