package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ucx4j info --json} in a child JVM whose only configuration is one variable or one file: the
 * pool size arrives from every spelling a Dask user may have, legacy ones included, with its source.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InfoChildJvmTest {
    private static final Pattern POOL = Pattern.compile(
            "\"memory-pool\\.size\":\\s*\\{\\s*\"value\":\\s*(\\d+),\\s*\"source\":\\s*\"([^\"]*)\"");

    @TempDir
    Path dir;

    private record Result(int exit, String stdout) {}

    private Result info(Map<String, String> env) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.add("info");
        cmd.add("--json");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
        // Only what the test gives: no stray ucx4j or Dask settings from the machine.
        pb.environment().keySet().removeIf(k -> k.startsWith("UCX4J_") || k.startsWith("DASK_") || k.equals("UCX_TLS"));
        pb.environment().put("HOME", dir.toString());
        pb.environment().putAll(env);
        pb.redirectError(dir.resolve("stderr.txt").toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ucx4j info did not finish");
        return new Result(p.exitValue(), out);
    }

    private void assertPool(Result r, String sourceFragment) throws IOException {
        String stderr = Files.readString(dir.resolve("stderr.txt"));
        assertEquals(0, r.exit(), "ucx4j info failed: " + r.stdout() + stderr);
        Matcher m = POOL.matcher(r.stdout());
        assertTrue(m.find(), "no memory-pool.size in: " + r.stdout());
        assertEquals(1_000_000_000L, Long.parseLong(m.group(1)));
        assertTrue(m.group(2).contains(sourceFragment), "source was " + m.group(2));
        assertTrue(r.stdout().contains("\"version\": \"1."), "UCX version missing: " + r.stdout());
    }

    @Test
    void legacyDaskVariable() throws Exception {
        assertPool(info(Map.of("DASK_DISTRIBUTED__RMM__POOL_SIZE", "1000.00 MB")), "DASK_DISTRIBUTED__RMM__POOL_SIZE");
    }

    @Test
    void newDaskVariable() throws Exception {
        assertPool(info(Map.of("DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE", "1000.00 MB")),
                "DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE");
    }

    @Test
    void ucx4jVariable() throws Exception {
        assertPool(info(Map.of("UCX4J__MEMORY_POOL__SIZE", "1000.00 MB")), "UCX4J__MEMORY_POOL__SIZE");
    }

    @Test
    void yamlFile() throws Exception {
        Path yaml = dir.resolve("cluster.yaml");
        Files.writeString(yaml, "distributed-ucxx:\n  rmm:\n    pool-size: 1000.00 MB\n");
        assertPool(info(Map.of("UCX4J_CONFIG", yaml.toString())), "cluster.yaml:3");
    }
}
