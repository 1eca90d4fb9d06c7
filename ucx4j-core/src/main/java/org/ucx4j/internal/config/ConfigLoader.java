package org.ucx4j.internal.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfigException;

/**
 * Reads every source into layers of raw values, highest precedence first; {@code UcxConfig} then
 * converts them with the keys' types and resolves them key by key.
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
 * to false still wins); in ucx4j's own an explicit {@code none} wins.
 *
 * <p>YAML support is optional: SnakeYAML Engine is a {@code requires static} dependency of the core.
 * Without it, no file is read; a file that is there anyway is an error, never silently skipped.
 *
 * <p>Threading: stateless; each call works on its own data.
 */
public final class ConfigLoader {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigLoader.class);

    private ConfigLoader() {}

    /**
     * The raw values of every source, and what loading found.
     *
     * @param layers the sources' values, highest precedence first
     * @param configFile the YAML file read, or null when none was found
     * @param ucxVariables the process environment's {@code UCX_*} variables
     */
    public record Loaded(List<ConfigLayer> layers, Path configFile, Map<String, String> ucxVariables) {
        /**
         * Copies the lists.
         *
         * @param layers the layers
         * @param configFile the file or null
         * @param ucxVariables the {@code UCX_*} variables
         */
        public Loaded {
            layers = List.copyOf(layers);
            ucxVariables = Map.copyOf(ucxVariables);
        }
    }

    /**
     * Reads every source.
     *
     * @param sources the environment, system properties and file search path
     * @param builder the builder's values (a strict layer), highest precedence
     * @param schema the registered keys
     * @return the layers, highest precedence first
     * @throws UcxConfigException naming the key, the value and the source of the first problem: unknown
     *     keys in ucx4j's own sources, malformed YAML, a file when YAML support is absent
     */
    public static Loaded load(ConfigSources sources, ConfigLayer builder, ConfigSchema schema) {
        Path file = findFile(sources);
        YamlConfigFile yaml = null;
        if (file != null) {
            if (!sources.yamlSupported()) {
                throw new UcxConfigException(
                        "ucx4j config file " + file + " cannot be read: YAML support needs "
                                + "SnakeYAML Engine (org.snakeyaml:snakeyaml-engine), which is not on the class path (on the module "
                                + "path it must also be resolved: --add-modules org.snakeyaml.engine.v2); add it, or remove the "
                                + "file",
                        null,
                        null,
                        file.toString());
            }
            LOG.debug("reading ucx4j configuration from {}", file);
            yaml = YamlConfigFile.parse(file);
        }
        Map<String, String> env = sources.environment();
        List<ConfigLayer> layers = new ArrayList<>();
        layers.add(builder);
        layers.add(SystemPropertyReader.read(sources.systemProperties(), schema));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.UCX4J, schema));
        addFileLayer(layers, yaml, ConfigNamespace.UCX4J, schema);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_UCXX, schema));
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_UCXX, schema);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_RMM, schema));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DISTRIBUTED_COMM_UCX, schema));
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_RMM, schema);
        addFileLayer(layers, yaml, ConfigNamespace.DISTRIBUTED_COMM_UCX, schema);
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DASK_CUDA_RMM, schema));
        layers.add(EnvironmentVariableReader.read(env, ConfigNamespace.DASK_CUDA_UCX, schema));
        return new Loaded(layers, file, sources.ucxVariables());
    }

    private static void addFileLayer(
            List<ConfigLayer> layers, YamlConfigFile yaml, ConfigNamespace namespace, ConfigSchema schema) {
        if (yaml != null) {
            layers.add(yaml.read(namespace, schema));
        }
    }

    /** The explicit file ({@code -Ducx4j.config}, then {@code UCX4J_CONFIG}) must exist; else the first existing of the search path. */
    private static Path findFile(ConfigSources sources) {
        String property = sources.systemProperties().get(SystemPropertyReader.CONFIG_FILE_PROPERTY);
        String variable = sources.environment().get(ConfigSources.CONFIG_FILE_VARIABLE);
        String explicit = property != null && !property.isBlank() ? property : variable;
        if (explicit != null && !explicit.isBlank()) {
            String source = explicit == property
                    ? "-D" + SystemPropertyReader.CONFIG_FILE_PROPERTY
                    : "env " + ConfigSources.CONFIG_FILE_VARIABLE;
            Path path = Path.of(explicit);
            if (!Files.isRegularFile(path)) {
                throw new UcxConfigException(
                        "ucx4j config file '" + explicit + "' named by " + source
                                + " does not exist or is not a regular file",
                        null,
                        explicit,
                        source);
            }
            return path;
        }
        return sources.searchPath().stream()
                .filter(Files::isRegularFile)
                .findFirst()
                .orElse(null);
    }
}
