package org.ucx4j.cli;

import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.ucx4j.cuda.CpuAffinity;

/**
 * What one worker of a launch gets: its rank and name, its GPU and device list, its CPUs and network
 * device (each with a note saying where it came from or what went wrong), and the environment that
 * carries them and the ucx4j configuration.
 *
 * @param rank 0..size-1
 * @param name {@code gpu1}, {@code gpu0.1} (the second worker sharing GPU 0), {@code w2}
 * @param gpu its GPU, empty for a CPU-only worker
 * @param cudaVisibleDevices its {@code CUDA_VISIBLE_DEVICES}: its GPU first, then the others (empty for a
 *     CPU-only worker: left as the launcher's)
 * @param cpus the CPUs it is pinned to
 * @param cpuSource where {@code cpus} came from ("NVML", "--cpus", "all allowed")
 * @param netDevice its {@code net-devices}, empty when UCX decides
 * @param netSource why that device
 * @param warnings what could not be done as asked (printed, never fatal)
 * @param environment variables set for it (configuration, device order, devices)
 */
record WorkerPlan(
        int rank,
        String name,
        Optional<Machine.Gpu> gpu,
        List<String> cudaVisibleDevices,
        BitSet cpus,
        String cpuSource,
        Optional<String> netDevice,
        String netSource,
        List<String> warnings,
        Map<String, String> environment) {
    /**
     * The CPUs and where they came from, for people.
     *
     * @return for example {@code 0-15 (NVML)}
     */
    String cpusText() {
        return CpuAffinity.format(cpus) + " (" + cpuSource + ")";
    }

    /**
     * The network device and why, for people.
     *
     * @return for example {@code - (UCX decides)}
     */
    String networkText() {
        return netDevice.orElse("-") + " (" + netSource + ")";
    }
}
