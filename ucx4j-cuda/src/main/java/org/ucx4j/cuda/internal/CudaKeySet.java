package org.ucx4j.cuda.internal;

import java.util.List;
import org.ucx4j.ConfigKey;
import org.ucx4j.cuda.CudaKeys;
import org.ucx4j.spi.ConfigKeySet;

/**
 * Registers {@link CudaKeys} with the configuration, as a {@link java.util.ServiceLoader} provider
 * (module-info {@code provides}, and {@code META-INF/services} for the class path).
 *
 * <p>Threading: stateless.
 */
public final class CudaKeySet implements ConfigKeySet {
    /** For {@link java.util.ServiceLoader}. */
    public CudaKeySet() {}

    @Override
    public String module() {
        return "ucx4j-cuda";
    }

    @Override
    public List<ConfigKey<?>> keys() {
        return CudaKeys.ALL;
    }
}
