package org.ucx4j;

import java.util.List;
import org.ucx4j.spi.ConfigKeySet;

/**
 * Stand-ins for ucx4j-comm's and ucx4j-cuda's keys, declared as those modules declare theirs: the core
 * cannot depend on its modules, yet its tests check how module keys are read, resolved and listed. The
 * modules' own tests check their real declarations ({@code CommKeysTest}, {@code CudaKeysTest}).
 */
final class ModuleKeysForTests {
    static final ConfigKey<Boolean> MULTI_BUFFER = ConfigKey.flag("multi-buffer", "one multi-send per message");
    static final ConfigKey<Integer> MAX_FRAMES = ConfigKey.count("max-frames", 100_000, "most frames per message");
    static final ConfigKey<Long> MAX_FRAME_SIZE =
            ConfigKey.size("max-frame-size", 64L << 30, 1, Long.MAX_VALUE, "largest frame");
    static final ConfigKey<String> AUTH_SECRET = ConfigKey.secret("auth.secret", "shared secret");
    static final ConfigKey<String> AUTH_SECRET_FILE = ConfigKey.text("auth.secret-file", "file holding the secret");
    static final ConfigKey<Long> MEMORY_POOL_SIZE =
            ConfigKey.size("memory-pool.size", "initial GPU pool size").withDaskSpelling("rmm.pool-size");
    static final ConfigKey<Long> MEMORY_POOL_MAXIMUM_SIZE =
            ConfigKey.size("memory-pool.maximum-size", "largest GPU pool size").withAtLeast(MEMORY_POOL_SIZE);

    /** A module set named as ucx4j-comm, so that its names count as present. */
    static final ConfigKeySet COMM =
            set("ucx4j-comm", List.of(MULTI_BUFFER, MAX_FRAMES, MAX_FRAME_SIZE, AUTH_SECRET, AUTH_SECRET_FILE));
    /** A module set named as ucx4j-cuda. */
    static final ConfigKeySet CUDA = set("ucx4j-cuda", List.of(MEMORY_POOL_SIZE, MEMORY_POOL_MAXIMUM_SIZE));

    /** The core's keys and both stand-ins. */
    static final ConfigRegistry ALL_MODULES = ConfigRegistry.of(List.of(COMM, CUDA));
    /** The core's keys only, as with nothing but ucx4j-core on the path. */
    static final ConfigRegistry CORE_ONLY = ConfigRegistry.of(List.of());

    private ModuleKeysForTests() {}

    static ConfigKeySet set(String module, List<ConfigKey<?>> keys) {
        return new ConfigKeySet() {
            @Override
            public String module() {
                return module;
            }

            @Override
            public List<ConfigKey<?>> keys() {
                return keys;
            }
        };
    }
}
