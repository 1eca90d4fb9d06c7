package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxConfigException;

/** ucx4j-cuda's keys: registered through ServiceLoader, declared as documented, validated at load. */
class CudaKeysTest {
    @Test
    void registeredWithTheConfigurationWhenCudaIsOnThePath() {
        // Registration also checks that the core lists each key as cuda's.
        UcxConfig config = UcxConfig.builder().set("memory-pool.size", "1GB").build();
        assertTrue(config.keys().containsAll(CudaKeys.ALL), config.keys().toString());
        assertEquals(Optional.of(1_000_000_000L), config.find(CudaKeys.MEMORY_POOL_SIZE));
        assertEquals("builder", config.source(CudaKeys.MEMORY_POOL_SIZE));
        assertEquals(Optional.empty(), config.find(CudaKeys.MEMORY_POOL_MAXIMUM_SIZE));
    }

    @Test
    void declaredAsDocumented() {
        assertEquals(Optional.of("rmm.pool-size"), CudaKeys.MEMORY_POOL_SIZE.daskSpelling());
        assertEquals(Optional.empty(), CudaKeys.MEMORY_POOL_SIZE.defaultValue());
        assertEquals(1L << 30, CudaKeys.MEMORY_POOL_SIZE.parse("1GiB"));
    }

    @Test
    void maximumBelowInitialSizeIsRefusedNamingBoth() {
        UcxConfigException e = assertThrows(UcxConfigException.class, () -> UcxConfig.builder()
                .set(CudaKeys.MEMORY_POOL_SIZE, 2_000_000_000L)
                .set("memory-pool.maximum-size", "1GB")
                .build());
        assertTrue(
                e.getMessage().contains("'memory-pool.maximum-size' from builder: must be at least memory-pool.size"),
                e.getMessage());
        assertThrows(
                UcxConfigException.class,
                () -> UcxConfig.builder().set(CudaKeys.MEMORY_POOL_SIZE, -1L).build());
    }
}
