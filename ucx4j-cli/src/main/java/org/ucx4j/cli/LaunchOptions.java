package org.ucx4j.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * What {@code ucx4j launch} and {@code ucx4j cuda config} are asked for: which GPUs or how many CPU workers,
 * CPUs, network devices, and the ucx4j configuration every worker gets (options named as the configuration
 * keys). A picocli mixin; {@link LaunchPlanner} turns it into one {@link WorkerPlan} per worker.
 */
final class LaunchOptions {
    @Option(
            names = "--gpus",
            paramLabel = "all|0,2|UUID,...",
            description = "The GPUs to start a worker on: all (default when CUDA sees a GPU), indices in PCI bus order "
                    + "(as nvidia-smi numbers them), or UUIDs (GPU-..., a unique prefix is enough). A GPU named twice "
                    + "gets two workers.")
    String gpus;

    @Option(
            names = "--workers",
            paramLabel = "N",
            description = "Start N CPU-only workers instead (the default on a machine without a GPU is 1).")
    Integer workers;

    @Option(
            names = "--workers-per-gpu",
            paramLabel = "N",
            description = "Workers sharing each chosen GPU (default 1): two workers on one GPU measure device memory "
                    + "transfers on a one-GPU machine.")
    Integer workersPerGpu;

    @Option(
            names = "--cpus",
            paramLabel = "LIST[:LIST...]",
            description = "CPU affinity to give instead of NVML's: one CPU list (0-3,8) for every worker, or one per "
                    + "worker separated by ':'. Intersected with the CPUs this process may use.")
    String cpus;

    @Option(
            names = "--net-devices",
            paramLabel = "DEV|DEV,DEV,...|auto",
            description = "The network device (UCX_NET_DEVICES) of each worker: one device for all, one per worker "
                    + "(comma-separated), or auto: the up interface nearest each GPU by PCI topology (InfiniBand only "
                    + "with --infiniband true). Default: UCX decides.")
    String netDevices;

    @Option(
            names = "--rendezvous-host",
            paramLabel = "ADDRESS",
            description = "Where the launcher's rendezvous listens (default: loopback; workers find it through their "
                    + "environment and must present the launch's random token).")
    String rendezvousHost;

    @Option(names = "--tcp", paramLabel = "true|false", description = "Configuration key tcp.")
    String tcp;

    @Option(names = "--nvlink", paramLabel = "true|false", description = "Configuration key nvlink.")
    String nvlink;

    @Option(names = "--infiniband", paramLabel = "true|false", description = "Configuration key infiniband.")
    String infiniband;

    @Option(names = "--rdmacm", paramLabel = "true|false", description = "Configuration key rdmacm.")
    String rdmacm;

    @Option(names = "--cuda-copy", paramLabel = "true|false", description = "Configuration key cuda-copy.")
    String cudaCopy;

    @Option(
            names = "--create-cuda-context",
            paramLabel = "true|false",
            description = "Configuration key create-cuda-context.")
    String createCudaContext;

    @Option(names = "--connect-timeout", paramLabel = "DURATION", description = "Configuration key connect-timeout.")
    String connectTimeout;

    @Option(names = "--progress-mode", paramLabel = "MODE", description = "Configuration key progress-mode.")
    String progressMode;

    @Option(
            names = "--peer-error-handling",
            paramLabel = "true|false",
            description = "Configuration key peer-error-handling.")
    String peerErrorHandling;

    @Option(
            names = "--memory-pool.size",
            paramLabel = "SIZE",
            description = "Configuration key memory-pool.size: each worker's GPU memory pool (1GB, 512MiB).")
    String memoryPoolSize;

    @Option(
            names = "--memory-pool.maximum-size",
            paramLabel = "SIZE",
            description = "Configuration key memory-pool.maximum-size.")
    String memoryPoolMaximumSize;

    @Option(
            names = {"-c", "--config"},
            paramLabel = "KEY=VALUE",
            description = "Any other configuration key (repeatable), e.g. -c environment.log-level=info.")
    Map<String, String> config = new LinkedHashMap<>();

    /**
     * The configuration keys given, in a stable order: the named options, then {@code --config}.
     *
     * @return key to value as typed
     */
    Map<String, String> configValues() {
        Map<String, String> m = new LinkedHashMap<>();
        put(m, "tcp", tcp);
        put(m, "nvlink", nvlink);
        put(m, "infiniband", infiniband);
        put(m, "rdmacm", rdmacm);
        put(m, "cuda-copy", cudaCopy);
        put(m, "create-cuda-context", createCudaContext);
        put(m, "connect-timeout", connectTimeout);
        put(m, "progress-mode", progressMode);
        put(m, "peer-error-handling", peerErrorHandling);
        put(m, "memory-pool.size", memoryPoolSize);
        put(m, "memory-pool.maximum-size", memoryPoolMaximumSize);
        m.putAll(config);
        return m;
    }

    private static void put(Map<String, String> m, String key, String value) {
        if (value != null) {
            m.put(key, value);
        }
    }
}
