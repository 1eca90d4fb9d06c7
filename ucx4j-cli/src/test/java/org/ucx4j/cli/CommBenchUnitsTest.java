package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.comm.Message;

/** The parts of {@code bench --comm} and {@code demo} that need no peer: protocol, units, report, usage errors. */
class CommBenchUnitsTest {
    /** Runs the command line in this JVM and returns its exit code and stderr. */
    private static Map.Entry<Integer, String> usage(String... args) {
        PrintStream saved = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            int code = Main.run(args);
            return Map.entry(code, err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(saved);
        }
    }

    private static void refused(String expectedText, String... args) {
        Map.Entry<Integer, String> r = usage(args);
        assertEquals(Main.EXIT_USAGE, r.getKey(), String.join(" ", args) + ": " + r.getValue());
        assertTrue(
                r.getValue().contains(expectedText),
                String.join(" ", args) + " should say '" + expectedText + "', said: " + r.getValue());
    }

    @Test
    void badFlagCombinationsAreUsageErrorsThatSayWhy() {
        refused("--comm and --op exclude each other", "bench", "--comm", "tcp", "--op", "tag");
        refused("--frames goes with --comm", "bench", "--frames", "2");
        refused("latency or bandwidth, not rate", "bench", "--comm", "tcp", "--mode", "rate");
        refused("no --server or --connect", "bench", "--comm", "inproc", "--server");
        refused("--progress does not go with --comm", "bench", "--comm", "ucx", "--progress", "caller");
        refused("frames must be 1..", "bench", "--comm", "tcp", "--frames", "0");
        refused("--server and --connect exclude each other", "bench", "--comm", "tcp", "--server", "--connect", "h:1");
        refused("ucx|tcp|inproc", "bench", "--comm", "udp");
        refused("Unknown option", "demo", "--size", "4Ki");
    }

    @Test
    void aBadConnectPortIsAUsageErrorNamingIt() {
        refused("the port 'notaport' is not a number", "bench", "--connect", "127.0.0.1:notaport");
        refused("the port 'notaport' is not a number", "bench", "--comm", "tcp", "--connect", "127.0.0.1:notaport");
        refused("the port 70000 is not in 1..65535", "bench", "--connect", "127.0.0.1:70000");
        refused("'13337' is not HOST:PORT", "bench", "--connect", "13337");
        assertEquals(new HostPort("::1", 13337), HostPort.parse("[::1]:13337"));
        assertEquals(new HostPort("host1", 1), HostPort.parse("host1:1"));
        assertEquals("[::1]:13337", HostPort.parse("[::1]:13337").toString());
        refused("write an IPv6 address in brackets, [fe80::1]:13337", "bench", "--connect", "fe80::1:13337");
    }

    @Test
    void anUnwritableHtmlPathIsAUsageErrorBeforeAnyBenchmark(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "not a directory");
        // Under a regular file: the directory cannot be created. The error comes before the servers start.
        Map.Entry<Integer, String> r =
                usage("demo", "--quick", "--html", file.resolve("demo.html").toString());
        assertEquals(Main.EXIT_USAGE, r.getKey(), r.getValue());
        assertTrue(r.getValue().contains("cannot write the page there: its directory cannot be created"), r.getValue());
        assertFalse(r.getValue().contains("starting the servers"), r.getValue());
        refused("cannot write the page there: it is a directory", "demo", "--quick", "--html", dir.toString());
    }

    @Test
    void controlMessagesRoundTripAndAreChecked() {
        CommBenchSettings run = new CommBenchSettings(BenchMode.BANDWIDTH, 3, 1 << 20, 100, 10, 16);
        assertEquals(run, CommBenchProtocol.readControl(CommBenchProtocol.control(run)));
        assertNull(CommBenchProtocol.readControl(CommBenchProtocol.control(null)));
        assertThrows(
                IllegalArgumentException.class, () -> CommBenchProtocol.readControl(Message.ofBytes(new byte[48])));
        assertThrows(IllegalArgumentException.class, () -> CommBenchProtocol.readControl(Message.ofBytes(new byte[7])));
        assertThrows(IllegalArgumentException.class, () -> new CommBenchSettings(BenchMode.RATE, 1, 8, 1, 0, 1));
        assertThrows(
                IllegalArgumentException.class,
                () -> new CommBenchSettings(BenchMode.LATENCY, 65_536, 1L << 31, 1, 0, 1)); // 128 TiB messages
        CommBenchProtocol.expectOk(CommBenchProtocol.reply(true, null), "x");
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> CommBenchProtocol.expectOk(CommBenchProtocol.reply(false, "bad data"), "the phase"));
        assertTrue(e.getMessage().contains("bad data"), e.getMessage());
    }

    @Test
    void resultsAreInMebibytesAndHalfRoundTrips() {
        CommBenchSettings bw = new CommBenchSettings(BenchMode.BANDWIDTH, 2, 1 << 20, 100, 0, 16);
        CommBenchResult b = new CommBenchResult(CommKind.TCP, bw, 2.0, null);
        assertEquals(100.0, b.bandwidthMiBps(), 1e-9); // 100 messages of 2 MiB in 2 s
        Map<String, Object> m = b.toMap();
        assertEquals("tcp", m.get("comm"));
        assertEquals(100.0, m.get("bandwidth_mbps"));
        assertNull(m.get("round_trips_per_s"));
        assertNull(m.get("latency_us_p50"));

        CommBenchSettings lat = new CommBenchSettings(BenchMode.LATENCY, 1, 8, 2, 0, 1);
        CommBenchResult l =
                new CommBenchResult(CommKind.UCX, lat, 40e-6, new LatencyStats(new long[] {20_000, 20_000}));
        assertEquals(50_000.0, l.roundTripsPerSecond(), 1e-6);
        assertEquals(10.0, l.toMap().get("latency_us_p50"));
        assertNull(l.toMap().get("bandwidth_mbps"));
        for (String key : List.of(
                "comm",
                "mode",
                "frames",
                "size",
                "iterations",
                "round_trips_per_s",
                "latency_us_p50",
                "latency_us_p99",
                "bandwidth_mbps")) {
            assertTrue(l.toMap().containsKey(key), key);
        }
    }

    @Test
    void demoPlanScalesCountsBySize() {
        DemoPlan full = DemoPlan.full();
        assertEquals(7, full.sizes().size());
        assertEquals(8000, full.latency(1024).iterations());
        assertEquals(4, full.latency(256L << 20).iterations());
        assertEquals(12, full.bandwidth(256L << 20).iterations());
        assertEquals(2048, full.bandwidth(1L << 20).iterations()); // 2 GiB
        assertEquals(1, full.bandwidth(256L << 20).frames());
        assertTrue(DemoPlan.quick().sizes().size() < full.sizes().size());
    }

    @Test
    void pageHasBothChartsAndTheTable() {
        List<Long> sizes = List.of(1024L, 1L << 20);
        List<CommBenchResult> results = new java.util.ArrayList<>();
        for (CommKind kind : DemoReport.KINDS) {
            for (long size : sizes) {
                results.add(new CommBenchResult(
                        kind,
                        new CommBenchSettings(BenchMode.LATENCY, 1, size, 2, 0, 1),
                        1e-3,
                        new LatencyStats(new long[] {400_000, 600_000})));
                results.add(new CommBenchResult(
                        kind,
                        new CommBenchSettings(BenchMode.BANDWIDTH, 1, size, 1024, 0, 16),
                        kind == CommKind.UCX ? 0.5 : 1.0,
                        null));
            }
        }
        DemoReport report = new DemoReport(
                Map.of("cores", 2, "ucx_version", "1.13.1", "peer_error_handling", true, "java", "25", "date", "today"),
                sizes,
                results,
                Map.of(1024L, List.of("sysv"), 1L << 20, List.of("cma")));
        assertEquals(2.0, report.bandwidth(CommKind.UCX, 1024) / report.bandwidth(CommKind.TCP, 1024), 1e-9);
        assertEquals("sysv", report.carriers(1024));
        assertEquals("cma", report.carriers(1L << 20));
        assertEquals(DemoReport.NOT_SAID, report.carriers(4096), "a size UCX said nothing about");
        String html = report.html();
        assertEquals(2, html.split("<svg", -1).length - 1);
        assertTrue(html.contains("<td>1 KiB</td>") && html.contains("<td>1 MiB</td>"), html);
        assertTrue(html.contains("ucx://") && html.contains("tcp://"));
        assertTrue(html.contains("<td class=\"n\">2.00x</td>"), "the ucx/tcp bandwidth ratio");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        report.printTable(new PrintStream(out, true, StandardCharsets.UTF_8), null);
        String table = out.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("|      1 KiB |"), table);
        assertTrue(table.contains("| sysv             |") && table.contains("| cma              |"), table);
        assertTrue(html.contains("<td>sysv</td>") && html.contains("<td>cma</td>"), "the transports column");
        @SuppressWarnings("unchecked")
        Map<String, Object> carried = (Map<String, Object>) report.toMap().get("ucx_transports_by_frame_size");
        assertEquals(List.of("sysv"), carried.get("1024"));
    }

    @Test
    void chartUnitsAndLabels() {
        assertEquals("1 KiB", DemoReport.sizeLabel(1024));
        assertEquals("256 MiB", DemoReport.sizeLabel(256L << 20));
        assertEquals("1000 B", DemoReport.sizeLabel(1000));
        assertEquals(500.0, SvgChart.niceStep(420), 1e-9);
        assertEquals(0.2, SvgChart.niceStep(0.15), 1e-9);
        assertEquals("1,234", SvgChart.number(1234.4));
        assertEquals("2.5", SvgChart.number(2.5));
        assertEquals("&lt;a&amp;b&gt;", SvgChart.esc("<a&b>"));
    }
}
