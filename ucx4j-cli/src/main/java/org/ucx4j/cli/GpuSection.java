package org.ucx4j.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.cuda.CudaException;
import org.ucx4j.cuda.GpuTopology;

/**
 * The {@code gpu} section of {@code ucx4j info}: whether CUDA is usable, and each GPU's index, name, UUID,
 * PCI bus id, memory, compute capability, NVLink links and peers, and CPU affinity (from NVML).
 */
final class GpuSection {
    private GpuSection() {}

    /**
     * Collects the section.
     *
     * @param transports the UCX transports a context sees, for the CUDA ones among them
     * @return a JSON-ready map
     */
    static Map<String, Object> collect(List<?> transports) {
        Map<String, Object> gpu = new LinkedHashMap<>();
        gpu.put("available", Cuda.isAvailable());
        List<String> cudaTransports = new ArrayList<>();
        for (Object t : transports) {
            if (String.valueOf(t).startsWith("cuda")) {
                cudaTransports.add(String.valueOf(t));
            }
        }
        gpu.put("ucx_cuda_transports", cudaTransports);
        if (!Cuda.isAvailable()) {
            gpu.put("reason", Cuda.unavailabilityReason().orElse(""));
            gpu.put("devices", List.of());
            return gpu;
        }
        try {
            gpu.put("driver", Cuda.driverVersion());
            List<Map<String, Object>> devices = new ArrayList<>();
            List<CudaDevice> all = Cuda.devices();
            for (CudaDevice d : all) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("index", d.ordinal());
                m.put("name", d.name());
                m.put("uuid", "GPU-" + d.uuid());
                m.put("pci_bus_id", d.pciBusId());
                m.put("memory_bytes", d.totalMemory());
                m.put("compute_capability", d.computeCapability());
                GpuTopology t = d.topology();
                m.put("cpu_affinity", t.cpuList());
                m.put("nvlink_active_links", t.activeNvLinks());
                List<Integer> peers = new ArrayList<>();
                for (CudaDevice other : all) {
                    if (other != d && t.nvLinkRemoteBusIds().contains(other.pciBusId())) {
                        peers.add(other.ordinal());
                    }
                }
                m.put("nvlink_peers", peers);
                m.put("memory_used_bytes", t.memoryUsed());
                t.problem().ifPresent(p -> m.put("nvml_problem", p));
                devices.add(m);
            }
            gpu.put("devices", devices);
        } catch (CudaException e) {
            gpu.put("available", false);
            gpu.put("reason", e.getMessage());
            gpu.put("devices", List.of());
        }
        return gpu;
    }

    /** Prints the section as text: one line when there is no GPU, a line per GPU otherwise. */
    static void print(Map<?, ?> gpu, java.io.PrintStream out) {
        out.println();
        if (!Boolean.TRUE.equals(gpu.get("available"))) {
            out.println("GPU         none: " + gpu.get("reason"));
            return;
        }
        List<?> cuda = (List<?>) gpu.get("ucx_cuda_transports");
        out.println("GPUs        CUDA driver " + gpu.get("driver") + "; UCX CUDA transports: "
                + (cuda.isEmpty()
                        ? "none (this UCX was built without CUDA: GPU memory cannot move)"
                        : String.join(", ", cuda.stream().map(String::valueOf).toList())));
        for (Object o : (List<?>) gpu.get("devices")) {
            Map<?, ?> d = (Map<?, ?>) o;
            out.printf(
                    "  %s  %s  %s  pci %s  %.1f GiB  cc %s  NVLink %s link(s)%s  CPUs %s%n",
                    d.get("index"),
                    d.get("name"),
                    d.get("uuid"),
                    d.get("pci_bus_id"),
                    ((Number) d.get("memory_bytes")).longValue() / (double) (1L << 30),
                    d.get("compute_capability"),
                    d.get("nvlink_active_links"),
                    ((List<?>) d.get("nvlink_peers")).isEmpty() ? "" : " to GPU " + d.get("nvlink_peers"),
                    "".equals(d.get("cpu_affinity")) ? "unknown" : d.get("cpu_affinity"));
            if (d.get("nvml_problem") != null) {
                out.println("     NVML: " + d.get("nvml_problem"));
            }
        }
    }
}
