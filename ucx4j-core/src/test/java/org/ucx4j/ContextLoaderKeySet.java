package org.ucx4j;

import java.util.List;
import org.ucx4j.spi.ConfigKeySet;

/**
 * A third party's key set that only a child class loader lists (its {@code META-INF/services} file is
 * written by {@link ConfigRegistryLoaderTest}, never on the test class path): as an application jar
 * under Spark's executor loader would be.
 */
public final class ContextLoaderKeySet implements ConfigKeySet {
    static final ConfigKey<String> SETTING = ConfigKey.text("acme.context-setting", "a key only a child loader lists");

    /** For {@link java.util.ServiceLoader}. */
    public ContextLoaderKeySet() {}

    @Override
    public String module() {
        return "acme-context";
    }

    @Override
    public List<ConfigKey<?>> keys() {
        return List.of(SETTING);
    }
}
