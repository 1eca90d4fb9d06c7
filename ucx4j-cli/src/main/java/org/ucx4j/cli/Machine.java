package org.ucx4j.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import org.ucx4j.cuda.CpuAffinity;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.cuda.GpuTopology;

/**
 * What the launcher knows of this machine before starting anything: its GPUs (in PCI bus order), the CPUs
 * it may use, and where sysfs is (for the nearest network device). Probed once; tests build their own.
 *
 * @param gpus the GPUs CUDA sees in this process, in PCI bus order; empty without CUDA
 * @param noGpuReason why there are none (CUDA's one sentence), or empty
 * @param allowedCpus the CPUs this process may run on
 * @param sysfs the sysfs root, normally {@code /sys}
 */
record Machine(List<Gpu> gpus, Optional<String> noGpuReason, BitSet allowedCpus, Path sysfs) {
    /**
     * One GPU.
     *
     * @param index its position in PCI bus order among the GPUs this process sees (nvidia-smi's index when
     *     {@code CUDA_VISIBLE_DEVICES} is unset)
     * @param uuid {@code GPU-...}
     * @param pciBusId {@code 0000:18:00.0}
     * @param name the product name
     * @param nvmlCpus NVML's CPUs local to it; empty when NVML could not say
     * @param nvmlProblem what NVML could not say, or empty
     */
    record Gpu(int index, String uuid, String pciBusId, String name, BitSet nvmlCpus, Optional<String> nvmlProblem) {}

    /**
     * Probes the machine: CUDA's devices (creating no context), NVML's affinity, {@code sched_getaffinity}.
     *
     * @return what was found
     */
    static Machine probe() {
        BitSet allowed = CpuAffinity.allowed();
        if (!Cuda.isAvailable()) {
            return new Machine(List.of(), Cuda.unavailabilityReason(), allowed, Path.of("/sys"));
        }
        List<CudaDevice> devices = new ArrayList<>(Cuda.devices());
        devices.sort(Comparator.comparing(CudaDevice::pciBusId));
        List<Gpu> gpus = new ArrayList<>();
        for (CudaDevice d : devices) {
            GpuTopology t = d.topology();
            gpus.add(new Gpu(gpus.size(), "GPU-" + d.uuid(), d.pciBusId(), d.name(), t.cpuAffinity(), t.problem()));
        }
        return new Machine(List.copyOf(gpus), Optional.empty(), allowed, Path.of("/sys"));
    }
}
