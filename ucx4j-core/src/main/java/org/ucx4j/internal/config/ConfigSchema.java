package org.ucx4j.internal.config;

import java.util.Locale;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Recognises configuration paths: canonical keys, entries of the {@code environment} map, groups
 * such as {@code memory-pool}, and Dask's own spelling {@code rmm.pool-size}.
 *
 * <p>Names are normalised the way Dask does it, and case-insensitively as environment variables
 * need: {@code Memory_Pool} and {@code memory-pool} are the same segment.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class ConfigSchema {
    /** The map whose entries become {@code UCX_*} settings. */
    public static final String ENVIRONMENT = "environment";

    private static final String ENVIRONMENT_PREFIX = ENVIRONMENT + ".";
    private static final String DASK_POOL_SIZE = "rmm.pool-size";
    private static final Pattern ENTRY_NAME = Pattern.compile("[a-z0-9][a-z0-9-]*");

    private ConfigSchema() {
    }

    /** What a path names. */
    public sealed interface Target {
    }

    /**
     * A key of the schema.
     *
     * @param key the key
     */
    public record Key(ConfigKey<?> key) implements Target {
    }

    /**
     * One entry of the {@code environment} map.
     *
     * @param name the normalised entry name, for example {@code log-level}
     */
    public record EnvironmentEntry(String name) implements Target {
    }

    /** The {@code environment} map itself. */
    public record EnvironmentMap() implements Target {
    }

    /** A group with keys below it, such as {@code memory-pool} or {@code auth}. */
    public record Group() implements Target {
    }

    /** Nothing the schema knows. */
    public record Unknown() implements Target {
    }

    /**
     * Normalises one name segment: lower case, {@code _} read as {@code -}.
     *
     * @param segment a segment as written
     * @return the normal form
     */
    public static String normalize(String segment) {
        return segment.trim().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * Says what a normalised dotted path names.
     *
     * @param path for example {@code memory-pool.size} or {@code environment.log-level}
     * @param daskSpellings whether Dask's {@code rmm.pool-size} is accepted for {@code memory-pool.size}
     * @return the target
     */
    public static Target classify(String path, boolean daskSpellings) {
        ConfigKey<?> key = ConfigKey.named(path);
        if (key != null) {
            return new Key(key);
        }
        if (daskSpellings && path.equals(DASK_POOL_SIZE)) {
            return new Key(ConfigKey.MEMORY_POOL_SIZE);
        }
        if (path.equals(ENVIRONMENT)) {
            return new EnvironmentMap();
        }
        if (path.startsWith(ENVIRONMENT_PREFIX)) {
            String name = path.substring(ENVIRONMENT_PREFIX.length());
            return name.contains(".") ? new Unknown() : new EnvironmentEntry(name);
        }
        String groupPrefix = path + ".";
        if (ConfigKey.ALL.stream().anyMatch(k -> k.name().startsWith(groupPrefix))
                || (daskSpellings && DASK_POOL_SIZE.startsWith(groupPrefix))) {
            return new Group();
        }
        return new Unknown();
    }

    /**
     * Whether an {@code environment} entry name can become a {@code UCX_*} variable name.
     *
     * @param name the normalised entry name
     * @return true for letters, digits and hyphens, not starting with a hyphen
     */
    public static boolean isValidEntryName(String name) {
        return ENTRY_NAME.matcher(name).matches();
    }

    /**
     * The UCX option name of an environment entry: {@code some-key} becomes {@code SOME_KEY}.
     *
     * @param entryName the normalised entry name
     * @return the option name, without the {@code UCX_} prefix
     */
    public static String ucxOptionName(String entryName) {
        return entryName.toUpperCase(Locale.ROOT).replace('-', '_');
    }

    /**
     * The known key names, for "unknown key" messages.
     *
     * @return the comma-separated canonical names, with {@code environment.<name>}
     */
    public static String knownKeys() {
        return ConfigKey.ALL.stream().map(ConfigKey::name).collect(Collectors.joining(", "))
                + ", environment.<name>";
    }
}
