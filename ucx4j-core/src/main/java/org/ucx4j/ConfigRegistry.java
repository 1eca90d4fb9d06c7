package org.ucx4j;

import java.lang.ref.SoftReference;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.WeakHashMap;
import org.ucx4j.internal.config.ConfigSchema;
import org.ucx4j.internal.config.ModuleKeyNames;
import org.ucx4j.spi.ConfigKeySet;

/**
 * The keys every configuration reads: the core's ({@link UcxKeys}) and those of each module found
 * through {@link ServiceLoader} as a {@link ConfigKeySet}, in documentation order (the core first,
 * then the modules by name).
 *
 * <p>Where modules are found: through the core's own class loader (the module or class path the core
 * came from) and through the calling thread's context class loader, together. Containers such as
 * Spark load applications' jars (a shaded ucx4j-spark, ucx4j-comm given with {@code --jars}) in a
 * child loader that the core's loader cannot see into; they make that loader the context loader of
 * the threads that run application code, so its modules' keys are found there. A module found through
 * both is taken once (the core's loader's first).
 *
 * <p>Threading: immutable, and safe from any thread. The registry of the core's loader is computed
 * once, on first use; one for another context loader once per loader (kept while memory allows, and
 * never keeping the loader itself alive).
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
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        if (context == null || seenBy(context, Discovered.OWN_LOADER)) {
            return Discovered.REGISTRY;
        }
        synchronized (BY_CONTEXT_LOADER) {
            SoftReference<ConfigRegistry> known = BY_CONTEXT_LOADER.get(context);
            ConfigRegistry registry = known == null ? null : known.get();
            if (registry == null) {
                List<ConfigKeySet> sets = new ArrayList<>(keySets(Discovered.OWN_LOADER));
                sets.addAll(keySetsOf(context));
                registry = new ConfigRegistry(deduplicated(sets));
                BY_CONTEXT_LOADER.put(context, new SoftReference<>(registry));
            }
            return registry;
        }
    }

    /** Registries for context loaders other than the core's own: weak keys, soft values. */
    private static final Map<ClassLoader, SoftReference<ConfigRegistry>> BY_CONTEXT_LOADER = new WeakHashMap<>();

    /**
     * Whether everything {@code loader} sees, {@code own} sees too: it is {@code own} or one of its
     * ancestors (class loaders delegate to their parents first).
     */
    private static boolean seenBy(ClassLoader loader, ClassLoader own) {
        for (ClassLoader l = own; l != null; l = l.getParent()) {
            if (l == loader) {
                return true;
            }
        }
        return false;
    }

    /** The key sets found through the core's own loader; a broken provider there is an error. */
    private static List<ConfigKeySet> keySets(ClassLoader loader) {
        return ServiceLoader.load(ConfigKeySet.class, loader).stream()
                .map(ServiceLoader.Provider::get)
                .toList();
    }

    /**
     * The key sets a context loader lists, skipping entries that are not providers of the core's
     * {@link ConfigKeySet}: a container's loader may hold a second copy of ucx4j (its providers then
     * implement that copy's interface), which is that copy's business, not a reason to refuse every
     * configuration here.
     */
    private static List<ConfigKeySet> keySetsOf(ClassLoader context) {
        List<ConfigKeySet> found = new ArrayList<>();
        Iterator<ConfigKeySet> it =
                ServiceLoader.load(ConfigKeySet.class, context).iterator();
        while (true) {
            try {
                if (!it.hasNext()) {
                    return found;
                }
                found.add(it.next());
            } catch (ServiceConfigurationError notOurs) {
                // skipped; the iterator goes on with the next entry
            }
        }
    }

    /** One key set per module name, the first found. */
    private static List<ConfigKeySet> deduplicated(List<ConfigKeySet> sets) {
        Map<String, ConfigKeySet> byModule = new LinkedHashMap<>();
        sets.forEach(set -> byModule.putIfAbsent(set.module(), set));
        return List.copyOf(byModule.values());
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
        static final ClassLoader OWN_LOADER = ConfigKeySet.class.getClassLoader();
        static final ConfigRegistry REGISTRY = new ConfigRegistry(keySets(OWN_LOADER));
    }
}
