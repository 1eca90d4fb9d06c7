package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.internal.worker.Iov;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** Several segments as one message (UCX iov), gathered on send and scattered on receive; some empty. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class ScatterGatherTest {
    /** Parts of varying size; every third one empty. */
    private static List<MemorySegment> parts(Arena arena, int n, int seed) {
        List<MemorySegment> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int size = i % 3 == 2 ? 0 : 1 + (i * 7919 + seed * 131) % 70_000;
            MemorySegment s = arena.allocate(Math.max(size, 1)).asSlice(0, size);
            for (int k = 0; k < size; k++) {
                s.set(ValueLayout.JAVA_BYTE, k, (byte) (k + i * 13 + seed));
            }
            out.add(s);
        }
        return out;
    }

    private static MemorySegment concat(Arena arena, List<MemorySegment> parts) {
        MemorySegment all = arena.allocate(Math.max(1, Iov.total(parts))).asSlice(0, Iov.total(parts));
        long off = 0;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, all, off, p.byteSize());
            off += p.byteSize();
        }
        return all;
    }

    /** Splits {@code total} bytes into three native parts of different sizes (the middle one empty when possible). */
    private static List<MemorySegment> splitThree(Arena arena, long total) {
        long a = total / 3;
        long b = total > 10 ? 0 : total - a;
        long c = total - a - b;
        return List.of(
                arena.allocate(Math.max(a, 1)).asSlice(0, a),
                arena.allocate(Math.max(b, 1)).asSlice(0, b),
                arena.allocate(Math.max(c, 1)).asSlice(0, c));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 8, 100})
    void gatherSendScatterReceiveInOneProcess(int n) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            Loopback pair = Loopback.connect(server, client);
            UcxEndpoint ep = pair.client();
            UcxEndpoint back = pair.server();
            List<MemorySegment> out = parts(arena, n, n);
            MemorySegment expected = concat(arena, out);
            long total = expected.byteSize();

            // Gathered send, contiguous receive.
            MemorySegment flat = arena.allocate(Math.max(total, 1));
            UcxFuture<TagInfo> r1 = server.tagRecvAsync(flat, 1, -1L);
            ep.tagSend(out, 1);
            assertEquals(total, server.await(r1, Duration.ofSeconds(30)).length());
            assertEquals(-1L, expected.mismatch(flat.asSlice(0, total)));

            // Gathered send, scattered receive with a different split.
            List<MemorySegment> in = splitThree(arena, total);
            UcxFuture<TagInfo> r2 = back.worker().tagRecvAsync(in, 2, -1L, back);
            ep.tagSend(out, 2);
            assertEquals(total, server.await(r2, Duration.ofSeconds(30)).length());
            assertEquals(-1L, expected.mismatch(concat(arena, in)));

            // Heap parts are copied on send.
            List<MemorySegment> heap = new ArrayList<>();
            for (MemorySegment p : out) {
                heap.add(MemorySegment.ofArray(p.toArray(ValueLayout.JAVA_BYTE)));
            }
            UcxFuture<TagInfo> r3 = server.tagRecvAsync(flat, 3, -1L);
            ep.tagSend(heap, 3);
            server.await(r3, Duration.ofSeconds(30));
            assertEquals(-1L, expected.mismatch(flat.asSlice(0, total)));

            // Active message with a gathered body.
            LinkedBlockingQueue<AmMessage> got = new LinkedBlockingQueue<>();
            server.setAmHandler(9, got::add);
            ep.amSendAsync(9, MemorySegment.ofArray(new byte[] {4, 2}), out, AmSendMode.AUTO)
                    .get(30, TimeUnit.SECONDS);
            AmMessage m = got.poll(30, TimeUnit.SECONDS);
            assertEquals(total, m.length());
            assertEquals(-1L, expected.mismatch(server.await(m.data(), Duration.ofSeconds(30))));
        }
    }

    @Test
    void scatterReceiveRefusesHeapSegmentsAndEmptyLists() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker()) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> w.tagRecvAsync(List.of(MemorySegment.ofArray(new byte[4])), 1, -1L));
            assertThrows(IllegalArgumentException.class, () -> w.tagRecvAsync(List.<MemorySegment>of(), 1, -1L));
            assertEquals(0, w.pendingOperations());
        }
    }

    @Test
    void gatheredSendToAnotherProcessComesBackWhole() throws Exception {
        Requirements.assumeUcx();
        try (RunningJvm peer = PeerMain.start(Map.of(), "echo-server");
                UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            int port = Integer.parseInt(peer.awaitLine("PORT", Duration.ofSeconds(30)));
            UcxEndpoint ep = w.connect("127.0.0.1", port);
            EchoProtocol.hello(ep, 77);
            List<MemorySegment> out = parts(arena, 8, 5);
            MemorySegment expected = concat(arena, out);
            List<MemorySegment> in = splitThree(arena, expected.byteSize());
            UcxFuture<TagInfo> reply =
                    ep.worker().tagRecvAsync(in, EchoProtocol.tag(77, 1) | EchoProtocol.REPLY_BIT, -1L, ep);
            ep.tagSend(out, EchoProtocol.tag(77, 1));
            assertEquals(
                    expected.byteSize(), w.await(reply, Duration.ofSeconds(30)).length());
            assertEquals(-1L, expected.mismatch(concat(arena, in)));
        }
    }
}
