package org.ucx4j.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The launcher's rendezvous against raw peers that speak its wire format badly on purpose: strangers that
 * hold its hello slots, trickle a hello or flood it with warnings, and token holders that run ahead, stop
 * reading, or reset right after their hello. Each case failed on the rendezvous before these bounds (a
 * lockout, a hello held for minutes, a WARN line per stranger, memory kept per round, a hang).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RendezvousHostilePeerTest {
    private final byte[] token = RendezvousServer.newToken();
    private final ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
    private final List<Socket> sockets = new ArrayList<>();
    private final List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    private RendezvousServer server;

    @AfterEach
    void stop() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        pool.shutdownNow();
        if (server != null) {
            server.close();
        }
    }

    private RendezvousServer start(int size, int helloMillis, int writeMillis) throws IOException {
        return start(size, helloMillis, writeMillis, RendezvousServer.WAIT_REPORT_MILLIS);
    }

    /** A server whose warnings (warnings, waiting rounds) go to {@link #warnings}. */
    private RendezvousServer start(int size, int helloMillis, int writeMillis, int waitReportMillis)
            throws IOException {
        return start(size, helloMillis, writeMillis, waitReportMillis, 0);
    }

    /** The same, with a round timeout (0: none). */
    private RendezvousServer start(
            int size, int helloMillis, int writeMillis, int waitReportMillis, long roundTimeoutMillis)
            throws IOException {
        server = RendezvousServer.start(
                InetAddress.getLoopbackAddress(),
                size,
                token,
                new RendezvousServer.Limits(
                        helloMillis,
                        RendezvousServer.HELLO_EVICTION_AGE_MILLIS,
                        writeMillis,
                        waitReportMillis,
                        roundTimeoutMillis,
                        warnings::add));
        return server;
    }

    private Map<String, String> env(int rank, int size) {
        return ClusterTest.workerEnv(server.address(), token, rank, size);
    }

    private int port() {
        String a = server.address();
        return Integer.parseInt(a.substring(a.lastIndexOf(':') + 1));
    }

    private Socket raw(int receiveBuffer) throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        if (receiveBuffer > 0) {
            s.setReceiveBufferSize(receiveBuffer);
        }
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port()));
        return s;
    }

    private byte[] hello(int rank) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        d.write(RendezvousWire.MAGIC);
        d.write(token);
        d.writeInt(rank);
        return b.toByteArray();
    }

    /** A raw member: hello sent, acknowledgement read. */
    private Socket joinRaw(int rank, int receiveBuffer) throws IOException {
        Socket s = raw(receiveBuffer);
        s.getOutputStream().write(hello(rank));
        DataInputStream in = new DataInputStream(s.getInputStream());
        assertEquals(RendezvousWire.OK, in.readInt());
        in.readInt(); // size
        return s;
    }

    @Test
    void silentStrangersHoldingEverySlotGiveWayToAnHonestJoin() throws Exception {
        start(1, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS);
        for (int i = 0; i < RendezvousServer.MAX_PENDING_HELLOS; i++) {
            raw(0); // connected, silent: each holds a hello slot
        }
        // The newcomer is closed while every slot is younger than the eviction age; the join tries again
        // and gets the oldest slot once it has aged (before: closed at once, EOFException, no retry).
        long t0 = System.nanoTime();
        try (Cluster c = Cluster.join(env(0, 1), Duration.ofSeconds(20))) {
            assertArrayEquals(new byte[] {3}, c.allGather(new byte[] {3}).get(0));
        }
        assertTrue(
                System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(RendezvousServer.HELLO_TIMEOUT_MILLIS),
                "joined only once the strangers' hellos timed out");
        assertTrue(
                warnings.stream().anyMatch(l -> l.contains("connections are waiting for their hello")),
                warnings.toString());
    }

    @Test
    void aHelloTrickledPastTheTimeoutIsCutThoughEachPieceCameInTime() throws Exception {
        start(1, 1_000, RendezvousServer.WRITE_TIMEOUT_MILLIS);
        Socket s = raw(0);
        s.setSoTimeout(10_000);
        byte[] h = hello(0);
        OutputStream out = s.getOutputStream();
        // Four pieces 600 ms apart: every gap is inside the 1 s timeout, the whole (1.8 s) well past it.
        int[] cuts = {0, 11, 22, 33, h.length};
        long t0 = System.nanoTime();
        boolean cut = false;
        try {
            for (int i = 0; i + 1 < cuts.length; i++) {
                if (i > 0) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(600)); // the attacker's pacing
                }
                out.write(h, cuts[i], cuts[i + 1] - cuts[i]);
                out.flush();
            }
            cut = s.getInputStream().read() < 0;
        } catch (IOException closed) {
            cut = true; // reset while writing the last piece
        }
        assertTrue(cut, "a hello that took over its timeout was answered");
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
        assertTrue(warnings.stream().anyMatch(l -> l.contains("no whole hello within 1000 ms")), warnings.toString());
    }

    @Test
    void strangersRefusedByTheHundredLogAFewLinesAndASummary() throws Exception {
        start(1, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS);
        byte[] garbage = new byte[RendezvousWire.MAGIC.length + RendezvousWire.TOKEN_BYTES + Integer.BYTES];
        for (int i = 0; i < 200; i++) {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port())) {
                s.getOutputStream().write(garbage);
                assertEquals(-1, s.getInputStream().read(), "a stranger is told nothing");
            }
        }
        // 5 lines a window, the rest counted for the window's summary (before: one line per stranger).
        assertEquals(5, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains("without the launch's token"), warnings.get(0));
        // The port still serves the launch.
        try (Cluster c = Cluster.join(env(0, 1), Duration.ofSeconds(10))) {
            assertEquals(1, c.size());
        }
    }

    @Test
    void aWorkerRunningAheadOfTheRoundFailsTheClusterNamingIt() throws Exception {
        start(2, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS);
        Socket ahead = joinRaw(0, 0);
        try (Cluster honest = Cluster.join(env(1, 2), Duration.ofSeconds(10))) {
            DataOutputStream out = new DataOutputStream(ahead.getOutputStream());
            for (int round = 0; round < 1_000; round++) { // before: every one of them kept by the launcher
                out.writeInt(4);
                out.writeInt(round);
            }
            out.flush();
            // A round may complete before the launcher reads the value after it; the next cannot.
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                for (int round = 0; round < 1_000; round++) {
                    honest.allGather(new byte[1]);
                }
            });
            assertTrue(e.getMessage().contains("rank 0 sent a value for round"), e.getMessage());
            assertTrue(e.getMessage().contains("lock step"), e.getMessage());
        }
    }

    @Test
    void aWorkerThatStopsReadingIsCutOffAndTheOthersAreToldWhich() throws Exception {
        int size = 3;
        start(size, RendezvousServer.HELLO_TIMEOUT_MILLIS, 3_000);
        Socket mute = joinRaw(0, 4096); // never reads again, with a small receive buffer
        DataOutputStream muteOut = new DataOutputStream(mute.getOutputStream());
        byte[] v = new byte[RendezvousWire.MAX_VALUE];
        List<Future<String>> honest = new ArrayList<>();
        AtomicIntegerArray completed = new AtomicIntegerArray(size);
        for (int r = 1; r < size; r++) {
            int rank = r;
            honest.add(pool.submit(() -> {
                try (Cluster c = Cluster.join(env(rank, size), Duration.ofSeconds(10))) {
                    for (int round = 0; round < 10_000; round++) {
                        c.allGather(v);
                        completed.set(rank, round + 1);
                    }
                    return "all rounds completed";
                } catch (IllegalStateException e) {
                    return e.getMessage();
                }
            }));
        }
        // The mute worker contributes in step (round r's value once the honest ranks have round r - 1) but
        // never takes a round's values: its buffers fill, and a write to it stalls.
        Future<?> feeder = pool.submit(() -> {
            for (int round = 0; round < 10_000; round++) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (completed.get(1) < round || completed.get(2) < round) {
                    if (System.nanoTime() > deadline) {
                        return null; // the honest ranks stopped (the assertions below say why)
                    }
                    LockSupport.parkNanos(100_000);
                }
                muteOut.writeInt(v.length);
                muteOut.write(v);
                muteOut.flush();
            }
            return null;
        });
        for (Future<String> f : honest) {
            String outcome = f.get(30, TimeUnit.SECONDS); // before: both blocked for ever, no error
            assertTrue(outcome.contains("rank 0 did not take a round's values within 3000 ms"), outcome);
        }
        feeder.cancel(true);
    }

    @Test
    void aJoinerResetRightAfterItsHelloFailsTheClusterInsteadOfHangingIt() throws Exception {
        for (int attempt = 0; attempt < 5; attempt++) {
            start(2, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS);
            Socket s = new Socket();
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port()));
            s.setSoLinger(true, 0);
            s.getOutputStream().write(hello(0));
            s.close(); // a reset, right after the hello
            Future<String> honest = pool.submit(() -> {
                try (Cluster c = Cluster.join(env(1, 2), Duration.ofSeconds(10))) {
                    c.allGather(new byte[0]);
                    return "completed";
                } catch (IllegalStateException e) {
                    return e.getMessage();
                }
            });
            try {
                String outcome = honest.get(5, TimeUnit.SECONDS);
                assertTrue(outcome.contains("rank 0"), outcome); // admitted, then lost: its leaving is reported
            } catch (TimeoutException waiting) {
                // The reset came before the hello was read: rank 0 never joined, and the collective rightly
                // waits for it (the server's close ends it). Before, rank 0 was admitted, never reported gone,
                // and held its place: the collective waited for ever (9 runs of 10).
                assertEquals(1, server.joined(), "rank 0 holds its place without a connection");
            } catch (ExecutionException e) {
                throw new AssertionError(e.getCause());
            }
            server.close();
        }
    }

    /**
     * With a round timeout, a worker that never joins a collective fails everyone's collective (its own
     * next one too) naming it, instead of stalling them for ever; rounds that complete in time are not
     * affected, and the timeout starts with each round.
     */
    @Test
    void aRoundNotCompleteWithinTheCollectiveTimeoutFailsEveryWorkerNamingTheMissingRanks() throws Exception {
        start(3, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS, 60_000, 1_000);
        try (Cluster a = Cluster.join(env(0, 3), Duration.ofSeconds(10));
                Cluster b = Cluster.join(env(1, 3), Duration.ofSeconds(10));
                Cluster stuck = Cluster.join(env(2, 3), Duration.ofSeconds(10))) {
            // Two rounds in time: each well within the timeout.
            for (int round = 0; round < 2; round++) {
                Future<List<byte[]>> fa = pool.submit(() -> a.allGather(new byte[] {0}));
                Future<List<byte[]>> fb = pool.submit(() -> b.allGather(new byte[] {1}));
                assertEquals(3, stuck.allGather(new byte[] {2}).size());
                assertEquals(3, fa.get(10, TimeUnit.SECONDS).size());
                assertEquals(3, fb.get(10, TimeUnit.SECONDS).size());
            }
            long start = System.nanoTime();
            Future<List<byte[]>> fa = pool.submit(() -> a.allGather(new byte[] {0}));
            Future<List<byte[]>> fb = pool.submit(() -> b.allGather(new byte[] {1}));
            for (Future<List<byte[]>> f : List.of(fa, fb)) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
                assertInstanceOf(IllegalStateException.class, e.getCause());
                String m = e.getCause().getMessage();
                assertTrue(m.contains("round 2 was not complete within the collective timeout (1000 ms)"), m);
                assertTrue(m.contains("waited for rank(s) 2 (2 of 3 have given their values)"), m);
            }
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(1_000), "not before the timeout");
            // The worker that was late learns it at its next collective.
            IllegalStateException late = assertThrows(IllegalStateException.class, stuck::barrier);
            assertTrue(late.getMessage().contains("waited for rank(s) 2"), late.getMessage());
            assertTrue(
                    warnings.stream().anyMatch(l -> l.contains("round 2 was not complete")),
                    "the launcher says so too: " + warnings);
        }
    }

    @Test
    void aRoundThatWaitsLongIsReportedWithTheRanksItWaitsFor() throws Exception {
        start(3, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS, 300);
        try (Cluster a = Cluster.join(env(0, 3), Duration.ofSeconds(10));
                Cluster b = Cluster.join(env(1, 3), Duration.ofSeconds(10));
                Cluster stuck = Cluster.join(env(2, 3), Duration.ofSeconds(10))) {
            Future<List<byte[]>> fa = pool.submit(() -> a.allGather(new byte[] {0}));
            Future<List<byte[]>> fb = pool.submit(() -> b.allGather(new byte[] {1}));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (warnings.stream().noneMatch(l -> l.contains("round 0 has waited"))) {
                assertTrue(System.nanoTime() < deadline, "no report of the waiting round: " + warnings);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            String line = warnings.stream()
                    .filter(l -> l.contains("round 0 has waited"))
                    .findFirst()
                    .orElseThrow();
            assertTrue(line.contains("has waited 300 ms for rank(s) 2 (2 of 3 have given their values)"), line);
            // Then again after twice as long (600 ms more).
            while (warnings.stream().noneMatch(l -> l.contains("round 0 has waited 900 ms"))) {
                assertTrue(System.nanoTime() < deadline, "no second report: " + warnings);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            // The stuck worker comes: the round completes, and the reports stop.
            assertArrayEquals(new byte[] {0}, stuck.allGather(new byte[] {2}).get(0));
            assertArrayEquals(new byte[] {2}, fa.get(10, TimeUnit.SECONDS).get(2));
            assertArrayEquals(new byte[] {2}, fb.get(10, TimeUnit.SECONDS).get(2));
        }
    }

    @Test
    void theListenerClosesOnceEveryRankJoined() throws Exception {
        start(2, RendezvousServer.HELLO_TIMEOUT_MILLIS, RendezvousServer.WRITE_TIMEOUT_MILLIS);
        try (Cluster a = Cluster.join(env(0, 2), Duration.ofSeconds(10))) {
            raw(0).close(); // still open while rank 1 is missing
            try (Cluster b = Cluster.join(env(1, 2), Duration.ofSeconds(10))) {
                assertThrows(ConnectException.class, () -> raw(0));
                Future<List<byte[]>> other = pool.submit(() -> b.allGather(new byte[] {2}));
                List<byte[]> values = a.allGather(new byte[] {1});
                assertArrayEquals(new byte[] {2}, values.get(1));
                assertArrayEquals(
                        new byte[] {1}, other.get(10, TimeUnit.SECONDS).get(0));
            }
        }
    }

    @Test
    void theMeshHelloProvesTheTokenForItsRankWithoutCarryingIt() {
        java.util.HexFormat hex = java.util.HexFormat.of();
        String hello = hex.formatHex(ClusterMesh.hello(3, token));
        assertFalse(hello.contains(RendezvousServer.tokenText(token)), "the token travels in the mesh's hello");
        assertFalse(
                hello.substring(8)
                        .equals(hex.formatHex(ClusterMesh.hello(4, token)).substring(8)),
                "rank 3's proof would pass for rank 4");
        assertFalse(
                hello.equals(hex.formatHex(ClusterMesh.hello(3, RendezvousServer.newToken()))),
                "the proof does not depend on the token");
    }
}
