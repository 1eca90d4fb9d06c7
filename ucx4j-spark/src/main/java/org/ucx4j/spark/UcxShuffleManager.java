package org.ucx4j.spark;

import java.net.URI;
import java.util.Map;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.CommContext;

/**
 * Spark's sort-based shuffle with its remote fetches over ucx4j ({@code ucx://}, or {@code tcp://} where
 * UCX is missing): {@code --conf spark.shuffle.manager=org.ucx4j.spark.UcxShuffleManager}.
 *
 * <p>Everything but the remote fetch path is Spark's {@link SortShuffleManager}: the writers, the index
 * and data files, local and host-local reads. Each executor serves its blocks from those files on a ucx4j
 * comm listener on a free port ({@link ShuffleBlockServer}) and registers the address with the driver
 * ({@link ExecutorAddressRegistry}); reduce tasks fetch remote blocks through {@link UcxBlockStoreClient}.
 * Failures surface as Spark's own fetch failures, so the scheduler re-runs lost map output. Settings:
 * {@link ShuffleTransportSettings} and docs/SPARK.md.
 *
 * <p>Start-up: an executor starts its server and registers it with the driver when Spark creates this
 * shuffle manager (Spark 4.2 does so after the executor's block manager is ready), on a background thread,
 * so that executors that never run a shuffle task are found too; a map task waits for the registration
 * only when it ends (its output is announced then), so the start overlaps the first task's work. Where
 * that is not possible (no block manager yet, or the start failed: the reason is logged) it starts at the
 * first shuffle task instead, which then fails with the reason. In {@code local} mode (the driver is the executor) it starts at the first shuffle task.
 * Push-based shuffle (which needs Spark's external shuffle service) is left to Spark's reader.
 *
 * <p>Threading: Spark calls it from task threads concurrently; start-up happens once. Ownership: Spark
 * creates it and calls {@link #stop()}, which closes the server, the client and their comms.
 */
public final class UcxShuffleManager extends SortShuffleManager {
    private static final Logger LOG = LoggerFactory.getLogger(UcxShuffleManager.class);

    private final SparkConf conf;
    private final boolean isDriver;
    private final Object lock = new Object();
    private volatile ExecutorAddressRegistry.Driver registry;
    private volatile Executor executor;
    private boolean stopped;
    /**
     * A server (and its context) of a start that failed after the server listened, kept for the next
     * start: the driver keeps an executor's first address, and may have recorded it although its answer
     * was lost, so the next start registers this same address again. Guarded by {@link #lock}.
     */
    private CommContext keptContext;

    private ShuffleBlockServer keptServer;
    /** The background start begun at executor start, or null. */
    private volatile Thread starting;

    /** The executor side's parts, created together on first use. */
    private record Executor(
            CommContext context,
            ShuffleTransportSettings settings,
            ShuffleBlockServer server,
            UcxBlockStoreClient client) {}

    /**
     * Created by Spark with {@code spark.shuffle.manager} set to this class.
     *
     * @param conf Spark's configuration
     * @param isDriver whether this is the driver (which runs the address registry)
     */
    public UcxShuffleManager(SparkConf conf, boolean isDriver) {
        super(conf);
        this.conf = conf;
        this.isDriver = isDriver;
        if (isDriver) {
            SparkEnv env = SparkEnv.get();
            if (env != null) {
                ExecutorAddressRegistry.Driver endpoint = new ExecutorAddressRegistry.Driver(env.rpcEnv());
                env.rpcEnv().setupEndpoint(ExecutorAddressRegistry.ENDPOINT_NAME, endpoint);
                registry = endpoint;
            }
        } else {
            startIfReady();
        }
    }

    /**
     * Created by Spark when it does not say whether this is the driver: the executor side.
     *
     * @param conf Spark's configuration
     */
    public UcxShuffleManager(SparkConf conf) {
        this(conf, false);
    }

    /**
     * Starts the executor's parts in the background now when its block manager is ready (else, or when
     * that fails, at the first shuffle task). Tasks that need them wait on {@link #executor()}'s lock.
     */
    private void startIfReady() {
        SparkEnv env = SparkEnv.get();
        if (env == null || env.blockManager() == null || env.blockManager().blockManagerId() == null) {
            return;
        }
        starting = Thread.ofVirtual().name("ucx4j-shuffle-start").start(() -> {
            try {
                executor();
            } catch (Throwable e) {
                // Also Scala's undeclared exceptions (the driver's RPC): the executor must still come up;
                // its first shuffle task tries again and fails with the reason.
                LOG.warn(
                        "ucx4j shuffle: could not start at executor start ({}); trying again at the first"
                                + " shuffle task",
                        e.toString());
            }
        });
    }

    @Override
    public <K, V, C> ShuffleHandle registerShuffle(int shuffleId, ShuffleDependency<K, V, C> dependency) {
        ExecutorAddressRegistry.Driver r = registry;
        if (r != null) {
            // The driver's context is active by the first shuffle: follow executor removals from now on.
            r.watchRemovals();
        }
        return super.registerShuffle(shuffleId, dependency);
    }

    @Override
    public <K, V> ShuffleWriter<K, V> getWriter(
            ShuffleHandle handle, long mapId, TaskContext context, ShuffleWriteMetricsReporter metrics) {
        Thread start = starting;
        if (start == null || !start.isAlive()) {
            // No start under way: start (or fail) now, before the task does its work.
            executor();
        }
        // The server must be registered before this map output can be asked for: the writer waits for it
        // when it ends, so that a start under way overlaps the task's work.
        return new RegisteredOutputWriter<>(super.getWriter(handle, mapId, context, metrics), this::executor);
    }

    @Override
    public <K, C> ShuffleReader<K, C> getReader(
            ShuffleHandle handle,
            int startMapIndex,
            int endMapIndex,
            int startPartition,
            int endPartition,
            TaskContext context,
            ShuffleReadMetricsReporter metrics) {
        @SuppressWarnings("unchecked")
        BaseShuffleHandle<K, ?, C> base = (BaseShuffleHandle<K, ?, C>) handle;
        if (base.dependency().isShuffleMergeFinalizedMarked()) {
            // Push-based shuffle reads merged blocks through Spark's external shuffle service.
            return super.getReader(handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
        }
        Executor parts = executor();
        var blocksByAddress = SparkEnv.get()
                .mapOutputTracker()
                .getMapSizesByExecutorId(handle.shuffleId(), startMapIndex, endMapIndex, startPartition, endPartition);
        return new UcxShuffleReader<>(
                base,
                blocksByAddress,
                context,
                metrics,
                parts.client(),
                SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context));
    }

    private Executor executor() {
        Executor parts = executor;
        if (parts != null) {
            return parts;
        }
        synchronized (lock) {
            if (stopped) {
                throw new IllegalStateException("the ucx4j shuffle manager is stopped");
            }
            if (executor == null) {
                executor = start();
            }
            return executor;
        }
    }

    private Executor start() {
        long began = System.nanoTime();
        SparkEnv env = SparkEnv.get();
        String secret = conf.getBoolean("spark.authenticate", false)
                ? env.securityManager().getSecretKey()
                : null;
        ShuffleTransportSettings settings = ShuffleTransportSettings.from(conf, secret);
        if (settings.fallbackReason() != null) {
            LOG.warn("ucx4j shuffle: UCX is unavailable ({}); falling back to tcp://", settings.fallbackReason());
        }
        CommContext context = keptContext != null ? keptContext : CommContext.create();
        ShuffleBlockServer server = keptServer;
        keptContext = null;
        keptServer = null;
        try {
            if (server == null) {
                String host = env.blockManager().blockManagerId().host();
                server = new ShuffleBlockServer(context, host, settings, shuffleBlockResolver());
            }
            ExecutorAddressRegistry.Client lookups = new ExecutorAddressRegistry.Client(conf, env.rpcEnv());
            lookups.register(env.executorId(), server.address());
            LOG.info(
                    "{} (started in {} ms)",
                    settings.describe(server.address().toString()),
                    (System.nanoTime() - began) / 1_000_000);
            if (conf.getBoolean("spark.shuffle.readHostLocalDisk", true)) {
                LOG.info("ucx4j shuffle: spark.shuffle.readHostLocalDisk is on, so blocks of executors on this"
                        + " host are read from their files, not fetched over ucx4j");
            }
            return new Executor(
                    context, settings, server, new UcxBlockStoreClient(context, settings, lookups, env.executorId()));
        } catch (Throwable e) {
            // Also the driver's SparkException or RpcTimeoutException from register (Scala: undeclared).
            if (server != null) {
                // The next start registers this server's address again (see keptServer): one server kept,
                // not one leaked per task that tries to start.
                keptContext = context;
                keptServer = server;
            } else {
                context.close();
            }
            throw e;
        }
    }

    /**
     * On the driver: the ucx4j shuffle addresses the executors registered, by executor id.
     *
     * @return a copy; empty on executors and before any executor registered
     */
    public Map<String, URI> executorAddresses() {
        ExecutorAddressRegistry.Driver r = registry;
        return r == null ? Map.of() : r.addresses();
    }

    /**
     * On the driver: the bytes of shuffle blocks that executors reported fetching through ucx4j so far
     * (reports travel asynchronously, shortly after each fetch).
     *
     * @return the total; 0 on executors
     */
    public long remoteBytesFetched() {
        ExecutorAddressRegistry.Driver r = registry;
        return r == null ? 0 : r.bytesFetched();
    }

    /**
     * The settings this executor runs with, or empty before its server started (and on the driver).
     *
     * @return the settings
     */
    public java.util.Optional<ShuffleTransportSettings> settings() {
        Executor parts = executor;
        return parts == null ? java.util.Optional.empty() : java.util.Optional.of(parts.settings());
    }

    @Override
    public void stop() {
        Executor parts;
        CommContext failedContext;
        ShuffleBlockServer failedServer;
        synchronized (lock) {
            stopped = true;
            parts = executor;
            executor = null;
            failedContext = keptContext;
            failedServer = keptServer;
            keptContext = null;
            keptServer = null;
        }
        try {
            if (failedServer != null) {
                try {
                    failedServer.close();
                } finally {
                    failedContext.close();
                }
            }
            if (parts != null) {
                LOG.debug(
                        "ucx4j shuffle: stopping ({} bytes served, {} fetched)",
                        parts.server().bytesServed(),
                        parts.client().bytesFetched());
                // Reverse order of creation: the client's comms, the server, then their context.
                try {
                    parts.client().close();
                    parts.server().close();
                } finally {
                    parts.context().close();
                }
            }
        } finally {
            super.stop();
        }
        if (isDriver) {
            LOG.debug("ucx4j shuffle: driver stopped");
        }
    }
}
