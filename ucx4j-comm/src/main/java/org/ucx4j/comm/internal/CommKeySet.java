package org.ucx4j.comm.internal;

import java.util.List;
import org.ucx4j.ConfigKey;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.spi.ConfigKeySet;

/**
 * Registers {@link CommKeys} with the configuration, as a {@link java.util.ServiceLoader} provider
 * (module-info {@code provides}, and {@code META-INF/services} for the class path).
 *
 * <p>Threading: stateless.
 */
public final class CommKeySet implements ConfigKeySet {
    /** For {@link java.util.ServiceLoader}. */
    public CommKeySet() {}

    @Override
    public String module() {
        return "ucx4j-comm";
    }

    @Override
    public List<ConfigKey<?>> keys() {
        return CommKeys.ALL;
    }
}
