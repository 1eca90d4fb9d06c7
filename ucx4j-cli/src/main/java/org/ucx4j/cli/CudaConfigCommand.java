package org.ucx4j.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.ucx4j.ByteSize;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxConfigException;
import org.ucx4j.UcxKeys;
import org.ucx4j.cuda.CpuAffinity;
import org.ucx4j.cuda.CudaKeys;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ucx4j cuda config}: what each worker of {@code ucx4j launch} with the same options would get (GPU,
 * UUID, device list, CPUs, network device, memory pool, UCX transports, timeouts), starting nothing:
 * Dask-CUDA's {@code dask cuda config}. Text, or {@code --json}.
 */
@Command(
        name = "config",
        mixinStandardHelpOptions = true,
        description = {
            "What each worker of 'ucx4j launch' with the same options would get: GPU, UUID, CUDA_VISIBLE_DEVICES, CPUs,",
            "network device, memory pool, UCX transports and timeouts. Starts nothing."
        })
final class CudaConfigCommand implements Callable<Integer> {
    @Mixin
    private LaunchOptions options = new LaunchOptions();

    @Option(names = "--json", description = "Print JSON instead of text.")
    private boolean json;

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        Machine machine = Machine.probe();
        LaunchPlanner.Planned planned;
        try {
            planned = LaunchPlanner.plan(options, machine);
        } catch (UcxConfigException e) {
            System.err.println("ucx4j cuda config: " + e.getMessage());
            return Main.EXIT_CONFIG_INVALID;
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        Map<String, Object> report = report(machine, planned);
        if (json) {
            System.out.println(Json.write(report));
        } else {
            System.out.print(text(machine, planned, report));
        }
        return 0;
    }

    static Map<String, Object> report(Machine machine, LaunchPlanner.Planned planned) {
        UcxConfig config = planned.config();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("gpus", machine.gpus().size());
        m.put("no_gpu_reason", machine.noGpuReason().orElse(null));
        m.put("allowed_cpus", CpuAffinity.format(machine.allowedCpus()));
        m.put("ucx_transports", transports(config));
        m.put("connect_timeout", config.get(UcxKeys.CONNECT_TIMEOUT).toString());
        m.put("memory_pool_size", config.find(CudaKeys.MEMORY_POOL_SIZE).orElse(null));
        m.put(
                "memory_pool_maximum_size",
                config.find(CudaKeys.MEMORY_POOL_MAXIMUM_SIZE).orElse(null));
        List<Map<String, Object>> workers = new ArrayList<>();
        for (WorkerPlan p : planned.workers()) {
            Map<String, Object> w = new LinkedHashMap<>();
            w.put("rank", p.rank());
            w.put("name", p.name());
            w.put("gpu_index", p.gpu().map(Machine.Gpu::index).orElse(null));
            w.put("gpu_uuid", p.gpu().map(Machine.Gpu::uuid).orElse(null));
            w.put("gpu_name", p.gpu().map(Machine.Gpu::name).orElse(null));
            w.put("pci_bus_id", p.gpu().map(Machine.Gpu::pciBusId).orElse(null));
            w.put(
                    "cuda_visible_devices",
                    p.cudaVisibleDevices().isEmpty() ? null : String.join(",", p.cudaVisibleDevices()));
            w.put("cpus", CpuAffinity.format(p.cpus()));
            w.put("cpus_from", p.cpuSource());
            w.put("net_device", p.netDevice().orElse(null));
            w.put("net_device_from", p.netSource());
            w.put("warnings", p.warnings());
            workers.add(w);
        }
        m.put("workers", workers);
        return m;
    }

    private static String transports(UcxConfig config) {
        String env = System.getenv("UCX_TLS");
        if (env != null) {
            return env + " (UCX_TLS)";
        }
        String tls = config.ucxSettings().contextOptions().get("TLS");
        return tls != null ? tls : "all (UCX decides)";
    }

    private String text(Machine machine, LaunchPlanner.Planned planned, Map<String, Object> report) {
        StringBuilder b = new StringBuilder();
        boolean cpuOnly = planned.workers().stream().allMatch(w -> w.gpu().isEmpty());
        if (machine.gpus().isEmpty()) {
            b.append("no GPU (")
                    .append(machine.noGpuReason().orElse("CUDA sees none"))
                    .append("): ");
            if (options.workers == null) {
                return b.append("ucx4j launch starts 1 CPU-only worker (--workers N for more)\n")
                        .toString();
            }
            b.append(planned.workers().size()).append(" CPU-only workers\n");
        } else if (cpuOnly) {
            b.append(planned.workers().size()).append(" CPU-only workers (--workers)\n");
        }
        for (WorkerPlan p : planned.workers()) {
            b.append(p.name()).append(": rank ").append(p.rank());
            p.gpu().ifPresent(g -> b.append(", GPU ")
                    .append(g.index())
                    .append(' ')
                    .append(g.name())
                    .append(", ")
                    .append(g.uuid())
                    .append(", PCI ")
                    .append(g.pciBusId()));
            b.append('\n');
            if (!p.cudaVisibleDevices().isEmpty()) {
                b.append("  CUDA_VISIBLE_DEVICES=")
                        .append(String.join(",", p.cudaVisibleDevices()))
                        .append('\n');
            }
            b.append("  CPUs ").append(p.cpusText()).append('\n');
            b.append("  network: ").append(p.networkText()).append('\n');
            p.warnings().forEach(w -> b.append("  warning: ").append(w).append('\n'));
        }
        Object pool = report.get("memory_pool_size");
        Object max = report.get("memory_pool_maximum_size");
        b.append("every worker: UCX transports ")
                .append(report.get("ucx_transports"))
                .append(", connect-timeout ")
                .append(report.get("connect_timeout"))
                .append(", memory pool ")
                .append(pool == null ? "none (memory-pool.size unset)" : ByteSize.format((Long) pool))
                .append(max == null ? "" : ", at most " + ByteSize.format((Long) max))
                .append('\n');
        return b.toString();
    }
}
