package org.ucx4j.spi;

import java.util.List;
import org.ucx4j.ConfigKey;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;

/**
 * The configuration keys one module owns: how a module registers its keys with the one configuration
 * that every module reads ({@link UcxConfig}).
 *
 * <p>A module provides one implementation through {@link java.util.ServiceLoader}: a
 * {@code provides org.ucx4j.spi.ConfigKeySet with ...} line in its {@code module-info.java} for the module
 * path, and a {@code META-INF/services/org.ucx4j.spi.ConfigKeySet} file for the class path. The core's own
 * keys ({@link UcxKeys}) are always registered. Every key of every module found is then read from every
 * source, listed by {@link UcxConfig#entries()} and {@code ucx4j info}, and checked at load.
 *
 * <p>A key of a ucx4j module that is not on the path (say {@code max-frames} without ucx4j-comm) is
 * not an error in ucx4j's own sources: it is ignored with a warning naming the module, so that one
 * {@code ucx4j.yaml} serves applications with different sets of modules. Any other unknown key is an
 * error there.
 *
 * <p>Threading: implementations are immutable; {@link #keys()} returns the same list every time.
 */
public interface ConfigKeySet {
    /**
     * The module that owns the keys, as messages name it.
     *
     * @return for example {@code ucx4j-comm}
     */
    String module();

    /**
     * The keys, in documentation order.
     *
     * @return an unmodifiable list; no name may repeat one of another module
     */
    List<ConfigKey<?>> keys();
}
