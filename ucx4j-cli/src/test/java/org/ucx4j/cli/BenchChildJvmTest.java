package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.Ucx;

/**
 * {@code ucx4j bench --op X} end to end, for every operation: the client is a child JVM, which starts the
 * server as its own child JVM and connects over loopback. A short latency run and a short bandwidth run
 * (64 KiB, so first and last messages are verified over several fragments) must succeed and report sane
 * figures.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BenchChildJvmTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void needsUcx() {
        if (!Ucx.isAvailable()) {
            if ("1".equals(System.getenv("UCX4J_REQUIRE_NATIVE"))) {
                fail("UCX4J_REQUIRE_NATIVE=1 but UCX is not available", Ucx.unavailabilityCause());
            }
            Assumptions.abort("UCX is not available: " + Ucx.unavailabilityCause().getMessage());
        }
    }

    private String bench(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:TieredStopAtLevel=1"); // short runs: start fast
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.add("bench");
        cmd.addAll(List.of(args));
        cmd.add("--json");
        Path err = dir.resolve("stderr.txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(50, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("ucx4j bench " + String.join(" ", args) + " did not finish; stderr: " + Files.readString(err));
        }
        assertEquals(0, p.exitValue(), "ucx4j bench " + String.join(" ", args) + " failed: " + out + Files.readString(err));
        return out;
    }

    private static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":\\s*([-0-9.eE]+)").matcher(json);
        assertTrue(m.find(), key + " missing or null in " + json);
        return Double.parseDouble(m.group(1));
    }

    private static String string(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":\\s*\"([^\"]*)\"").matcher(json);
        assertTrue(m.find(), key + " missing in " + json);
        return m.group(1);
    }

    @ParameterizedTest
    @EnumSource(BenchOp.class)
    void latencyAndBandwidth(BenchOp op) throws Exception {
        String lat = bench("--op", op.label(), "--size", "8", "--iters", "200", "--warmup", "20");
        assertEquals(op.label(), string(lat, "op"));
        assertEquals("latency", string(lat, "mode"));
        assertEquals(200, number(lat, "iterations"));
        double p50 = number(lat, "latency_us_p50");
        assertTrue(p50 > 0 && p50 <= number(lat, "latency_us_p99"), lat);
        assertTrue(number(lat, "msg_rate") > 0, lat);

        String bw = bench("--op", op.label(), "--mode", "bandwidth", "--size", "64Ki", "--iters", "40",
                "--window", "4", "--progress", "caller");
        assertEquals("bandwidth", string(bw, "mode"));
        assertEquals(65536, number(bw, "size"));
        assertEquals(op.perftestName(BenchMode.BANDWIDTH), string(bw, "perftest"));
        assertEquals("caller", string(bw, "progress"));
        assertTrue(number(bw, "bandwidth_mbps") > 0, bw);
        assertTrue(number(bw, "msg_rate") > 0, bw);
        assertTrue(bw.contains("\"latency_us_p50\": null"), bw);
    }
}
