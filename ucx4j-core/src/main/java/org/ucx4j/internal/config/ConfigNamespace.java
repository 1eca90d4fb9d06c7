package org.ucx4j.internal.config;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfigException;

/**
 * A place in the configuration tree where ucx4j's keys live: its own {@code ucx4j} block, Dask's
 * {@code distributed-ucxx} block, and the legacy Dask spellings.
 *
 * <p>The same namespace is read from YAML (a block at {@link #path()}) and from environment
 * variables (the prefix {@link #envPrefix()}). A strict namespace refuses unknown keys; the Dask
 * namespaces ignore them, because there they belong to Dask. Values from Dask namespaces treat null
 * as "unset" (see {@link ConfigOrigin#nullMeansUnset()}).
 *
 * <p>Threading: immutable constants.
 *
 * @param path the dotted block path in YAML, for example {@code distributed.comm.ucx}
 * @param envPrefix the environment variable prefix, upper case, for example {@code DASK_DISTRIBUTED__COMM__UCX__}
 * @param strict whether unknown keys are errors
 * @param deprecated whether reading a value here logs a deprecation warning
 * @param poolSizeOnly whether only Dask's {@code pool-size} is read here (the {@code rmm} blocks): the key
 *     whose Dask spelling is {@code rmm.pool-size}
 */
public record ConfigNamespace(String path, String envPrefix, boolean strict, boolean deprecated, boolean poolSizeOnly) {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigNamespace.class);
    /** The block under which Dask spells the pool size ({@code rmm.pool-size}); the rmm namespaces read only that. */
    private static final String RMM_PREFIX = "rmm.";

    /** ucx4j's own keys: the {@code ucx4j:} YAML block and {@code UCX4J__*} variables. */
    public static final ConfigNamespace UCX4J = new ConfigNamespace("ucx4j", "UCX4J__", true, false, false);
    /** distributed-ucxx's block: {@code distributed-ucxx:} and {@code DASK_DISTRIBUTED_UCXX__*}. */
    public static final ConfigNamespace DISTRIBUTED_UCXX = dask("distributed-ucxx", false, false);
    /** Distributed's legacy UCX block: {@code distributed.comm.ucx}. */
    public static final ConfigNamespace DISTRIBUTED_COMM_UCX = dask("distributed.comm.ucx", true, false);
    /** Distributed's legacy pool size: {@code distributed.rmm.pool-size}. */
    public static final ConfigNamespace DISTRIBUTED_RMM = dask("distributed.rmm", true, true);
    /** Dask-CUDA's older spelling: {@code ucx.*} ({@code DASK_UCX__*}). */
    public static final ConfigNamespace DASK_CUDA_UCX = dask("ucx", true, false);
    /** Dask-CUDA's older pool size: {@code rmm.pool-size} ({@code DASK_RMM__POOL_SIZE}). */
    public static final ConfigNamespace DASK_CUDA_RMM = dask("rmm", true, true);

    private static ConfigNamespace dask(String path, boolean deprecated, boolean poolSizeOnly) {
        String prefix = "DASK_"
                + Arrays.stream(path.split("\\."))
                        .map(s -> s.toUpperCase(Locale.ROOT).replace('-', '_'))
                        .collect(Collectors.joining("__"))
                + "__";
        return new ConfigNamespace(path, prefix, false, deprecated, poolSizeOnly);
    }

    /**
     * The block path as segments.
     *
     * @return for example {@code [distributed, comm, ucx]}
     */
    public List<String> segments() {
        return List.of(path.split("\\."));
    }

    /**
     * The key as Dask (or ucx4j) spells it, for messages.
     *
     * @param relativePath the path below this namespace
     * @return for example {@code distributed.comm.ucx.tcp}
     */
    public String fullKey(String relativePath) {
        return path + "." + relativePath;
    }

    /**
     * Classifies one value found below this namespace and adds it to the layer, or refuses it
     * (strict namespaces) or skips it (Dask namespaces, where other keys are Dask's own).
     *
     * @param layer the layer being filled
     * @param schema the registered keys
     * @param relativePath the normalised dotted path below this namespace
     * @param value the value: text, or null for an explicit none
     * @param written the value as written, for messages
     * @param where the source, for example {@code env UCX4J__TCP} or {@code /x/ucx4j.yaml:3}
     * @throws UcxConfigException for unknown keys or misplaced values in a strict namespace
     */
    public void accept(
            ConfigLayer layer, ConfigSchema schema, String relativePath, Object value, String written, String where) {
        ConfigSchema.Target target = poolSizeOnly
                ? schema.keyForDaskSpelling(RMM_PREFIX + relativePath)
                        .<ConfigSchema.Target>map(ConfigSchema.Key::new)
                        .orElse(new ConfigSchema.Unknown())
                : schema.classify(relativePath, !strict);
        switch (target) {
            case ConfigSchema.Key k ->
                layer.add(new RawSetting(k.name(), value, written, origin(relativePath, relativePath, where)));
            case ConfigSchema.EnvironmentEntry e ->
                layer.add(new RawSetting(
                        ConfigSchema.ENVIRONMENT + "." + e.name(),
                        value,
                        written,
                        origin(relativePath, ConfigSchema.ENVIRONMENT, where)));
            case ConfigSchema.EnvironmentMap m ->
                refuseOrSkip(relativePath, where, "'environment' is a map: set one entry, as environment.<name>");
            case ConfigSchema.Group g ->
                refuseOrSkip(relativePath, where, "'" + relativePath + "' is a group: set one of the keys below it");
            case ConfigSchema.OtherModule m -> {
                if (strict) {
                    ConfigWarnings.warnOnce(
                            "module:" + relativePath,
                            "ucx4j config key '" + relativePath + "' from " + where + " belongs to " + m.module()
                                    + ", which is not on the class or module path: ignored");
                } else {
                    LOG.debug(
                            "ignoring {} from {}: a key of {}, not on the path",
                            fullKey(relativePath),
                            where,
                            m.module());
                }
            }
            case ConfigSchema.Unknown u -> {
                if (strict) {
                    throw ConfigErrors.unknownKey(relativePath, ConfigOrigin.of(where), schema);
                }
                LOG.debug("ignoring {} from {}: not a UCX key (Dask's own)", fullKey(relativePath), where);
            }
        }
    }

    private void refuseOrSkip(String relativePath, String where, String reason) {
        if (strict) {
            throw ConfigErrors.misplacedValue(relativePath, ConfigOrigin.of(where), reason);
        }
        LOG.debug("ignoring {} from {}: {}", fullKey(relativePath), where, reason);
    }

    private ConfigOrigin origin(String relativePath, String deprecationPath, String where) {
        if (strict) {
            return ConfigOrigin.of(where);
        }
        return new ConfigOrigin(
                where + " (" + fullKey(relativePath) + ")", deprecated ? fullKey(deprecationPath) : null, true);
    }
}
