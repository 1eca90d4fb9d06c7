package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
        return cli(env, "info", "--json");
    }

    private ChildJvm.Result cli(Map<String, String> env, String... args) throws IOException, InterruptedException {
        return CliProcess.command(dir, args)
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

    /**
     * UCX writes its log to stdout by default; the CLI sends it to stderr, so that stdout stays one JSON
     * document. UCX logs here because {@code nvlink: true} asks for the CUDA transports, which a machine
     * without CUDA does not have: UCX warns that they are not available.
     */
    @Test
    void jsonStaysJsonWhenUcxLogs() throws Exception {
        ChildJvm.Result r = info(Map.of("UCX4J__NVLINK", "true"));
        assertEquals(0, r.exitCode(), "ucx4j info failed: " + r.all());
        JsonNode json = CliProcess.json(r.output());
        assertTrue(
                json.path("config").path("keys").path("nvlink").path("value").asBoolean(), "nvlink not set: " + json);
        assertTrue(r.stderr().contains("UCX  WARN"), "UCX's warning is not on stderr: " + r.all());
    }

    /** A {@code UCX_LOG_FILE} the user set wins over the CLI's stderr: UCX logs into that file. */
    @Test
    void theUsersUcxLogFileWins() throws Exception {
        Path log = dir.resolve("ucx.log");
        ChildJvm.Result r = info(Map.of("UCX4J__NVLINK", "true", "UCX_LOG_FILE", "file:" + log));
        assertEquals(0, r.exitCode(), "ucx4j info failed: " + r.all());
        JsonNode json = CliProcess.json(r.output());
        assertTrue(json.path("ucx").path("environment").path("UCX_LOG_FILE").isMissingNode(), json.toString());
        assertTrue(Files.exists(log) && Files.readString(log).contains("UCX  WARN"), "no UCX log in " + log);
        assertFalse(r.stderr().contains("UCX  WARN"), r.all());
    }

    /** A bad value is an invalid configuration (78), not "UCX unavailable" (2): UCX itself loaded. */
    @Test
    void anInvalidConfigurationHasItsOwnExitCode() throws Exception {
        ChildJvm.Result r = info(Map.of("UCX4J__TCP", "maybe"));
        assertEquals(Main.EXIT_CONFIG_INVALID, r.exitCode(), r.all());
        JsonNode json = CliProcess.json(r.output());
        assertTrue(json.path("ucx").path("available").asBoolean(), "UCX did load: " + json);
        String error = json.path("config").path("error").asText();
        assertTrue(error.contains("'tcp'") && error.contains("env UCX4J__TCP"), error);
        assertTrue(r.stderr().contains("ucx4j configuration is invalid"), r.all());
    }

    /** A YAML syntax error on the secret's line: exit 78, and the secret in neither stdout nor stderr. */
    @Test
    void aBrokenFileNearTheSecretIsReportedWithoutIt() throws Exception {
        Path yaml = dir.resolve("ucx4j.yaml");
        Files.writeString(yaml, "ucx4j:\n  auth:\n    secret: \"hunter2-s3cr3t\n  tcp: true\n");
        for (String[] args : new String[][] {{"info", "--json"}, {"info"}}) {
            ChildJvm.Result r = cli(Map.of("UCX4J_CONFIG", yaml.toString()), args);
            assertEquals(Main.EXIT_CONFIG_INVALID, r.exitCode(), r.all());
            assertTrue(r.all().contains(yaml + ":5:1") && r.all().contains("from line 3, column 13"), r.all());
            assertFalse(r.all().contains("hunter2") || r.all().contains("s3cr3t"), r.all());
        }
    }

    /** The other commands give a bad configuration the same exit code. */
    @Test
    void benchWithAnInvalidConfiguration() throws Exception {
        ChildJvm.Result r = cli(Map.of("UCX4J__AUTH__SECRTE", "hunter2"), "bench");
        assertEquals(Main.EXIT_CONFIG_INVALID, r.exitCode(), r.all());
        assertTrue(r.stderr().contains("unknown ucx4j config key 'auth.secrte'"), r.all());
        assertFalse(r.all().contains("hunter2"), r.all());
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
