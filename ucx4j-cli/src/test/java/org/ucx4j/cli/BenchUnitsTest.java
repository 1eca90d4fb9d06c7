package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.ucx4j.ProgressMode;
import picocli.CommandLine;

/** The parts of bench that need no UCX: units, protocol, patterns, statistics, argument parsing. */
class BenchUnitsTest {
    @Test
    void latencyIsHalfTheRoundTripAndPercentilesAreNearestRank() {
        long[] rtt = new long[100];
        for (int i = 0; i < 100; i++) {
            rtt[i] = (i + 1) * 2_000L; // 2..200 us round trip
        }
        LatencyStats stats = new LatencyStats(rtt);
        assertEquals(50.0, stats.oneWayMicros(50), 1e-9);
        assertEquals(99.0, stats.oneWayMicros(99), 1e-9);
        assertEquals(50.5, stats.meanOneWayMicros(), 1e-9);
    }

    @Test
    void bandwidthIsInMebibytesPerSecond() {
        BenchSettings run = new BenchSettings(BenchOp.TAG, BenchMode.BANDWIDTH, 1 << 20, 100, 0, 16);
        BenchResult r = new BenchResult(run, ProgressMode.THREAD_BLOCKING, 2.0, null, "1.13.1", List.of("tcp"));
        assertEquals(50.0, r.bandwidthMiBps(), 1e-9);
        assertEquals(50.0, r.messageRate(), 1e-9);
        Map<String, Object> json = r.toMap();
        assertEquals("tag", json.get("op"));
        assertEquals("bandwidth", json.get("mode"));
        assertEquals("tag_bw", json.get("perftest"));
        assertEquals(16, json.get("window"));
        assertNull(json.get("latency_us_p50"));
        assertEquals(50.0, json.get("bandwidth_mbps"));
    }

    @Test
    void latencyModeRatesFollowUcxPerftest() {
        BenchSettings run = new BenchSettings(BenchOp.TAG, BenchMode.LATENCY, 8, 2, 0, 16);
        BenchResult r = new BenchResult(
                run, ProgressMode.CALLER, 1.0, new LatencyStats(new long[] {20_000, 20_000}), "1.13.1", List.of());
        assertEquals(100_000.0, r.messageRate(), 1e-6); // one over 10 us one-way
        assertEquals(8 * 100_000.0 / (1 << 20), r.bandwidthMiBps(), 1e-9);
    }

    @Test
    void controlMessageRoundTripsAndIsChecked() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment msg = arena.allocate(BenchProtocol.CONTROL_SIZE);
            BenchSettings run = new BenchSettings(BenchOp.GET, BenchMode.RATE, 67108864, 100, 10, 16);
            BenchProtocol.writeControl(msg, run);
            assertEquals(run, BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
            BenchProtocol.writeControl(msg, null);
            assertNull(BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
            msg.set(ValueLayout.JAVA_INT, 0, 42);
            assertThrows(
                    IllegalArgumentException.class, () -> BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
            BenchProtocol.writeControl(msg, run);
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, Long.MAX_VALUE); // a size no server should allocate
            assertThrows(
                    IllegalArgumentException.class, () -> BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
        }
    }

    @Test
    void patternsVerifyAndNameTheFirstDifference() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(29);
            BenchProtocol.fill(buf, 7);
            BenchProtocol.verify(buf, 7, "buf");
            assertFalse(BenchProtocol.matches(buf, 8));
            buf.set(ValueLayout.JAVA_BYTE, 11, (byte) (buf.get(ValueLayout.JAVA_BYTE, 11) ^ 1));
            IllegalStateException e =
                    assertThrows(IllegalStateException.class, () -> BenchProtocol.verify(buf, 7, "buf"));
            assertTrue(e.getMessage().endsWith("offset 11"), e.getMessage());
        }
    }

    @Test
    void bandwidthSlotsPutTheVerifiedMessagesInTheirOwnBuffers() {
        assertEquals(BenchProtocol.Slot.FIRST, BenchProtocol.slot(0, 10, true, true));
        assertEquals(BenchProtocol.Slot.LAST, BenchProtocol.slot(9, 10, true, true));
        assertEquals(BenchProtocol.Slot.BULK, BenchProtocol.slot(5, 10, true, true));
        assertEquals(BenchProtocol.Slot.FIRST, BenchProtocol.slot(0, 1, true, true));
        assertEquals(BenchProtocol.Slot.BULK, BenchProtocol.slot(0, 10, false, true));
    }

    @Test
    void bulkReceiveBuffersRotateOnlyWhenTheKnobAsks() {
        assertEquals(1, Buffers.bulkBuffers(null));
        assertEquals(1, Buffers.bulkBuffers(" "));
        assertEquals(16, Buffers.bulkBuffers("16"));
        for (String bad : new String[] {"0", "-1", "257", "x"}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> Buffers.bulkBuffers(bad), bad);
            assertTrue(e.getMessage().contains("UCX4J_BENCH_BULK_BUFFERS"), e.getMessage());
        }
        java.lang.foreign.MemorySegment f = java.lang.foreign.MemorySegment.ofArray(new byte[1]);
        java.lang.foreign.MemorySegment l = java.lang.foreign.MemorySegment.ofArray(new byte[1]);
        java.util.List<java.lang.foreign.MemorySegment> bulks = java.util.List.of(
                java.lang.foreign.MemorySegment.ofArray(new byte[1]),
                java.lang.foreign.MemorySegment.ofArray(new byte[1]),
                java.lang.foreign.MemorySegment.ofArray(new byte[1]));
        Buffers b = new Buffers(f, l, bulks);
        assertSame(bulks.get(2), b.receiving(BenchProtocol.Slot.BULK, 5));
        assertSame(bulks.get(0), b.receiving(BenchProtocol.Slot.BULK, 6));
        assertSame(f, b.receiving(BenchProtocol.Slot.FIRST, 0));
        assertSame(bulks.get(0), b.of(BenchProtocol.Slot.BULK), "sends always go from the first");
    }

    @Test
    void defaultsFollowUcxPerftest() {
        assertEquals(2000, BenchSettings.defaultWarmup(20000));
        assertEquals(10, BenchSettings.defaultWarmup(100));
        assertEquals(10000, BenchSettings.defaultWarmup(1_000_000));
        assertEquals(64, BenchSettings.defaultIterations(BenchMode.BANDWIDTH, 64L << 20));
        assertEquals(100_000, BenchSettings.defaultIterations(BenchMode.RATE, 8));
        assertEquals(16, BenchSettings.defaultWindow(BenchMode.BANDWIDTH));
        assertEquals(128, BenchSettings.defaultWindow(BenchMode.RATE));
    }

    @Test
    void sizesReadUnitsAsTheConfigurationDoes() throws Exception {
        BenchCommand.SizeConverter c = new BenchCommand.SizeConverter();
        assertEquals(8L, c.convert("8"));
        assertEquals(67108864L, c.convert("64Mi"));
        assertEquals(67108864L, c.convert("64MiB"));
        assertEquals(4096L, c.convert("4Ki"));
        // SI units are powers of ten, as in the configuration and Dask (64MB used to be refused here).
        assertEquals(64_000_000L, c.convert("64MB"));
        assertEquals(4000L, c.convert("4kB"));
        CommandLine.TypeConversionException e =
                assertThrows(CommandLine.TypeConversionException.class, () -> c.convert("64 XB"));
        assertTrue(e.getMessage().contains("unknown size unit 'xb'"), e.getMessage());
        assertThrows(CommandLine.TypeConversionException.class, () -> c.convert("1.5"));
    }

    @Test
    void ucxConfigDumpIsParsed() {
        Map<String, String> m = UcxConfigText.parse("# comment\nUCX_TLS=all\n\nUCX_NET_DEVICES=all\nUCX_X=a=b\n");
        assertEquals(Map.of("UCX_TLS", "all", "UCX_NET_DEVICES", "all", "UCX_X", "a=b"), m);
    }

    @Test
    void usageErrorsExitWith64() {
        assertEquals(Main.EXIT_USAGE, Main.run("pingpong", "--no-such-option"));
        assertEquals(Main.EXIT_USAGE, Main.run("pingpong", "--server", "--connect", "h:1"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--op", "atomic"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--mode", "throughput"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--window", "0", "--mode", "rate"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--size", "0"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--warmup-time", "-1"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--warmup-time", "NaN"));
    }

    @Test
    void warmUpRunsKeepTheShapeAndStaySmall() {
        BenchSettings lat = new BenchSettings(BenchOp.TAG, BenchMode.LATENCY, 8, 10_000, 1000, 1).forWarmUp();
        assertEquals(2000, lat.iterations());
        assertEquals(0, lat.warmup());
        assertEquals(BenchMode.LATENCY, lat.mode());
        BenchSettings bw = new BenchSettings(BenchOp.STREAM, BenchMode.BANDWIDTH, 64L << 20, 64, 7, 16).forWarmUp();
        assertEquals(16, bw.iterations()); // at least a window; 256 MiB would be 4
        assertEquals(BenchOp.STREAM, bw.op());
        assertEquals(64L << 20, bw.size());
        BenchSettings few = new BenchSettings(BenchOp.TAG, BenchMode.LATENCY, 8, 50, 5, 1).forWarmUp();
        assertEquals(50, few.iterations()); // never more than the run itself
        CommBenchSettings comm = new CommBenchSettings(BenchMode.BANDWIDTH, 4, 1L << 20, 1000, 100, 16).forWarmUp();
        assertEquals(64, comm.iterations()); // 256 MiB of 4 MiB messages
        assertEquals(4, comm.frames());
    }

    private static BenchSettings parse(String... args) {
        BenchCommand command = new BenchCommand();
        new CommandLine(command).setCaseInsensitiveEnumValuesAllowed(true).parseArgs(args);
        return command.settings();
    }

    @Test
    void benchDefaultsFollowTheMode() {
        assertEquals(new BenchSettings(BenchOp.TAG, BenchMode.LATENCY, 8, 10_000, 1000, 1), parse());
        assertEquals(
                new BenchSettings(BenchOp.AM, BenchMode.RATE, 8, 100_000, 10_000, 128),
                parse("--op", "am", "--mode", "rate"));
        assertEquals(
                new BenchSettings(BenchOp.PUT, BenchMode.BANDWIDTH, 64L << 20, 64, 7, 16),
                parse("--op", "PUT", "--mode", "bandwidth", "--size", "64Mi"));
    }

    @Test
    void benchOptionsOverrideTheDefaults() {
        assertEquals(
                new BenchSettings(BenchOp.GET, BenchMode.LATENCY, 4096, 500, 0, 1),
                parse("--op", "get", "-s", "4Ki", "-n", "500", "-w", "0"));
        assertEquals(
                new BenchSettings(BenchOp.STREAM, BenchMode.BANDWIDTH, 1 << 20, 30, 3, 4),
                parse("--op", "stream", "--mode", "bandwidth", "--size", "1MiB", "--iters", "30", "--window", "4"));
        // The old name still parses, with tag as the operation.
        CommandLine main = new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
        CommandLine.ParseResult parsed = main.parseArgs("pingpong", "--mode", "bandwidth", "--size", "64Mi");
        assertEquals("bench", parsed.subcommand().commandSpec().name());
        BenchCommand old = parsed.subcommand().commandSpec().commandLine().getCommand();
        assertEquals(new BenchSettings(BenchOp.TAG, BenchMode.BANDWIDTH, 64L << 20, 64, 7, 16), old.settings());
    }

    @Test
    void everyOpAndModeNamesItsPerftestTest() {
        assertEquals("tag_lat", BenchOp.TAG.perftestName(BenchMode.LATENCY));
        assertEquals("tag_bw", BenchOp.TAG.perftestName(BenchMode.RATE));
        assertEquals("stream_bw", BenchOp.STREAM.perftestName(BenchMode.BANDWIDTH));
        assertEquals("ucp_am_bw", BenchOp.AM.perftestName(BenchMode.BANDWIDTH));
        assertEquals("ucp_put_bw", BenchOp.PUT.perftestName(BenchMode.BANDWIDTH));
        assertEquals("ucp_get", BenchOp.GET.perftestName(BenchMode.BANDWIDTH));
        assertTrue(BenchOp.PUT.oneSided() && BenchOp.GET.oneSided());
        assertFalse(BenchOp.AM.oneSided());
    }

    @Test
    void oneSidedPhasesAreCounted() {
        assertEquals(1, new BenchSettings(BenchOp.PUT, BenchMode.LATENCY, 8, 10, 5, 1).phases());
        assertEquals(2, new BenchSettings(BenchOp.PUT, BenchMode.BANDWIDTH, 8, 10, 5, 1).phases());
        assertEquals(1, new BenchSettings(BenchOp.GET, BenchMode.RATE, 8, 10, 0, 1).phases());
    }

    @Test
    void controlMessageCarriesEveryOpAndMode() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment msg = arena.allocate(BenchProtocol.CONTROL_SIZE);
            for (BenchOp op : BenchOp.values()) {
                for (BenchMode mode : BenchMode.values()) {
                    BenchSettings run = new BenchSettings(op, mode, 123, 45, 6, 7);
                    BenchProtocol.writeControl(msg, run);
                    assertEquals(run, BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
                }
            }
            msg.set(ValueLayout.JAVA_INT_UNALIGNED, 40, 99); // no such op
            assertThrows(
                    IllegalArgumentException.class, () -> BenchProtocol.readControl(msg, BenchProtocol.CONTROL_SIZE));
            assertThrows(IllegalArgumentException.class, () -> BenchProtocol.readControl(msg, 40)); // version 1's size
            BenchProtocol.writeSeed(msg, 42);
            assertEquals(42, BenchProtocol.readSeed(msg));
        }
    }
}
