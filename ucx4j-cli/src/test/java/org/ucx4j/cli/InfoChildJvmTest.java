package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.ChildJvm;

/**
 * {@code ucx4j info --json} in a child JVM whose only configuration is one variable or one file: the
 * pool size arrives from every spelling a Dask user may have, legacy ones included, with its source.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class InfoChildJvmTest {
    @TempDir
    Path dir;

    private ChildJvm.Result info(Map<String, String> env) throws IOException, InterruptedException {
        return CliProcess.command(dir, "info", "--json")
                // Only what the test gives: no stray ucx4j or Dask settings from the machine.
                .unsetEnv(k -> k.startsWith("UCX4J_") || k.startsWith("DASK_") || k.equals("UCX_TLS"))
                .env("HOME", dir.toString())
                .env(env)
                .run(Duration.ofSeconds(60));
    }

    private void assertPool(ChildJvm.Result r, String sourceFragment) {
        assertEquals(0, r.exitCode(), "ucx4j info failed: " + r.all());
        JsonNode json = CliProcess.json(r.output());
        JsonNode pool = json.findValue("memory-pool.size");
        assertTrue(pool != null && pool.path("value").isIntegralNumber(), "no memory-pool.size in: " + json);
        assertEquals(1_000_000_000L, pool.path("value").longValue());
        String source = pool.path("source").asText();
        assertTrue(source.contains(sourceFragment), "source was " + source);
        assertTrue(
                json.findValues("version").stream()
                        .anyMatch(v -> v.isTextual() && v.textValue().startsWith("1.")),
                "UCX version missing: " + json);
    }

    @Test
    void legacyDaskVariable() throws Exception {
        assertPool(info(Map.of("DASK_DISTRIBUTED__RMM__POOL_SIZE", "1000.00 MB")), "DASK_DISTRIBUTED__RMM__POOL_SIZE");
    }

    @Test
    void newDaskVariable() throws Exception {
        assertPool(
                info(Map.of("DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE", "1000.00 MB")),
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
