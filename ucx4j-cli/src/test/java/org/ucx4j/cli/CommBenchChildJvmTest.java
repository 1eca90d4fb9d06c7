package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.cli.CliProcess.assertNullField;
import static org.ucx4j.cli.CliProcess.number;
import static org.ucx4j.cli.CliProcess.string;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.Requirements;

/**
 * {@code ucx4j bench --comm X --json} end to end: the client is a child JVM, which starts the server as its
 * own child JVM (inproc: in the same JVM). A latency run of messages of several frames and a bandwidth run
 * must succeed and report sane figures under the field names bench/vs-distributed-ucxx.sh reads.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CommBenchChildJvmTest {
    @TempDir
    Path dir;

    private JsonNode bench(String... args) throws Exception {
        return CliProcess.benchJson(dir, args);
    }

    private void latencyAndBandwidth(CommKind kind) throws Exception {
        JsonNode lat = bench(
                "--comm",
                kind.scheme(),
                "--frames",
                "3",
                "--size",
                "100",
                "--iters",
                "300",
                "--warmup",
                "30",
                "--warmup-time",
                "0.2");
        assertEquals(kind.scheme(), string(lat, "comm"));
        assertEquals("latency", string(lat, "mode"));
        assertEquals(3, number(lat, "frames"));
        assertEquals(100, number(lat, "size"));
        assertEquals(300, number(lat, "iterations"));
        assertEquals(0.2, number(lat, "warmup_seconds"));
        assertTrue(number(lat, "round_trips_per_s") > 0, lat.toString());
        double p50 = number(lat, "latency_us_p50");
        assertTrue(p50 > 0 && p50 <= number(lat, "latency_us_p99"), lat.toString());
        assertNullField(lat, "bandwidth_mbps");

        // 1 MiB frames: several UCX fragments and TCP reads per frame; more messages than the window.
        JsonNode bw = bench(
                "--comm",
                kind.scheme(),
                "--mode",
                "bandwidth",
                "--frames",
                "2",
                "--size",
                "1Mi",
                "--iters",
                "40",
                "--window",
                "4",
                "--warmup-time",
                "0.2");
        assertEquals("bandwidth", string(bw, "mode"));
        assertEquals(2, number(bw, "frames"));
        assertEquals(1 << 20, number(bw, "size"));
        assertEquals(40, number(bw, "iterations"));
        assertTrue(number(bw, "bandwidth_mbps") > 0, bw.toString());
        assertNullField(bw, "round_trips_per_s");
        assertNullField(bw, "latency_us_p50");
    }

    @Test
    void tcp() throws Exception {
        latencyAndBandwidth(CommKind.TCP);
    }

    @Tag("native")
    @Test
    void ucx() throws Exception {
        Requirements.assumeUcx();
        latencyAndBandwidth(CommKind.UCX);
    }

    @Test
    void inproc() throws Exception {
        latencyAndBandwidth(CommKind.INPROC);
    }
}
