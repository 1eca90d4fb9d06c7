package org.ucx4j.cuda;

import java.util.List;
import org.ucx4j.ConfigKey;

/**
 * ucx4j-cuda's configuration keys: the GPU memory pool. Read with
 * {@code config.get(CudaKeys.MEMORY_POOL_SIZE)} on an {@link org.ucx4j.UcxConfig}; set with
 * {@code UcxConfig.builder().set(CudaKeys.MEMORY_POOL_SIZE, 1L << 30)}, {@code -Ducx4j.memory-pool.size=1GiB},
 * {@code UCX4J__MEMORY_POOL__SIZE=1GiB}, {@code memory-pool: {size: 1GiB}} in {@code ucx4j.yaml}, or Dask's
 * {@code rmm.pool-size} ({@code DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE}, {@code DASK_RMM__POOL_SIZE}, ...).
 * Sizes follow {@link org.ucx4j.ByteSize}: {@code 1GB} is 10^9 bytes, {@code 1GiB} 2^30. They are registered
 * with the configuration whenever ucx4j-cuda is on the class or module path.
 *
 * <p>Threading: immutable constants.
 */
public final class CudaKeys {
    /** The initial GPU memory pool size in bytes (Dask: {@code rmm.pool-size}). Unset: no pool. */
    public static final ConfigKey<Long> MEMORY_POOL_SIZE = ConfigKey.size(
                    "memory-pool.size", "initial GPU memory pool size (Dask: rmm.pool-size)")
            .withDaskSpelling("rmm.pool-size");
    /** The largest the GPU memory pool may grow, in bytes; at least {@link #MEMORY_POOL_SIZE}. Unset: unlimited. */
    public static final ConfigKey<Long> MEMORY_POOL_MAXIMUM_SIZE = ConfigKey.size(
                    "memory-pool.maximum-size", "largest the GPU memory pool may grow; at least memory-pool.size")
            .withAtLeast(MEMORY_POOL_SIZE);

    /** ucx4j-cuda's keys, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(MEMORY_POOL_SIZE, MEMORY_POOL_MAXIMUM_SIZE);

    private CudaKeys() {}
}
