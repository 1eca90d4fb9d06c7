package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.cli.CliProcess.assertNullField;
import static org.ucx4j.cli.CliProcess.number;
import static org.ucx4j.cli.CliProcess.string;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testsupport.Requirements;

/**
 * {@code ucx4j bench --op X} end to end, for every operation: the client is a child JVM, which starts the
 * server as its own child JVM and connects over loopback. A short latency run and a short bandwidth run
 * (64 KiB, so first and last messages are verified over several fragments) must succeed and report sane
 * figures.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class BenchChildJvmTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    private JsonNode bench(String... args) throws Exception {
        return CliProcess.benchJson(dir, args);
    }

    /** A short bandwidth run of 64 KiB messages (first and last verified over several fragments). */
    private JsonNode bandwidth64KiB(String op, String... more) throws Exception {
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of(
                "--op", op, "--mode", "bandwidth", "--size", "64Ki", "--iters", "40", "--warmup-time", "0"));
        args.addAll(java.util.List.of(more));
        return bench(args.toArray(String[]::new));
    }

    @ParameterizedTest
    @EnumSource(BenchOp.class)
    void latencyAndBandwidth(BenchOp op) throws Exception {
        JsonNode lat =
                bench("--op", op.label(), "--size", "8", "--iters", "200", "--warmup", "20", "--warmup-time", "0.2");
        assertEquals(op.label(), string(lat, "op"));
        assertEquals("latency", string(lat, "mode"));
        assertEquals(200, number(lat, "iterations"));
        assertEquals(0.2, number(lat, "warmup_seconds"));
        double p50 = number(lat, "latency_us_p50");
        assertTrue(p50 > 0 && p50 <= number(lat, "latency_us_p99"), lat.toString());
        assertTrue(number(lat, "msg_rate") > 0, lat.toString());
        assertEquals(op == BenchOp.TAG, lat.path("memory_declared").asBoolean(), lat.toString());

        JsonNode bw = bandwidth64KiB(op.label(), "--window", "4", "--progress", "caller");
        assertEquals("bandwidth", string(bw, "mode"));
        assertEquals(65536, number(bw, "size"));
        assertEquals(op.perftestName(BenchMode.BANDWIDTH), string(bw, "perftest"));
        assertEquals("caller", string(bw, "progress"));
        assertTrue(number(bw, "bandwidth_mbps") > 0, bw.toString());
        assertTrue(number(bw, "msg_rate") > 0, bw.toString());
        assertNullField(bw, "latency_us_p50");
    }

    /**
     * {@code --detect-memory}: the client (whose JSON says so) and the server it starts with the option
     * leave the buffers' kind to UCX, and the run still verifies.
     */
    @org.junit.jupiter.api.Test
    void tagWithMemoryDetectedByUcx() throws Exception {
        JsonNode bw = bandwidth64KiB("tag", "--detect-memory");
        assertTrue(bw.has("memory_declared") && !bw.get("memory_declared").asBoolean(), bw.toString());
        assertTrue(number(bw, "bandwidth_mbps") > 0, bw.toString());
    }
}
