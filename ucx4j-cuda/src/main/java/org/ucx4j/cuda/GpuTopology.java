package org.ucx4j.cuda;

import java.util.BitSet;
import java.util.List;
import java.util.Optional;

/**
 * What NVML reports of one GPU.
 *
 * @param cpuAffinity the CPUs local to the GPU (bit n is CPU n); empty when NVML could not say
 * @param memoryUsed bytes in use on the device by all processes, or -1 when unknown
 * @param memoryTotal bytes on the device, or -1 when unknown
 * @param activeNvLinks how many NVLink links are up
 * @param nvLinkRemoteBusIds the PCI bus id at the far end of each active link (a GPU, or an NVSwitch)
 * @param problem what NVML could not tell, if anything
 */
public record GpuTopology(
        BitSet cpuAffinity,
        long memoryUsed,
        long memoryTotal,
        int activeNvLinks,
        List<String> nvLinkRemoteBusIds,
        Optional<String> problem) {
    /**
     * A copy whose bit set cannot change the record's.
     */
    public GpuTopology {
        cpuAffinity = (BitSet) cpuAffinity.clone();
        nvLinkRemoteBusIds = List.copyOf(nvLinkRemoteBusIds);
    }

    /**
     * The CPU affinity, as a copy.
     *
     * @return bit n set for CPU n
     */
    @Override
    public BitSet cpuAffinity() {
        return (BitSet) cpuAffinity.clone();
    }

    /**
     * The CPU affinity as Linux lists print it.
     *
     * @return for example {@code 0-31} or {@code 0-15,32-47}; empty when unknown
     */
    public String cpuList() {
        return CpuAffinity.format(cpuAffinity);
    }
}
