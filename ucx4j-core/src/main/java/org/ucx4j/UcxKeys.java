package org.ucx4j;

import java.time.Duration;
import java.util.List;

/**
 * The core's configuration keys: which UCX transports to manage (the distributed-ucxx switches), how
 * workers make progress and connect, which network devices to use. Read them with
 * {@link UcxConfig#get(ConfigKey)}; docs/CONFIGURATION.md describes each.
 *
 * <p>The extra {@code UCX_*} settings are not a key but the {@code environment} map
 * ({@link UcxConfig#environment()}, {@link UcxConfig.Builder#environment(String, String)}). Keys of
 * other modules live there: {@code org.ucx4j.comm.CommKeys}, {@code org.ucx4j.cuda.CudaKeys}.
 *
 * <p>Threading: immutable constants.
 */
public final class UcxKeys {
    /** Transport management with TCP: {@code TLS} includes {@code tcp}. Unset: UCX decides. */
    public static final ConfigKey<Boolean> TCP =
            ConfigKey.flag("tcp", "transport management with TCP (TLS includes tcp)");
    /** NVLink: {@code cuda_copy,cuda_ipc} join {@code TLS}. */
    public static final ConfigKey<Boolean> NVLINK = ConfigKey.flag("nvlink", "NVLink: adds cuda_copy,cuda_ipc to TLS");
    /** InfiniBand: {@code rc} is prefixed to {@code TLS}. */
    public static final ConfigKey<Boolean> INFINIBAND = ConfigKey.flag("infiniband", "InfiniBand: prefixes rc to TLS");
    /** Connection set-up through RDMA CM ({@code SOCKADDR_TLS_PRIORITY=rdmacm}). */
    public static final ConfigKey<Boolean> RDMACM =
            ConfigKey.flag("rdmacm", "connection set-up through RDMA CM (SOCKADDR_TLS_PRIORITY=rdmacm)");
    /** {@code cuda_copy} joins {@code TLS}. */
    public static final ConfigKey<Boolean> CUDA_COPY = ConfigKey.flag("cuda-copy", "adds cuda_copy to TLS");
    /** Create a CUDA context before UCX starts. */
    public static final ConfigKey<Boolean> CREATE_CUDA_CONTEXT =
            ConfigKey.flag("create-cuda-context", "create a CUDA context before UCX starts");
    /** How long connection set-up may take: more than nothing, at most a day (default 5 s). */
    public static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration(
            "connect-timeout",
            Duration.ofSeconds(5),
            Duration.ofMillis(1),
            Duration.ofDays(1),
            "how long connection set-up may take");
    /** UCX's {@code NET_DEVICES}, for example {@code mlx5_0:1}. Unset: UCX uses all. */
    public static final ConfigKey<String> NET_DEVICES =
            ConfigKey.text("net-devices", "UCX NET_DEVICES, for example mlx5_0:1");
    /** How workers make progress (default {@link ProgressMode#THREAD_BLOCKING}). */
    public static final ConfigKey<ProgressMode> PROGRESS_MODE =
            ConfigKey.progressMode("progress-mode", ProgressMode.THREAD_BLOCKING, "how workers make progress");
    /**
     * Whether endpoints detect a dead peer ({@code UCP_ERR_HANDLING_MODE_PEER}, default true); off lets
     * UCX use shared memory between processes, which it leaves out for endpoints that detect peer
     * failure. See {@link WorkerOptions#peerErrorHandling()}.
     */
    public static final ConfigKey<Boolean> PEER_ERROR_HANDLING =
            ConfigKey.flag("peer-error-handling", true, "endpoints detect a dead peer");

    /**
     * How long a thread-blocking progress thread keeps polling after activity before it sleeps
     * ({@link WorkerOptions#spin()}, default 50 µs); {@code 0} turns the spin off, and with it the polling
     * while bulk operations are in flight: the choice where every core is busy with other work (a Spark
     * executor's tasks), since a polling thread takes CPU from them.
     */
    public static final ConfigKey<Duration> PROGRESS_SPIN = ConfigKey.duration(
            "progress-spin",
            WorkerOptions.DEFAULT_SPIN,
            Duration.ZERO,
            Duration.ofSeconds(1),
            "how long a thread-blocking progress thread polls after activity before it sleeps (0: never)");

    /** The core's keys, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(
            TCP,
            NVLINK,
            INFINIBAND,
            RDMACM,
            CUDA_COPY,
            CREATE_CUDA_CONTEXT,
            CONNECT_TIMEOUT,
            NET_DEVICES,
            PROGRESS_MODE,
            PROGRESS_SPIN,
            PEER_ERROR_HANDLING);

    /** The module name the core's keys are registered under. */
    static final String MODULE = "ucx4j-core";

    private UcxKeys() {}
}
