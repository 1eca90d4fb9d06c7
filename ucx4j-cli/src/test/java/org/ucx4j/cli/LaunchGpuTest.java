package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.cuda.CpuAffinity;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * {@code ucx4j launch} on a GPU machine: one worker per GPU sees its own GPU as CUDA device 0 and runs on
 * NVML's CPUs for it (within the allowed set); two workers share one GPU when asked; and the all-to-all
 * benchmark moves device partitions between two workers.
 */
@Tag("gpu")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LaunchGpuTest {
    private static final Pattern GPU_LINE = Pattern.compile("\\[(\\S+)] GPU (\\S+) (\\S+) (\\S+) (\\S*) (\\S+)");

    @TempDir
    Path dir;

    @BeforeAll
    static void needsGpu() {
        Requirements.assume(
                "a CUDA GPU",
                Cuda.isAvailable(),
                Cuda.unavailabilityReason().orElse("no GPU"),
                Requirements.REQUIRE_GPU);
    }

    /** What each worker printed: name -> [cluster GPU, CUDA device 0, NVML CPUs, allowed CPUs]. */
    private List<String[]> launchGpuProgram(String... launchArgs) throws Exception {
        List<String> a = new ArrayList<>(List.of("launch"));
        a.addAll(List.of(launchArgs));
        a.addAll(List.of(
                "--",
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                LaunchTestProgram.class.getName(),
                "gpu"));
        ChildJvm.Result r = CliProcess.run(dir, Duration.ofSeconds(120), List.of(), a.toArray(String[]::new));
        assertEquals(0, r.exitCode(), r.all());
        List<String[]> lines = new ArrayList<>();
        Matcher m = GPU_LINE.matcher(r.output());
        while (m.find()) {
            lines.add(new String[] {m.group(1), m.group(3), m.group(4), m.group(5), m.group(6)});
        }
        lines.sort(Comparator.comparing(l -> l[0]));
        return lines;
    }

    private static List<CudaDevice> byPciBus() {
        return Cuda.devices().stream()
                .sorted(Comparator.comparing(CudaDevice::pciBusId))
                .toList();
    }

    private static String expectedCpus(CudaDevice d) {
        BitSet allowed = CpuAffinity.allowed();
        BitSet nvml = d.topology().cpuAffinity();
        nvml.and(allowed);
        return CpuAffinity.format(nvml.isEmpty() ? allowed : nvml);
    }

    @Test
    void oneWorkerPerGpuSeesItsOwnGpuFirstAndRunsOnItsNvmlCpus() throws Exception {
        List<CudaDevice> gpus = byPciBus();
        List<String[]> lines = launchGpuProgram();
        assertEquals(
                gpus.size(),
                lines.size(),
                "one worker per GPU: "
                        + lines.stream().map(l -> String.join(" ", l)).toList());
        for (int i = 0; i < gpus.size(); i++) {
            String[] l = lines.get(i);
            CudaDevice d = gpus.get(i);
            assertEquals("gpu" + i, l[0]);
            assertEquals("GPU-" + d.uuid(), l[1], "Cluster.gpu() of " + l[0]);
            assertEquals("GPU-" + d.uuid(), l[2], "CUDA device 0 of " + l[0]);
            assertEquals(expectedCpus(d), l[4], "the CPUs of " + l[0] + " (NVML says " + l[3] + ")");
        }
    }

    @Test
    void twoWorkersShareOneGpuWhenAsked() throws Exception {
        CudaDevice first = byPciBus().get(0);
        for (String[] args :
                List.of(new String[] {"--gpus", "0", "--workers-per-gpu", "2"}, new String[] {"--gpus", "0,0"})) {
            List<String[]> lines = launchGpuProgram(args);
            assertEquals(
                    List.of("gpu0.0", "gpu0.1"),
                    lines.stream().map(l -> l[0]).collect(Collectors.toList()),
                    String.join(" ", args));
            for (String[] l : lines) {
                assertEquals("GPU-" + first.uuid(), l[2], "CUDA device 0 of " + l[0]);
                assertEquals(expectedCpus(first), l[4], "the CPUs of " + l[0]);
            }
        }
    }

    @Test
    void allToAllMovesDevicePartitionsBetweenTwoWorkers() throws Exception {
        String gpus = Cuda.devices().size() > 1 ? "0,1" : "0,0";
        ChildJvm.Result r = CliProcess.run(
                dir,
                Duration.ofSeconds(150),
                List.of(),
                "launch",
                "--gpus",
                gpus,
                "--",
                "ucx4j",
                "bench",
                "--all-to-all",
                "--memory",
                "cuda",
                "--size",
                "8Mi",
                "--iters",
                "20",
                "--json");
        assertEquals(0, r.exitCode(), r.all());
        String json =
                r.output().lines().map(l -> l.replaceFirst("^\\[[^]]*] ", "")).collect(Collectors.joining("\n"));
        JsonNode doc = CliProcess.json(json);
        assertEquals(2, doc.get("results").size(), json);
        for (JsonNode t : doc.get("results")) {
            assertEquals("cuda", t.get("memory").asText());
            assertEquals(2, t.get("workers").asInt());
            assertTrue(t.get("aggregate_mb_s").asDouble() > 0, json);
        }
    }
}
