package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * The command as {@code bin/ucx4j} starts it: from the built jar and {@code target/lib}, on the module path
 * ({@code java -p ... -m org.ucx4j.cli/org.ucx4j.cli.Main}), so that the module descriptors (requires,
 * exports, the comm transports' {@code provides}, picocli's {@code opens}) are what resolves. Run by
 * failsafe after {@code package}; the jar and library folder come as system properties from the pom.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ModulePathIT {
    @TempDir
    Path dir;

    private static ChildJvm.Spec ucx4j(Path dir, String... args) {
        Path jar = Path.of(System.getProperty("ucx4j.cli.jar"));
        Path lib = Path.of(System.getProperty("ucx4j.cli.lib"));
        assertTrue(Files.isRegularFile(jar) && Files.isDirectory(lib), "build the jars first: " + jar + ", " + lib);
        // The same flags as bin/ucx4j.
        return ChildJvm.ofModule(
                        jar + File.pathSeparator + lib,
                        "org.ucx4j.cli/org.ucx4j.cli.Main",
                        "org.ucx4j.core,org.ucx4j.cuda")
                .workDir(dir)
                .separateStderr()
                .args(args);
    }

    /** No SLF4J "no providers" warnings and no native-access warnings: the command ships a quiet provider. */
    private static void assertQuiet(ChildJvm.Result r) {
        assertFalse(r.stderr().contains("SLF4J"), "SLF4J warnings: " + r.all());
        assertFalse(r.stderr().contains("WARNING"), "warnings: " + r.all());
    }

    @Test
    void benchOverAServiceLoadedTransport() throws Exception {
        // inproc needs no UCX; the transport is found through comm's `provides` on the module path.
        ChildJvm.Result r = ucx4j(
                        dir,
                        "bench",
                        "--comm",
                        "inproc",
                        "--iters",
                        "50",
                        "--warmup",
                        "5",
                        "--warmup-time",
                        "0",
                        "--json",
                        "--no-progress-bar")
                .run(Duration.ofSeconds(60));
        assertEquals(0, r.exitCode(), r.all());
        JsonNode json = CliProcess.json(r.output());
        assertEquals("inproc", CliProcess.string(json, "comm"));
        assertEquals(50, CliProcess.number(json, "iterations"));
        assertQuiet(r);
    }

    @Test
    @Tag("native")
    void infoWithUcx() throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r = ucx4j(dir, "info", "--json").run(Duration.ofSeconds(60));
        assertEquals(0, r.exitCode(), r.all());
        JsonNode json = CliProcess.json(r.output());
        assertTrue(
                json.findValues("version").stream()
                        .anyMatch(v -> v.isTextual() && v.textValue().startsWith("1.")),
                "UCX version missing: " + json);
        assertQuiet(r);
    }

    @Test
    void launchRunsTheCommandItselfAsWorkersWithTheirWatchdog() throws Exception {
        // Workers started as 'ucx4j ...' run from the same module path; each loads the watchdog agent, whose
        // package the module exports (a JVM that cannot call premain exits at once).
        ChildJvm.Result r = ucx4j(
                        dir,
                        "launch",
                        "--workers",
                        "2",
                        "--",
                        "ucx4j",
                        "bench",
                        "--all-to-all",
                        "--comm",
                        "tcp",
                        "--size",
                        "64Ki",
                        "--iters",
                        "5",
                        "--json")
                .run(Duration.ofSeconds(90));
        assertEquals(0, r.exitCode(), r.all());
        JsonNode json = CliProcess.json(r.output().replaceAll("(?m)^\\[w0] ", ""));
        assertEquals("tcp://", CliProcess.string(json, "transport"));
        assertEquals(2, CliProcess.number(json, "workers"));
        assertFalse(r.stderr().contains("java.instrument"), r.all());
        assertQuiet(r);
    }
}
