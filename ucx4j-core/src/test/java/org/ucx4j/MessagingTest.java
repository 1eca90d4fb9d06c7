package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** Tag and stream round trips against an echo server in another JVM, in every progress mode. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class MessagingTest {
    private static final long[] SIZES = sizes();

    private static long[] sizes() {
        String only = System.getProperty("ucx4jtest.sizes");
        if (only != null) {
            return java.util.Arrays.stream(only.split(","))
                    .mapToLong(Long::parseLong)
                    .toArray();
        }
        return new long[] {0, 1, 8, 4095, 4096, 65_536, (1 << 20) + 3, 8 << 20, 64L << 20};
    }

    private RunningJvm peer;
    private int port;
    private UcxContext context;
    private int nextId = 1;

    @BeforeAll
    void startPeer() throws Exception {
        Requirements.assumeUcx();
        peer = PeerMain.start(
                Map.of(),
                java.util.List.of("-Ducx4jtest.trace=" + Boolean.getBoolean("ucx4jtest.trace")),
                "echo-server");
        port = Integer.parseInt(peer.awaitLine("PORT", Duration.ofSeconds(30)));
        context = UcxContext.create();
    }

    @AfterAll
    void stopPeer() throws Exception {
        if (context != null) {
            context.close();
        }
        if (peer != null) {
            peer.close();
        }
    }

    private static void fillRandom(MemorySegment s, long seed) {
        Random r = new Random(seed);
        byte[] chunk = new byte[65_536];
        for (long off = 0; off < s.byteSize(); off += chunk.length) {
            r.nextBytes(chunk);
            int n = (int) Math.min(chunk.length, s.byteSize() - off);
            MemorySegment.copy(chunk, 0, s, java.lang.foreign.ValueLayout.JAVA_BYTE, off, n);
        }
    }

    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void tagRoundTripsZeroTo64MiB(ProgressMode mode) {
        int id = nextId++;
        try (UcxWorker worker = context.newWorker(
                        WorkerOptions.builder().progressMode(mode).build());
                UcxEndpoint ep = worker.connect("127.0.0.1", port);
                Arena arena = Arena.ofShared()) {
            EchoProtocol.hello(ep, id);
            MemorySegment out = arena.allocate(64L << 20, 64);
            MemorySegment in = arena.allocate(64L << 20, 64);
            int seq = 0;
            for (long size : SIZES) {
                MemorySegment o = out.asSlice(0, size);
                fillRandom(o, size);
                in.asSlice(0, size).fill((byte) 0x5A);
                if (Boolean.getBoolean("ucx4jtest.trace")) {
                    System.out.println("client " + id + " " + mode + " echo " + size + " seq " + seq);
                }
                long got = EchoProtocol.echoTag(worker, ep, o, in, EchoProtocol.tag(id, seq++));
                assertEquals(size, got, "echo length for " + size + " bytes");
                assertEquals(-1L, o.mismatch(in.asSlice(0, size)), "echo content for " + size + " bytes");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void streamRoundTripsZeroTo64MiB(ProgressMode mode) {
        int id = nextId++;
        try (UcxWorker worker = context.newWorker(
                        WorkerOptions.builder().progressMode(mode).build());
                UcxEndpoint ep = worker.connect("127.0.0.1", port);
                Arena arena = Arena.ofShared()) {
            EchoProtocol.hello(ep, id);
            MemorySegment out = arena.allocate(64L << 20, 64);
            MemorySegment in = arena.allocate(64L << 20, 64);
            for (long size : SIZES) {
                MemorySegment o = out.asSlice(0, size);
                fillRandom(o, size + 1);
                in.asSlice(0, size).fill((byte) 0x5A);
                EchoProtocol.echoStream(ep, o, in);
                assertEquals(-1L, o.mismatch(in.asSlice(0, size)), "stream echo content for " + size + " bytes");
            }
        }
    }

    @Test
    void heapArraysAndBuffersAreCopiedBothWays() {
        int id = nextId++;
        try (UcxWorker worker = context.newWorker();
                UcxEndpoint ep = worker.connect("127.0.0.1", port)) {
            EchoProtocol.hello(ep, id);
            byte[] out = new byte[100_000];
            new Random(7).nextBytes(out);
            byte[] in = new byte[100_000];
            var reply = ep.worker().tagRecvAsync(in, EchoProtocol.tag(id, 1) | EchoProtocol.REPLY_BIT, -1L, ep);
            ep.tagSend(out, EchoProtocol.tag(id, 1));
            assertEquals(out.length, worker.await(reply).length());
            assertTrue(java.util.Arrays.equals(out, in));
            java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(1000);
            for (int i = 0; i < 1000; i++) {
                direct.put(i, (byte) i);
            }
            byte[] back = new byte[1000];
            reply = ep.worker().tagRecvAsync(back, EchoProtocol.tag(id, 2) | EchoProtocol.REPLY_BIT, -1L, ep);
            ep.tagSend(direct, EchoProtocol.tag(id, 2));
            worker.await(reply);
            for (int i = 0; i < 1000; i++) {
                assertEquals((byte) i, back[i]);
            }
        }
    }

    @Test
    void pendingReceiveForOneTagDoesNotBlockAnother() {
        int id = nextId++;
        try (UcxWorker worker = context.newWorker();
                UcxEndpoint ep = worker.connect("127.0.0.1", port);
                Arena arena = Arena.ofShared()) {
            EchoProtocol.hello(ep, id);
            MemorySegment never = arena.allocate(64);
            UcxFuture<TagInfo> pending =
                    ep.worker().tagRecvAsync(never, EchoProtocol.tag(id, 99) | EchoProtocol.REPLY_BIT, -1L, ep);
            MemorySegment out = arena.allocate(64);
            out.fill((byte) 3);
            MemorySegment in = arena.allocate(64);
            assertEquals(64, EchoProtocol.echoTag(worker, ep, out, in, EchoProtocol.tag(id, 1)));
            assertFalse(pending.isDone(), "the receive for a tag never sent must still be pending");
            assertTrue(worker.tagProbe(EchoProtocol.tag(id, 99) | EchoProtocol.REPLY_BIT, -1L)
                    .isEmpty());
            pending.cancel(true);
            UcxCanceledException e = assertThrows(UcxCanceledException.class, () -> worker.await(pending));
            assertEquals(UcxStatus.CANCELED, e.status());
        }
    }

    @Test
    void truncatedReceiveFailsWithClearError() {
        int id = nextId++;
        try (UcxWorker worker = context.newWorker();
                UcxEndpoint ep = worker.connect("127.0.0.1", port);
                Arena arena = Arena.ofShared()) {
            EchoProtocol.hello(ep, id);
            MemorySegment out = arena.allocate(1000);
            MemorySegment small = arena.allocate(10);
            var reply = ep.worker().tagRecvAsync(small, EchoProtocol.tag(id, 5) | EchoProtocol.REPLY_BIT, -1L, ep);
            ep.tagSend(out, EchoProtocol.tag(id, 5));
            UcxException e = assertThrows(UcxException.class, () -> worker.await(reply));
            assertEquals(UcxStatus.MESSAGE_TRUNCATED, e.status());
            assertTrue(e.getMessage().contains("10-byte receive buffer"), e.getMessage());
        }
    }

    @Test
    void blockingReceiveWithTimeoutCancels() {
        try (UcxWorker worker = context.newWorker();
                Arena arena = Arena.ofShared()) {
            long start = System.nanoTime();
            UcxTimeoutException e = assertThrows(
                    UcxTimeoutException.class,
                    () -> worker.tagRecv(arena.allocate(8), 0x7777, -1L, Duration.ofMillis(200)));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms >= 150 && ms < 5000, "timed out after " + ms + " ms");
            assertTrue(e.getMessage().contains("tagRecv"), e.getMessage());
            assertEquals(0, worker.pendingOperations(), "the timed-out receive was canceled");
        }
    }
}
