package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** Active messages: no receive posted in advance, sizes around the rendezvous threshold, headers, handlers. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class ActiveMessageTest {
    private static final long[] SIZES = {0, 1, 1023, 1024, 1025, 65_536, 8 << 20, 64L << 20};

    private UcxContext ctx;
    private UcxWorker server;
    private UcxWorker client;
    private UcxEndpoint toServer;
    private UcxEndpoint toClient;
    private Arena arena;

    @BeforeEach
    void connect() throws Exception {
        Requirements.assumeUcx();
        // A low threshold so that small sizes already take the rendezvous path.
        ctx = UcxContext.builder().option("RNDV_THRESH", "1024").build();
        server = ctx.newWorker();
        client = ctx.newWorker();
        Loopback pair = Loopback.connect(server, client);
        toServer = pair.client();
        toClient = pair.server();
        arena = Arena.ofShared();
    }

    @AfterEach
    void close() {
        if (arena != null) {
            arena.close();
        }
        if (ctx != null) {
            ctx.close();
        }
    }

    private MemorySegment pattern(long size, int seed) {
        MemorySegment s = arena.allocate(Math.max(size, 1)).asSlice(0, size);
        for (long i = 0; i < size; i += 4096) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i / 4096 + seed));
        }
        if (size > 0) {
            s.set(ValueLayout.JAVA_BYTE, size - 1, (byte) seed);
        }
        return s;
    }

    @Test
    void simpleChannelReceiverAskingBeforeAndAfterTheSender() {
        int seed = 1;
        for (long size : SIZES) {
            MemorySegment out = pattern(size, seed++);
            // Receiver first.
            UcxFuture<MemorySegment> early = toClient.amRecvAsync();
            toServer.amSend(out);
            MemorySegment got = server.await(early, Duration.ofSeconds(60));
            assertEquals(size, got.byteSize(), "size " + size);
            assertEquals(-1L, out.mismatch(got), "content of " + size + " bytes");
            // Sender first: the message waits for the receive.
            toServer.amSend(out);
            MemorySegment late = toClient.amRecv();
            assertEquals(-1L, out.mismatch(late), "content of " + size + " bytes (late receiver)");
        }
    }

    @Test
    void simpleChannelBodiesLandInTheAllocatorOfTheirKind() {
        AtomicInteger allocations = new AtomicInteger();
        List<Long> eagerCopies = new CopyOnWriteArrayList<>();
        AmAllocator deviceStandIn = new AmAllocator() { // host memory posing as CUDA: the routing is the point
                    @Override
                    public MemorySegment allocate(long size) {
                        allocations.incrementAndGet();
                        return arena.allocate(Math.max(size, 1), 64).asSlice(0, size);
                    }

                    @Override
                    public MemoryKind kind() {
                        return MemoryKind.CUDA;
                    }

                    @Override
                    public void copyEager(MemorySegment dst, MemorySegment eagerData) {
                        eagerCopies.add(eagerData.byteSize());
                        MemorySegment.copy(eagerData, 0, dst, 0, eagerData.byteSize());
                    }
                };
        // No allocator for the kind yet: the receive fails with the reason instead of waiting forever.
        client.await(toServer.amSendAsync(pattern(100, 3), MemoryKind.CUDA), Duration.ofSeconds(60));
        RuntimeException e = assertThrows(
                RuntimeException.class, () -> server.await(toClient.amRecvAsync(), Duration.ofSeconds(60)));
        assertTrue(causes(e).contains("no active-message allocator for CUDA"), causes(e));
        assertThrows(IllegalArgumentException.class, () -> server.setAmAllocator(MemoryKind.HOST, deviceStandIn));

        server.setAmAllocator(MemoryKind.CUDA, deviceStandIn);
        for (long size : new long[] {100, 65_536}) { // eager, then rendezvous (RNDV_THRESH=1024)
            MemorySegment out = pattern(size, 5);
            client.await(toServer.amSendAsync(out, MemoryKind.CUDA), Duration.ofSeconds(60));
            MemorySegment got = server.await(toClient.amRecvAsync(), Duration.ofSeconds(60));
            assertEquals(-1L, out.mismatch(got), "content of " + size + " bytes");
        }
        assertEquals(2, allocations.get());
        assertEquals(List.of(100L), eagerCopies, "only the eager body is copied in by the allocator");
        // Host bodies still go to the host allocator.
        toServer.amSend(pattern(10, 6));
        assertEquals(10, toClient.amRecv().byteSize());
        assertEquals(2, allocations.get());
    }

    @Test
    void anAllocatorReturningUnusableMemoryFailsTheMessageNotTheProcess() {
        AmAllocator heap = size -> MemorySegment.ofArray(new byte[8]); // on the heap, and too small
        server.setAmAllocator(MemoryKind.HOST, heap);
        for (long size : new long[] {100, 65_536}) { // eager, then rendezvous (RNDV_THRESH=1024)
            toServer.amSend(pattern(size, 7));
            RuntimeException e = assertThrows(
                    RuntimeException.class, () -> server.await(toClient.amRecvAsync(), Duration.ofSeconds(60)));
            assertTrue(causes(e).contains("the allocator returned"), causes(e));
        }
        server.setAmAllocator(MemoryKind.HOST, AmAllocator.host());
        MemorySegment out = pattern(65_536, 8);
        toServer.amSend(out);
        assertEquals(-1L, out.mismatch(toClient.amRecv()), "the channel still works");
    }

    private static String causes(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append(" / ");
        }
        return b.toString();
    }

    @Test
    void handlerGetsHeaderSenderAndBodyInEitherMode() throws Exception {
        LinkedBlockingQueue<AmMessage> got = new LinkedBlockingQueue<>();
        server.setAmHandler(7, got::add);
        byte[] header = "sixteen-byte-hdr".getBytes();
        for (AmSendMode mode : AmSendMode.values()) {
            MemorySegment body = pattern(100_000, mode.ordinal());
            toServer.amSend(7, MemorySegment.ofArray(header), body, mode);
            AmMessage m = got.poll(30, TimeUnit.SECONDS);
            assertArrayEquals(header, m.header());
            assertEquals(7, m.id());
            assertEquals(100_000, m.length());
            if (mode == AmSendMode.RENDEZVOUS) {
                assertTrue(m.isRendezvous(), "forced rendezvous");
            }
            if (mode == AmSendMode.EAGER) {
                assertFalse(m.isRendezvous(), "forced eager");
            }
            assertTrue(m.sender().isPresent(), "the sender's endpoint is known");
            MemorySegment data = server.await(m.data(), Duration.ofSeconds(30));
            assertEquals(-1L, body.mismatch(data), "body in mode " + mode);
        }
    }

    @Test
    void headerUpToTheMaximumAndOneByteBeyond() throws Exception {
        long max = client.maxAmHeader();
        assertTrue(max > 0, "max_am_header " + max);
        LinkedBlockingQueue<AmMessage> got = new LinkedBlockingQueue<>();
        server.setAmHandler(3, got::add);
        MemorySegment header = arena.allocate(max);
        header.fill((byte) 9);
        toServer.amSend(3, header, arena.allocate(10), AmSendMode.AUTO);
        assertEquals(max, got.poll(30, TimeUnit.SECONDS).header().length);
        MemorySegment tooBig = arena.allocate(max + 1);
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> toServer.amSendAsync(3, tooBig, arena.allocate(10), AmSendMode.AUTO));
        assertTrue(e.getMessage().contains("maximum of " + max), e.getMessage());
        // The simple channel's id is reserved (UCXX's am_send uses AM id 0); ids past 16 bits do not exist.
        IllegalArgumentException reserved =
                assertThrows(IllegalArgumentException.class, () -> server.setAmHandler(0, m -> {}));
        assertTrue(reserved.getMessage().contains("simple channel"), reserved.getMessage());
        assertThrows(IllegalArgumentException.class, () -> server.setAmHandler(0x10000, m -> {}));
    }

    @Test
    void aHandlerThatThrowsIsReportedAndLaterMessagesStillArrive() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        LinkedBlockingQueue<AmMessage> got = new LinkedBlockingQueue<>();
        server.setAmHandler(5, m -> {
            if (calls.incrementAndGet() == 1) {
                throw new IllegalStateException("handler failure on purpose");
            }
            got.add(m);
        });
        toServer.amSend(5, MemorySegment.NULL, arena.allocate(8), AmSendMode.AUTO);
        toServer.amSend(5, MemorySegment.NULL, pattern(4096, 3), AmSendMode.RENDEZVOUS);
        AmMessage second = got.poll(30, TimeUnit.SECONDS);
        assertEquals(4096, second.length());
        assertEquals(2, calls.get());
    }

    @Test
    void pendingSimpleReceiveFailsWhenTheEndpointCloses() {
        UcxFuture<MemorySegment> pending = toClient.amRecvAsync();
        toClient.close();
        UcxException e = assertThrows(UcxException.class, () -> server.await(pending, Duration.ofSeconds(10)));
        assertTrue(e instanceof UcxCanceledException, e.toString());
    }

    @Test
    void echoThroughAnotherProcess() throws Exception {
        try (RunningJvm peer = PeerMain.start(Map.of(), "am-echo-server")) {
            int port = Integer.parseInt(peer.awaitLine("PORT", Duration.ofSeconds(30)));
            try (UcxEndpoint ep = client.connect("127.0.0.1", port)) {
                int seed = 10;
                for (long size : SIZES) {
                    MemorySegment out = pattern(size, seed++);
                    UcxFuture<MemorySegment> back = ep.amRecvAsync();
                    ep.amSend(out);
                    MemorySegment got = client.await(back, Duration.ofSeconds(60));
                    assertEquals(size, got.byteSize());
                    assertEquals(-1L, out.mismatch(got), "echo of " + size + " bytes");
                }
            }
        }
    }

    @Test
    void theAllocatorSeesIdHeaderAndSizeOfEachMessage() throws Exception {
        java.util.List<String> seen = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        MemorySegment target = arena.allocate(1 << 20);
        server.setAmAllocator(new AmAllocator() {
            @Override
            public MemorySegment allocate(long size) {
                throw new AssertionError("the id-aware variant must be called");
            }

            @Override
            public MemorySegment allocate(int id, byte[] header, long size) {
                seen.add(id + ":" + new String(header) + ":" + size);
                return target.asSlice(0, size);
            }
        });
        LinkedBlockingQueue<AmMessage> got = new LinkedBlockingQueue<>();
        server.setAmHandler(11, got::add);
        MemorySegment body = pattern(5000, 4);
        toServer.amSend(11, MemorySegment.ofArray("hdr".getBytes()), body, AmSendMode.RENDEZVOUS);
        MemorySegment data = server.await(got.poll(30, TimeUnit.SECONDS).data(), Duration.ofSeconds(30));
        assertEquals(java.util.List.of("11:hdr:5000"), seen);
        assertEquals(target.address(), data.address(), "received straight into the allocator's memory");
        assertEquals(-1L, body.mismatch(data));
    }
}
