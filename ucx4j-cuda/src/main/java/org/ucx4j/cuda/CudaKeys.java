package org.ucx4j.cuda;

import java.util.List;
import org.ucx4j.ConfigKey;

/**
 * ucx4j-cuda's configuration keys: the GPU memory pool and the spill store. Read with
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

    /**
     * The {@link SpillStore}'s device tier limit (Dask-CUDA's {@code device-memory-limit}): a size
     * ({@code 5GB}, {@code 4GiB}, a number of bytes above 1), a fraction of the GPU's memory ({@code 0.8}; a
     * plain number of at most 1), a percentage ({@code 80%}) or {@code auto}. Unset or {@code auto}: 80% of the
     * GPU. Past it the store spills its least recently used buffers to host memory.
     */
    public static final ConfigKey<String> DEVICE_MEMORY_LIMIT = ConfigKey.text(
            "device-memory-limit",
            "spill store: device tier limit, a size, a fraction of the GPU (0.8) or auto (80% of the GPU)");
    /**
     * The {@link SpillStore}'s host tier limit (Dask's {@code memory-limit}), in the same forms as
     * {@link #DEVICE_MEMORY_LIMIT}, a fraction being of the memory this process may use (its container's
     * limit when there is one, else the machine's). Unset or {@code auto}: 80% of that memory divided by the
     * number of GPUs this process sees (Dask's "RAM / workers" with one worker per GPU, since each worker sees
     * every GPU, less a margin: the tier is pinned memory). It counts the pinned memory the store holds
     * (blocks by size class, idle and staging blocks). Past it the store spills host buffers to disk.
     */
    public static final ConfigKey<String> MEMORY_LIMIT = ConfigKey.text(
            "memory-limit",
            "spill store: host tier limit, a size, a fraction of the process's memory or auto (80% of it / GPUs)");
    /**
     * Where the {@link SpillStore} writes its disk tier (Dask's {@code local-directory}): an existing,
     * writable directory, in which each store makes a directory of its own. Unset: {@code java.io.tmpdir}.
     */
    public static final ConfigKey<String> LOCAL_DIRECTORY = ConfigKey.text(
            "local-directory", "spill store: an existing directory for the disk tier (default: java.io.tmpdir)");
    /**
     * Whether the {@link SpillStore} logs each move between tiers at INFO (Dask-CUDA's {@code log-spilling}):
     * the buffer, bytes, tiers, reason and time. Default false (they go to DEBUG).
     */
    public static final ConfigKey<Boolean> LOG_SPILLING =
            ConfigKey.flag("log-spilling", false, "spill store: log each spill at INFO with bytes, tiers and time");

    /** ucx4j-cuda's keys, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(
            MEMORY_POOL_SIZE,
            MEMORY_POOL_MAXIMUM_SIZE,
            DEVICE_MEMORY_LIMIT,
            MEMORY_LIMIT,
            LOCAL_DIRECTORY,
            LOG_SPILLING);

    private CudaKeys() {}
}
