package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.BitSet;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.ucx4j.cuda.CpuAffinity;
import picocli.CommandLine;

/** {@link LaunchPlanner} on made-up machines: which workers, device lists, CPUs, network devices. */
class LaunchPlannerTest {
    private static final Machine.Gpu G0 =
            new Machine.Gpu(0, "GPU-aaaa-0", "0000:18:00.0", "H100", CpuAffinity.parse("0-7"), Optional.empty());
    private static final Machine.Gpu G1 =
            new Machine.Gpu(1, "GPU-bbbb-1", "0000:3b:00.0", "H100", CpuAffinity.parse("8-15"), Optional.empty());
    private static final Machine.Gpu G2 = new Machine.Gpu(
            2, "GPU-cccc-2", "0000:86:00.0", "H100", new BitSet(), Optional.of("nvmlDeviceGetCpuAffinity: Unknown"));
    private static final Machine GPUS =
            new Machine(List.of(G0, G1, G2), Optional.empty(), CpuAffinity.parse("0-11"), Path.of("/nonexistent"));
    private static final Machine CPU_ONLY =
            new Machine(List.of(), Optional.of("no NVIDIA driver"), CpuAffinity.parse("0-3"), Path.of("/nonexistent"));

    private static LaunchOptions options(String... args) {
        LaunchOptions o = new LaunchOptions();
        new CommandLine(o).parseArgs(args);
        return o;
    }

    private static List<WorkerPlan> plan(Machine m, String... args) {
        return LaunchPlanner.plan(options(args), m, false);
    }

    @Test
    void oneWorkerPerGpuWithItsGpuFirstAndNvmlCpusWithinTheAllowedSet() {
        List<WorkerPlan> p = plan(GPUS);
        assertEquals(
                List.of("gpu0", "gpu1", "gpu2"),
                p.stream().map(WorkerPlan::name).toList());
        assertEquals(List.of("GPU-bbbb-1", "GPU-cccc-2", "GPU-aaaa-0"), p.get(1).cudaVisibleDevices());
        assertEquals("GPU-bbbb-1,GPU-cccc-2,GPU-aaaa-0", p.get(1).environment().get("CUDA_VISIBLE_DEVICES"));
        assertEquals("PCI_BUS_ID", p.get(1).environment().get("CUDA_DEVICE_ORDER"));
        assertEquals("0-7", CpuAffinity.format(p.get(0).cpus()));
        assertEquals("NVML", p.get(0).cpuSource());
        assertEquals("8-11", CpuAffinity.format(p.get(1).cpus()), "NVML's 8-15 within the allowed 0-11");
        assertEquals(List.of(), p.get(1).warnings());
        assertEquals("0-11", CpuAffinity.format(p.get(2).cpus()), "NVML cannot say: all allowed");
        assertTrue(
                p.get(2).warnings().get(0).contains("NVML cannot say"),
                p.get(2).warnings().toString());
        assertEquals("2", p.get(2).environment().get("UCX4J_CLUSTER_RANK"));
        assertEquals("3", p.get(2).environment().get("UCX4J_CLUSTER_SIZE"));
        assertEquals("GPU-cccc-2", p.get(2).environment().get("UCX4J_CLUSTER_GPU"));
    }

    @Test
    void gpusByIndexAndUuidPrefixAndSharedGpus() {
        assertEquals(
                List.of("gpu2", "gpu0"),
                plan(GPUS, "--gpus", "2,GPU-aaaa").stream()
                        .map(WorkerPlan::name)
                        .toList());
        assertEquals(
                List.of("gpu1.0", "gpu1.1"),
                plan(GPUS, "--gpus", "1", "--workers-per-gpu", "2").stream()
                        .map(WorkerPlan::name)
                        .toList());
        List<WorkerPlan> twice = plan(GPUS, "--gpus", "0,0");
        assertEquals(
                List.of("gpu0.0", "gpu0.1"),
                twice.stream().map(WorkerPlan::name).toList());
        assertEquals(twice.get(0).cudaVisibleDevices(), twice.get(1).cudaVisibleDevices());
        assertThrows(IllegalArgumentException.class, () -> plan(GPUS, "--gpus", "3"));
        assertThrows(IllegalArgumentException.class, () -> plan(GPUS, "--gpus", "GPU-dddd"));
        assertThrows(IllegalArgumentException.class, () -> plan(GPUS, "--gpus", "0,"));
    }

    @Test
    void cpuOnlyWorkers() {
        List<WorkerPlan> one = plan(CPU_ONLY);
        assertEquals(List.of("w0"), one.stream().map(WorkerPlan::name).toList());
        List<WorkerPlan> three = plan(GPUS, "--workers", "3");
        assertEquals(
                List.of("w0", "w1", "w2"), three.stream().map(WorkerPlan::name).toList());
        assertTrue(three.get(0).cudaVisibleDevices().isEmpty());
        assertEquals("0-11", CpuAffinity.format(three.get(0).cpus()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plan(CPU_ONLY, "--gpus", "0"));
        assertTrue(e.getMessage().contains("no GPU (no NVIDIA driver)"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> plan(GPUS, "--workers", "2", "--gpus", "0"));
    }

    @Test
    void givenCpusOnePerWorkerOrForAllAndEmptyIntersections() {
        List<WorkerPlan> p = plan(CPU_ONLY, "--workers", "2", "--cpus", "0-1:3");
        assertEquals("0-1", CpuAffinity.format(p.get(0).cpus()));
        assertEquals("3", CpuAffinity.format(p.get(1).cpus()));
        List<WorkerPlan> outside = plan(CPU_ONLY, "--workers", "2", "--cpus", "2-9");
        assertEquals("2-3", CpuAffinity.format(outside.get(1).cpus()));
        List<WorkerPlan> none = plan(CPU_ONLY, "--workers", "1", "--cpus", "64");
        assertEquals("0-3", CpuAffinity.format(none.get(0).cpus()));
        assertTrue(
                none.get(0).warnings().get(0).contains("none in common"),
                none.get(0).warnings().toString());
        assertThrows(IllegalArgumentException.class, () -> plan(CPU_ONLY, "--workers", "3", "--cpus", "0:1"));
        assertThrows(IllegalArgumentException.class, () -> plan(CPU_ONLY, "--workers", "1", "--cpus", "x"));
    }

    @Test
    void netDevicesForAllPerWorkerPerGpuAndTheConfiguration() {
        assertEquals(
                "UCX4J__NET_DEVICES",
                LaunchPlanner.environmentName("net-devices"),
                "the variable ucx4j's configuration reads");
        assertEquals("UCX4J__MEMORY_POOL__SIZE", LaunchPlanner.environmentName("memory-pool.size"));
        List<WorkerPlan> all = plan(GPUS, "--net-devices", "eth0");
        assertTrue(all.stream().allMatch(w -> w.netDevice().equals(Optional.of("eth0"))));
        assertEquals("eth0", all.get(2).environment().get("UCX4J__NET_DEVICES"));
        List<WorkerPlan> perGpu =
                plan(GPUS, "--gpus", "0,1", "--workers-per-gpu", "2", "--net-devices", "mlx5_0:1,mlx5_1:1");
        assertEquals(
                List.of("mlx5_0:1", "mlx5_0:1", "mlx5_1:1", "mlx5_1:1"),
                perGpu.stream().map(w -> w.netDevice().orElseThrow()).toList());
        List<WorkerPlan> none = plan(GPUS);
        assertEquals("UCX decides", none.get(0).netSource());
        assertTrue(!none.get(0).environment().containsKey("UCX4J__NET_DEVICES"));
        assertThrows(IllegalArgumentException.class, () -> plan(GPUS, "--net-devices", "a,b"));
        List<WorkerPlan> pool = plan(GPUS, "--memory-pool.size", "1GB", "-c", "environment.log-level=info");
        assertEquals("1GB", pool.get(0).environment().get("UCX4J__MEMORY_POOL__SIZE"));
        assertEquals("info", pool.get(0).environment().get("UCX4J__ENVIRONMENT__LOG_LEVEL"));
    }
}
