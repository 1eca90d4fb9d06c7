package org.ucx4j;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import org.ucx4j.internal.config.ConfigSchema;
import org.ucx4j.internal.config.ModuleKeyNames;
import org.ucx4j.spi.ConfigKeySet;

/**
 * The keys every configuration reads: the core's ({@link UcxKeys}) and those of each module found
 * through {@link ServiceLoader} as a {@link ConfigKeySet}, in documentation order (the core first,
 * then the modules by name).
 *
 * <p>Threading: immutable. The discovered registry is computed once, on first use, and never changes
 * (the modules on the path do not change while a process runs).
 */
final class ConfigRegistry {
    private final List<ConfigKey<?>> keys;
    private final Map<String, ConfigKey<?>> byName;
    private final ConfigSchema schema;

    private ConfigRegistry(List<ConfigKeySet> moduleSets) {
        List<ConfigKeySet> sets = new ArrayList<>();
        sets.add(new CoreKeys());
        moduleSets.stream().sorted(Comparator.comparing(ConfigKeySet::module)).forEach(sets::add);
        Map<String, ConfigKey<?>> names = new LinkedHashMap<>();
        Map<String, String> owners = new LinkedHashMap<>();
        Map<String, String> daskSpellings = new LinkedHashMap<>();
        Set<String> modules = new LinkedHashSet<>();
        for (ConfigKeySet set : sets) {
            if (!modules.add(set.module())) {
                throw new IllegalStateException("two configuration key sets for module " + set.module());
            }
            for (ConfigKey<?> key : set.keys()) {
                String owner = owners.putIfAbsent(key.name(), set.module());
                if (owner != null) {
                    throw new IllegalStateException("configuration key '" + key.name() + "' is declared by both "
                            + owner + " and " + set.module());
                }
                checkOwned(set.module(), key);
                names.put(key.name(), key);
                key.daskSpelling().ifPresent(d -> daskSpellings.put(d, key.name()));
            }
        }
        this.keys = List.copyOf(names.values());
        this.byName = Map.copyOf(names);
        this.schema = new ConfigSchema(List.copyOf(names.keySet()), daskSpellings, modules);
    }

    /**
     * A ucx4j module's key must be listed as that module's in {@link ModuleKeyNames}, so that where the
     * module is absent the key is ignored with a warning rather than refused as misspelt. Other
     * modules' keys (third parties') are not checked: where they are absent, their keys are unknown.
     */
    private static void checkOwned(String module, ConfigKey<?> key) {
        if (!module.startsWith("ucx4j-") || module.equals(UcxKeys.MODULE)) {
            return;
        }
        if (!ModuleKeyNames.owner(key.name()).equals(Optional.of(module))) {
            throw new IllegalStateException("configuration key '" + key.name() + "' of " + module + " is not listed as "
                    + module + "'s in org.ucx4j.internal.config.ModuleKeyNames: add it there");
        }
    }

    /**
     * The keys of the core and of every module on the path.
     *
     * @return the registry, found once per process
     */
    static ConfigRegistry discovered() {
        return Discovered.REGISTRY;
    }

    /**
     * The keys of the core and of the given modules only: for tests, and for callers who load
     * modules themselves.
     *
     * @param moduleSets the modules' key sets
     * @return a new registry
     */
    static ConfigRegistry of(List<ConfigKeySet> moduleSets) {
        return new ConfigRegistry(moduleSets);
    }

    List<ConfigKey<?>> keys() {
        return keys;
    }

    ConfigKey<?> named(String name) {
        return byName.get(name);
    }

    ConfigSchema schema() {
        return schema;
    }

    /** The core's keys, registered like any module's. */
    private static final class CoreKeys implements ConfigKeySet {
        @Override
        public String module() {
            return UcxKeys.MODULE;
        }

        @Override
        public List<ConfigKey<?>> keys() {
            return UcxKeys.ALL;
        }
    }

    /** Holder: the service lookup runs on first use, once. */
    private static final class Discovered {
        static final ConfigRegistry REGISTRY =
                new ConfigRegistry(ServiceLoader.load(ConfigKeySet.class, ConfigKeySet.class.getClassLoader()).stream()
                        .map(ServiceLoader.Provider::get)
                        .toList());
    }
}
