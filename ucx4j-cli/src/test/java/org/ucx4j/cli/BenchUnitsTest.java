package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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

/** The parts of pingpong that need no UCX: units, protocol, patterns, statistics, argument parsing. */
class PingPongUnitsTest {
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
        PingPongSettings run = new PingPongSettings(PingPongMode.BANDWIDTH, 1 << 20, 100, 0, 16);
        PingPongResult r = new PingPongResult(run, ProgressMode.THREAD_BLOCKING, 2.0, null, "1.13.1", List.of("tcp"));
        assertEquals(50.0, r.bandwidthMiBps(), 1e-9);
        assertEquals(50.0, r.messageRate(), 1e-9);
        Map<String, Object> json = r.toMap();
        assertEquals("tag_bw", json.get("op"));
        assertNull(json.get("latency_us_p50"));
        assertEquals(50.0, json.get("bandwidth_mbps"));
    }

    @Test
    void latencyModeRatesFollowUcxPerftest() {
        PingPongSettings run = new PingPongSettings(PingPongMode.LATENCY, 8, 2, 0, 16);
        PingPongResult r = new PingPongResult(run, ProgressMode.CALLER, 1.0,
                new LatencyStats(new long[] {20_000, 20_000}), "1.13.1", List.of());
        assertEquals(100_000.0, r.messageRate(), 1e-6); // one over 10 us one-way
        assertEquals(8 * 100_000.0 / (1 << 20), r.bandwidthMiBps(), 1e-9);
    }

    @Test
    void controlMessageRoundTripsAndIsChecked() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment msg = arena.allocate(PingPongProtocol.CONTROL_SIZE);
            PingPongSettings run = new PingPongSettings(PingPongMode.BANDWIDTH, 67108864, 100, 10, 16);
            PingPongProtocol.writeControl(msg, run);
            assertEquals(run, PingPongProtocol.readControl(msg, PingPongProtocol.CONTROL_SIZE));
            PingPongProtocol.writeControl(msg, null);
            assertNull(PingPongProtocol.readControl(msg, PingPongProtocol.CONTROL_SIZE));
            msg.set(ValueLayout.JAVA_INT, 0, 42);
            assertThrows(IllegalArgumentException.class, () -> PingPongProtocol.readControl(msg, PingPongProtocol.CONTROL_SIZE));
            PingPongProtocol.writeControl(msg, run);
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, Long.MAX_VALUE); // a size no server should allocate
            assertThrows(IllegalArgumentException.class, () -> PingPongProtocol.readControl(msg, PingPongProtocol.CONTROL_SIZE));
        }
    }

    @Test
    void patternsVerifyAndNameTheFirstDifference() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(29);
            PingPongProtocol.fill(buf, 7);
            PingPongProtocol.verify(buf, 7, "buf");
            assertFalse(PingPongProtocol.matches(buf, 8));
            buf.set(ValueLayout.JAVA_BYTE, 11, (byte) (buf.get(ValueLayout.JAVA_BYTE, 11) ^ 1));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> PingPongProtocol.verify(buf, 7, "buf"));
            assertTrue(e.getMessage().endsWith("offset 11"), e.getMessage());
        }
    }

    @Test
    void bandwidthSlotsPutTheVerifiedMessagesInTheirOwnBuffers() {
        assertEquals(PingPongProtocol.Slot.FIRST, PingPongProtocol.slot(0, 10, true, true));
        assertEquals(PingPongProtocol.Slot.LAST, PingPongProtocol.slot(9, 10, true, true));
        assertEquals(PingPongProtocol.Slot.BULK, PingPongProtocol.slot(5, 10, true, true));
        assertEquals(PingPongProtocol.Slot.FIRST, PingPongProtocol.slot(0, 1, true, true));
        assertEquals(PingPongProtocol.Slot.BULK, PingPongProtocol.slot(0, 10, false, true));
    }

    @Test
    void defaultsFollowUcxPerftest() {
        assertEquals(2000, PingPongSettings.defaultWarmup(20000));
        assertEquals(10, PingPongSettings.defaultWarmup(100));
        assertEquals(10000, PingPongSettings.defaultWarmup(1_000_000));
        assertEquals(64, PingPongSettings.defaultIterations(PingPongMode.BANDWIDTH, 64L << 20));
    }

    @Test
    void sizesAcceptBinarySuffixes() throws Exception {
        PingPongCommand.SizeConverter c = new PingPongCommand.SizeConverter();
        assertEquals(8L, c.convert("8"));
        assertEquals(67108864L, c.convert("64Mi"));
        assertEquals(67108864L, c.convert("64MiB"));
        assertEquals(4096L, c.convert("4Ki"));
        assertThrows(CommandLine.TypeConversionException.class, () -> c.convert("64MB"));
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
    }
}
