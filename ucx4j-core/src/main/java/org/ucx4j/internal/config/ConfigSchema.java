package org.ucx4j.internal.config;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Recognises configuration paths against the keys registered by the modules on the path: canonical
 * keys, entries of the {@code environment} map, groups such as {@code memory-pool}, Dask's own
 * spellings such as {@code rmm.pool-size}, and names that belong to a ucx4j module that is not on
 * the path ({@link ModuleKeyNames}).
 *
 * <p>Names are normalised the way Dask does it, and case-insensitively as environment variables
 * need: {@code Memory_Pool} and {@code memory-pool} are the same segment.
 *
 * <p>This class knows names only; types, defaults and values are {@code org.ucx4j.ConfigKey}'s.
 *
 * <p>Threading: immutable after construction, safe everywhere.
 */
public final class ConfigSchema {
    /** The map whose entries become {@code UCX_*} settings. */
    public static final String ENVIRONMENT = "environment";

    private static final String ENVIRONMENT_PREFIX = ENVIRONMENT + ".";
    private static final Pattern ENTRY_NAME = Pattern.compile("[a-z0-9][a-z0-9-]*");

    private final List<String> keyNames;
    private final Map<String, String> daskSpellings;
    private final Set<String> modules;

    /**
     * Creates a schema.
     *
     * @param keyNames every registered key's canonical name, in documentation order
     * @param daskSpellings Dask's names of keys that Dask spells differently ({@code rmm.pool-size}) to
     *     the canonical name ({@code memory-pool.size})
     * @param modules the modules whose keys are registered, for example {@code ucx4j-core}, {@code ucx4j-comm}
     */
    public ConfigSchema(List<String> keyNames, Map<String, String> daskSpellings, Set<String> modules) {
        this.keyNames = List.copyOf(keyNames);
        this.daskSpellings = Map.copyOf(daskSpellings);
        this.modules = Set.copyOf(modules);
    }

    /** What a path names. */
    public sealed interface Target {}

    /**
     * A key of the schema.
     *
     * @param name the key's canonical name
     */
    public record Key(String name) implements Target {}

    /**
     * One entry of the {@code environment} map.
     *
     * @param name the normalised entry name, for example {@code log-level}
     */
    public record EnvironmentEntry(String name) implements Target {}

    /** The {@code environment} map itself. */
    public record EnvironmentMap() implements Target {}

    /** A group with keys below it, such as {@code memory-pool} or {@code auth}. */
    public record Group() implements Target {}

    /**
     * A key or group of a ucx4j module that is not on the path: ignored with a warning.
     *
     * @param module the module, for example {@code ucx4j-comm}
     */
    public record OtherModule(String module) implements Target {}

    /** Nothing the schema knows. */
    public record Unknown() implements Target {}

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
     * @param daskSpellings whether Dask's spellings ({@code rmm.pool-size}) are accepted
     * @return the target
     */
    public Target classify(String path, boolean daskSpellings) {
        if (keyNames.contains(path)) {
            return new Key(path);
        }
        if (daskSpellings && this.daskSpellings.containsKey(path)) {
            return new Key(this.daskSpellings.get(path));
        }
        if (path.equals(ENVIRONMENT)) {
            return new EnvironmentMap();
        }
        if (path.startsWith(ENVIRONMENT_PREFIX)) {
            String name = path.substring(ENVIRONMENT_PREFIX.length());
            return name.contains(".") ? new Unknown() : new EnvironmentEntry(name);
        }
        String groupPrefix = path + ".";
        if (keyNames.stream().anyMatch(k -> k.startsWith(groupPrefix))
                || (daskSpellings && this.daskSpellings.keySet().stream().anyMatch(k -> k.startsWith(groupPrefix)))) {
            return new Group();
        }
        Optional<String> owner = ModuleKeyNames.owner(path);
        if (owner.isPresent() && !modules.contains(owner.get())) {
            return new OtherModule(owner.get());
        }
        return new Unknown();
    }

    /**
     * The canonical key that Dask spells this way.
     *
     * @param daskName for example {@code rmm.pool-size}
     * @return the key's name, or empty when no registered key has that Dask spelling
     */
    public Optional<String> keyForDaskSpelling(String daskName) {
        return Optional.ofNullable(daskSpellings.get(daskName));
    }

    /**
     * The Dask spelling of a key.
     *
     * @param keyName a canonical key name
     * @return Dask's name for it: its own spelling where it has one, else the same name
     */
    public String daskSpellingOf(String keyName) {
        return daskSpellings.entrySet().stream()
                .filter(e -> e.getValue().equals(keyName))
                .map(Map.Entry::getKey)
                .findFirst()
                .orElse(keyName);
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
    public String knownKeys() {
        return String.join(", ", keyNames) + ", environment.<name>";
    }

    @Override
    public String toString() {
        return "ConfigSchema[keys=" + keyNames + ", modules=" + modules + "]";
    }
}
