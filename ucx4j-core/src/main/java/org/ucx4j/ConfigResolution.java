package org.ucx4j;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.ucx4j.internal.config.ConfigErrors;
import org.ucx4j.internal.config.ConfigLayer;
import org.ucx4j.internal.config.ConfigLoader;
import org.ucx4j.internal.config.ConfigOrigin;
import org.ucx4j.internal.config.ConfigSchema;
import org.ucx4j.internal.config.ConfigWarnings;
import org.ucx4j.internal.config.RawSetting;
import org.ucx4j.internal.config.ResolvedConfig;
import org.ucx4j.internal.config.ResolvedValue;

/**
 * Converts the sources' raw values with each key's type and range, and resolves every registered key:
 * the first layer that sets it wins ({@link ConfigLoader} gives the order); Dask's nulls defer to the
 * next layer; keys with a default cannot be unset; a key declared {@link ConfigKey#withAtLeast} another
 * is checked against it.
 *
 * <p>Every value of every layer is checked, also those that lose, so that a mistake is reported where
 * it was made. Either a complete {@link ResolvedConfig} comes back or a {@link UcxConfigException}
 * naming the key, the value and its source is thrown.
 *
 * <p>Threading: stateless (deprecation warnings are logged once per process, see {@link ConfigWarnings}).
 */
final class ConfigResolution {
    private ConfigResolution() {}

    static ResolvedConfig resolve(ConfigRegistry registry, ConfigLoader.Loaded loaded) {
        List<Map<String, ResolvedValue>> converted =
                loaded.layers().stream().map(l -> convert(registry, l)).toList();
        Map<ConfigKey<?>, ResolvedValue> values = new LinkedHashMap<>();
        for (ConfigKey<?> key : registry.keys()) {
            ResolvedValue winner = resolve(registry.schema(), converted, key.name());
            if (winner != null && winner.value() == null && key.defaultValue().isPresent()) {
                throw ConfigErrors.invalidValue(
                        key.name(),
                        "none",
                        winner.origin(),
                        "this key cannot be unset; leave it out" + " to get the default "
                                + key.display(key.defaultValue().get()),
                        false);
            }
            values.put(
                    key,
                    winner != null
                            ? winner
                            : new ResolvedValue(key.defaultValue().orElse(null), ConfigOrigin.DEFAULT));
        }
        TreeSet<String> entryPaths = new TreeSet<>();
        converted.forEach(layer -> layer.keySet().stream()
                .filter(p -> p.startsWith(ConfigSchema.ENVIRONMENT + "."))
                .forEach(entryPaths::add));
        Map<String, ResolvedValue> environment = new TreeMap<>();
        for (String path : entryPaths) {
            ResolvedValue winner = resolve(registry.schema(), converted, path);
            if (winner != null && winner.value() != null) {
                environment.put(path.substring(ConfigSchema.ENVIRONMENT.length() + 1), winner);
            }
        }
        registry.keys().forEach(key -> checkAtLeast(key, values));
        return new ResolvedConfig(values, new TreeMap<>(environment), loaded.ucxVariables(), loaded.configFile());
    }

    private static Map<String, ResolvedValue> convert(ConfigRegistry registry, ConfigLayer layer) {
        Map<String, ResolvedValue> out = new LinkedHashMap<>();
        for (RawSetting s : layer.settings()) {
            out.put(s.path(), new ResolvedValue(s.value() == null ? null : convertValue(registry, s), s.origin()));
        }
        return out;
    }

    private static Object convertValue(ConfigRegistry registry, RawSetting s) {
        ConfigKey<?> key = registry.named(s.path());
        String written = s.written() != null ? s.written() : String.valueOf(s.value());
        if (key == null) {
            String name = s.path().substring(ConfigSchema.ENVIRONMENT.length() + 1);
            if (!ConfigSchema.isValidEntryName(name)) {
                throw ConfigErrors.invalidValue(
                        s.path(),
                        written,
                        s.origin(),
                        "environment entry names are letters, digits and '-' (some-key becomes UCX_SOME_KEY)",
                        false);
            }
            if (!(s.value() instanceof String)) {
                throw ConfigErrors.invalidValue(s.path(), written, s.origin(), "expected text", false);
            }
            return s.value();
        }
        try {
            return key.convert(s.value());
        } catch (IllegalArgumentException e) {
            throw ConfigErrors.invalidValue(key.name(), written, s.origin(), e.getMessage(), key.isSecret());
        }
    }

    private static ResolvedValue resolve(ConfigSchema schema, List<Map<String, ResolvedValue>> layers, String path) {
        for (Map<String, ResolvedValue> layer : layers) {
            ResolvedValue v = layer.get(path);
            if (v == null || (v.value() == null && v.origin().nullMeansUnset())) {
                continue;
            }
            if (v.origin().deprecatedKey() != null) {
                String key = v.origin().deprecatedKey();
                ConfigWarnings.warnOnce(
                        key,
                        "ucx4j config: " + v.origin().description() + " is a deprecated spelling; use "
                                + replacement(schema, path) + " instead");
            }
            return v;
        }
        return null;
    }

    private static String replacement(ConfigSchema schema, String path) {
        boolean entry = path.startsWith(ConfigSchema.ENVIRONMENT + ".");
        String ucx4j = entry ? ConfigSchema.ENVIRONMENT : path;
        String dask = entry ? ConfigSchema.ENVIRONMENT : schema.daskSpellingOf(path);
        return "'distributed-ucxx." + dask + "' or ucx4j's own '" + ucx4j + "' (UCX4J__"
                + ucx4j.toUpperCase(Locale.ROOT).replace("-", "_").replace(".", "__") + ")";
    }

    @SuppressWarnings("unchecked")
    private static <T> void checkAtLeast(ConfigKey<T> key, Map<ConfigKey<?>, ResolvedValue> values) {
        ConfigKey<T> lower = key.atLeast();
        if (lower == null || !values.containsKey(lower)) {
            return;
        }
        ResolvedValue v = values.get(key);
        ResolvedValue floor = values.get(lower);
        if (v.value() != null
                && floor.value() != null
                && ((Comparable<T>) v.value()).compareTo((T) floor.value()) < 0) {
            throw ConfigErrors.invalidValue(
                    key.name(),
                    key.display(v.value()),
                    v.origin(),
                    "must be at least " + lower.name() + ", which is " + lower.display(floor.value()) + " from "
                            + floor.origin(),
                    false);
        }
    }
}
