package org.ucx4j.comm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.UcxConfig;
import org.ucx4j.testsupport.RunningJvm;

/**
 * The {@link Comm} contract, run against every transport by a subclass that names its listen address.
 * Both ends run in this JVM (a second JVM where a peer must die); every test closes what it opened.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class CommConformanceTest {
    /** Where to listen, with port 0 (or an empty name): for example {@code tcp://127.0.0.1:0}. */
    abstract String listenAddress();

    /** Whether the transport crosses processes (and so can lose a killed peer). */
    boolean crossesProcesses() {
        return true;
    }

    final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    CommOptions options() {
        return options(UcxConfig.builder().build());
    }

    static CommOptions options(UcxConfig config) {
        return CommOptions.builder()
                .config(config)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    CommListener listen(CommHandler handler) {
        return listen(handler, options());
    }

    CommListener listen(CommHandler handler, CommOptions options) {
        CommListener l = Comms.listen(URI.create(listenAddress()), handler, options);
        toClose.add(l);
        return l;
    }

    Comm connect(CommListener l) {
        return connect(l.address(), options());
    }

    Comm connect(URI address, CommOptions options) {
        Comm c = Comms.connect(address, options);
        toClose.add(c);
        return c;
    }

    /** A connected client and the listener's side of it. */
    record Pair(CommListener listener, Comm client, Comm server) {}

    /** Listens, connects, and waits for the accepted comm; everything is closed after the test. */
    Pair pair() throws Exception {
        CompletableFuture<Comm> accepted = new CompletableFuture<>();
        CommListener l = listen(accepted::complete);
        Comm client = connect(l);
        Comm server = accepted.get(10, TimeUnit.SECONDS);
        toClose.add(server);
        return new Pair(l, client, server);
    }

    /** A handler that echoes every message until the client closes. */
    static void echo(Comm comm) {
        try (comm) {
            while (true) {
                try (Message m = comm.read()) {
                    comm.write(m);
                }
            }
        } catch (CommClosedException e) {
            // the client closed
        }
    }

    static byte[] pattern(int size, int seed) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    static MemorySegment nativePattern(Arena arena, long size, int seed) {
        MemorySegment s = arena.allocate(Math.max(size, 1)).asSlice(0, size);
        for (long i = 0; i < size; i += 4096) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i / 4096 + seed));
        }
        if (size > 0) {
            s.set(ValueLayout.JAVA_BYTE, size - 1, (byte) (seed ^ 0x5a));
        }
        return s;
    }

    static void assertSamePattern(MemorySegment expected, MemorySegment actual) {
        assertEquals(expected.byteSize(), actual.byteSize());
        assertEquals(-1L, expected.mismatch(actual), "frame content differs");
    }

    // ------------------------------------------------------------------ tests

    @Test
    void pingPongBothWaysThenClose() throws Exception {
        CompletableFuture<Comm> accepted = new CompletableFuture<>();
        CommListener l = listen(accepted::complete);
        assertEquals(URI.create(listenAddress()).getScheme(), l.address().getScheme());
        Comm client = connect(l);
        Comm server = accepted.get(10, TimeUnit.SECONDS);
        toClose.add(server);

        client.write(Message.ofBytes(pattern(100, 1), pattern(3, 2)));
        try (Message m = server.read()) {
            assertEquals(2, m.frameCount());
            assertArrayEquals(pattern(100, 1), m.frame(0).toByteArray());
            assertArrayEquals(pattern(3, 2), m.frame(1).toByteArray());
        }
        server.write(Message.ofBytes(pattern(7, 3)));
        try (Message m = client.read()) {
            assertArrayEquals(pattern(7, 3), m.frame(0).toByteArray());
        }
        client.close();
        CommClosedException e = assertThrows(CommClosedException.class, () -> server.read(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("closed by the peer"), e.getMessage());
        assertTrue(client.isClosed());
        assertTrue(server.isClosed());
        assertThrows(CommClosedException.class, () -> client.write(Message.ofBytes(new byte[1])));
        assertThrows(CommClosedException.class, client::read);
    }

    @Test
    void addressesAreRightOnBothSides() throws Exception {
        Pair p = pair();
        CommListener l = p.listener();
        Comm client = p.client();
        Comm server = p.server();
        String scheme = l.address().getScheme();
        for (URI u :
                List.of(client.localAddress(), client.peerAddress(), server.localAddress(), server.peerAddress())) {
            assertEquals(scheme, u.getScheme(), u.toString());
        }
        assertEquals(l.address(), client.peerAddress());
        assertEquals(client.peerAddress(), server.localAddress());
        assertEquals(client.localAddress(), server.peerAddress());
        assertNotNull(client.peerIdentity());
        assertEquals(options().identity(), server.peerIdentity());
        if (l.address().getPort() >= 0) {
            assertTrue(l.address().getPort() > 0, "port 0 became a real port: " + l.address());
        }
    }

    @Test
    void frameCounts() throws Exception {
        CommListener l = listen(CommConformanceTest::echo);
        Comm c = connect(l);
        for (int count : new int[] {0, 1, 2, 100, 101, 255, 256, 10_000}) {
            byte[][] frames = new byte[count][];
            for (int i = 0; i < count; i++) {
                frames[i] = pattern(i % 7, i);
            }
            c.write(Message.ofBytes(frames));
            try (Message m = c.read()) {
                assertEquals(count, m.frameCount(), "frames");
                for (int i = 0; i < count; i++) {
                    assertArrayEquals(frames[i], m.frame(i).toByteArray(), "frame " + i + " of " + count);
                }
            }
        }
        // Empty frames only.
        c.write(Message.ofBytes(new byte[0], new byte[0], new byte[0]));
        try (Message m = c.read()) {
            assertEquals(3, m.frameCount());
            assertEquals(0, m.byteSize());
        }
    }

    @Test
    void frameSizesUpTo256MiB() throws Exception {
        CommListener l = listen(CommConformanceTest::echo);
        Comm c = connect(l);
        try (Arena arena = Arena.ofShared()) {
            long[] sizes = {0, 1, 8, 1000, 8160, 8161, 8192, 65_536, 1 << 20, 16 << 20, 256L << 20};
            for (long size : sizes) {
                MemorySegment s = nativePattern(arena, size, (int) size);
                c.write(Message.of(Frame.host(s), Frame.of(new byte[] {1, 2, 3})));
                try (Message m = c.read()) {
                    assertEquals(2, m.frameCount());
                    assertSamePattern(s, m.frame(0).segment());
                    assertArrayEquals(new byte[] {1, 2, 3}, m.frame(1).toByteArray(), "size " + size);
                }
            }
            // Direct and heap ByteBuffers too.
            ByteBuffer direct = ByteBuffer.allocateDirect(5000);
            direct.put(0, (byte) 9);
            c.write(Message.of(Frame.of(direct), Frame.of(ByteBuffer.wrap(pattern(70_000, 4)))));
            try (Message m = c.read()) {
                assertEquals(9, m.frame(0).segment().get(ValueLayout.JAVA_BYTE, 0));
                assertArrayEquals(pattern(70_000, 4), m.frame(1).toByteArray());
            }
        }
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void oneFrameLargerThan2GiB() throws Exception {
        long size = (2L << 30) + 4096 + 3;
        // The listener reports what it received instead of echoing: two copies of 2 GiB are enough.
        // The 2 GiB message is closed before the reply: held, it would keep the context above
        // max-unclosed-bytes, which stops every comm of the context receiving (the next test's too).
        CommListener l = listen(comm -> {
            try (comm) {
                long got;
                long sum = 0;
                try (Message m = comm.read()) {
                    MemorySegment f = m.frame(0).segment();
                    got = f.byteSize();
                    for (long i = 0; i < got; i += 4096) {
                        sum += f.get(ValueLayout.JAVA_BYTE, i);
                    }
                    sum += f.get(ValueLayout.JAVA_BYTE, got - 1);
                }
                comm.write(Message.ofBytes(
                        ByteBuffer.allocate(16).putLong(got).putLong(sum).array()));
                comm.read(Duration.ofSeconds(30));
            } catch (CommClosedException e) {
                // done
            }
        });
        Comm c = connect(l);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment s = nativePattern(arena, size, 7);
            long expected = 0;
            for (long i = 0; i < size; i += 4096) {
                expected += s.get(ValueLayout.JAVA_BYTE, i);
            }
            expected += s.get(ValueLayout.JAVA_BYTE, size - 1);
            c.write(Message.of(Frame.host(s)));
            try (Message m = c.read(Duration.ofSeconds(200))) {
                ByteBuffer r = ByteBuffer.wrap(m.frame(0).toByteArray());
                assertEquals(size, r.getLong(), "size seen by the listener");
                assertEquals(expected, r.getLong(), "content seen by the listener");
            }
        }
    }

    @Test
    void twentyConcurrentClientsAndALateOne() throws Exception {
        AtomicInteger served = new AtomicInteger();
        CommListener l = listen(comm -> {
            echo(comm);
            served.incrementAndGet();
        });
        List<CompletableFuture<Void>> clients = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            int id = i;
            clients.add(CompletableFuture.runAsync(
                    () -> {
                        try (Comm c = Comms.connect(l.address(), options())) {
                            for (int k = 0; k < 20; k++) {
                                byte[] b = pattern(100 + k, id * 100 + k);
                                c.write(Message.ofBytes(b));
                                try (Message m = c.read()) {
                                    assertArrayEquals(b, m.frame(0).toByteArray());
                                }
                            }
                        }
                    },
                    r -> Thread.ofVirtual().start(r)));
        }
        CompletableFuture.allOf(clients.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        // Late: after the listener has seen every one of the twenty close.
        await("the listener serves out all twenty clients")
                .atMost(Duration.ofSeconds(30))
                .until(() -> served.get() == 20);
        Comm late = connect(l);
        late.write(Message.ofBytes(pattern(5, 5)));
        try (Message m = late.read()) {
            assertArrayEquals(pattern(5, 5), m.frame(0).toByteArray());
        }
    }

    @Test
    void concurrentWritersKeepEachMessageWhole() throws Exception {
        int threads = 4;
        int perThread = 300;
        Pair p = pair();
        Comm c = p.client();
        Comm server = p.server();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                List<CompletableFuture<Void>> writes = new ArrayList<>();
                for (int k = 0; k < perThread; k++) {
                    byte[] head = ByteBuffer.allocate(8).putInt(id).putInt(k).array();
                    // Sizes around the inline limit and beyond, so messages take different paths.
                    Message m = Message.ofBytes(head, pattern(k * 97 % 20_000, id), head);
                    writes.add(
                            k % 2 == 0 ? c.writeAsync(m) : CompletableFuture.runAsync(() -> c.write(m), Runnable::run));
                }
                CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new))
                        .join();
            }));
        }
        go.countDown();
        int[] next = new int[threads];
        for (int i = 0; i < threads * perThread; i++) {
            try (Message m = server.read(Duration.ofSeconds(30))) {
                assertEquals(3, m.frameCount());
                ByteBuffer h = ByteBuffer.wrap(m.frame(0).toByteArray());
                int id = h.getInt();
                int k = h.getInt();
                assertArrayEquals(m.frame(0).toByteArray(), m.frame(2).toByteArray(), "message torn");
                assertArrayEquals(pattern(k * 97 % 20_000, id), m.frame(1).toByteArray(), "message torn");
                assertEquals(next[id], k, "thread " + id + "'s messages out of order");
                next[id]++;
            }
        }
        for (Thread t : ts) {
            t.join();
        }
    }

    @Test
    void gracefulCloseDeliversEverythingWrittenBefore() throws Exception {
        Pair p = pair();
        Comm c = p.client();
        Comm server = p.server();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment big = nativePattern(arena, 4 << 20, 1);
            for (int i = 0; i < 50; i++) {
                c.writeAsync(
                        Message.of(Frame.of(new byte[] {(byte) i}), Frame.host(i % 10 == 0 ? big : big.asSlice(0, i))));
            }
            c.close();
            for (int i = 0; i < 50; i++) {
                try (Message m = server.read(Duration.ofSeconds(30))) {
                    assertEquals((byte) i, m.frame(0).toByteArray()[0], "message " + i);
                    assertSamePattern(
                            i % 10 == 0 ? big : big.asSlice(0, i), m.frame(1).segment());
                }
            }
        }
        assertThrows(CommClosedException.class, () -> server.read(Duration.ofSeconds(10)));
        assertTrue(server.isClosed());
        assertThrows(CommClosedException.class, () -> server.write(Message.ofBytes(new byte[1])));
        c.close(); // twice is harmless
    }

    @Test
    void abortFailsBothSidesPromptly() throws Exception {
        Pair p = pair();
        Comm c = p.client();
        Comm server = p.server();
        CompletableFuture<Message> pendingHere = c.readAsync();
        CompletableFuture<Message> pendingThere = server.readAsync();
        c.abort();
        assertTrue(c.isClosed());
        Exception e = assertThrows(Exception.class, () -> pendingHere.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof CommClosedException, e.toString());
        e = assertThrows(Exception.class, () -> pendingThere.get(20, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof CommClosedException, e.toString());
        assertThrows(CommClosedException.class, () -> c.write(Message.ofBytes(new byte[1])));
        c.abort();
    }

    @Test
    void readWithATimeoutLeavesTheCommUsable() throws Exception {
        Pair p = pair();
        Comm c = p.client();
        Comm server = p.server();
        long t0 = System.nanoTime();
        assertThrows(CommTimeoutException.class, () -> c.read(Duration.ofMillis(100)));
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
        assertFalse(c.isClosed());
        server.write(Message.ofBytes(pattern(10, 1)));
        server.write(Message.ofBytes(pattern(11, 2)));
        try (Message m = c.read(Duration.ofSeconds(10))) {
            assertArrayEquals(pattern(10, 1), m.frame(0).toByteArray());
        }
        try (Message m = c.read(Duration.ofSeconds(10))) {
            assertArrayEquals(pattern(11, 2), m.frame(0).toByteArray());
        }
    }

    @Test
    void sharedSecretAcceptedAndRefused() throws Exception {
        CommOptions good = options(UcxConfig.builder()
                .set(CommKeys.AUTH_SECRET, "s3cret-of-the-day")
                .build());
        CommListener l = listen(CommConformanceTest::echo, good);
        Comm c = connect(l.address(), good);
        c.write(Message.ofBytes(pattern(9, 9)));
        try (Message m = c.read(Duration.ofSeconds(10))) {
            assertArrayEquals(pattern(9, 9), m.frame(0).toByteArray());
        }
        CommOptions wrong = options(UcxConfig.builder()
                .set(CommKeys.AUTH_SECRET, "not-the-secret-at-all")
                .build());
        CommAuthenticationException e =
                assertThrows(CommAuthenticationException.class, () -> connect(l.address(), wrong));
        assertTrue(e.getMessage().contains("secret"), e.getMessage());
        CommAuthenticationException missing =
                assertThrows(CommAuthenticationException.class, () -> connect(l.address(), options()));
        assertTrue(missing.getMessage().contains("secret"), missing.getMessage());
        // A listener without a secret refuses a client that insists on one.
        CommListener open = listen(CommConformanceTest::echo);
        assertThrows(CommAuthenticationException.class, () -> connect(open.address(), good));
        // The listener still serves.
        Comm again = connect(l.address(), good);
        again.write(Message.ofBytes(pattern(1, 1)));
        try (Message m = again.read(Duration.ofSeconds(10))) {
            assertEquals(1, m.byteSize());
        }
    }

    @Test
    void aMessageAboveMaxMessageSizeIsNotWrittenAndTheCommStaysUsable() throws Exception {
        CommListener l = listen(CommConformanceTest::echo);
        Comm c = connect(
                l.address(),
                options(UcxConfig.builder()
                        .set(CommKeys.MAX_MESSAGE_SIZE, 1000L)
                        .build()));
        CommException e =
                assertThrows(CommException.class, () -> c.write(Message.ofBytes(pattern(600, 1), pattern(401, 2))));
        assertTrue(e.getMessage().contains("2 frames and 1001 bytes not written"), e.getMessage());
        assertTrue(e.getMessage().contains("max-message-size is 1000"), e.getMessage());
        java.util.concurrent.ExecutionException async = assertThrows(
                java.util.concurrent.ExecutionException.class,
                () -> c.writeAsync(Message.ofBytes(pattern(1001, 3))).get(10, TimeUnit.SECONDS));
        assertTrue(async.getCause() instanceof CommException, String.valueOf(async.getCause()));
        assertFalse(c.isClosed());
        // Nothing of the refused messages went: the echo of the next one is the first thing back.
        c.write(Message.ofBytes(pattern(1000, 4)));
        try (Message m = c.read(Duration.ofSeconds(10))) {
            assertArrayEquals(pattern(1000, 4), m.frame(0).toByteArray());
        }
    }

    @Test
    void aWrongSecretFailsAtOnceNotAfterTheConnectTimeout() throws Exception {
        Duration connectTimeout = Duration.ofSeconds(30);
        CommListener l = listen(
                CommConformanceTest::echo,
                CommOptions.builder()
                        .config(UcxConfig.builder()
                                .set(CommKeys.AUTH_SECRET, "the-listener-secret")
                                .build())
                        .connectTimeout(connectTimeout)
                        .build());
        CommOptions wrong = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.AUTH_SECRET, "the-client-secret")
                        .build())
                .connectTimeout(connectTimeout)
                .build();
        long start = System.nanoTime();
        CommAuthenticationException e =
                assertThrows(CommAuthenticationException.class, () -> connect(l.address(), wrong));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        // A bound well under the connect timeout, not a benchmark: the refusal must not wait for it.
        assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "refused after " + took);
        assertTrue(e.getMessage().contains("secret"), e.getMessage());
        assertFalse(
                e.getMessage().contains("the-listener-secret") || e.getMessage().contains("the-client-secret"),
                e.getMessage());
    }

    @Test
    void receivedFramesComeFromTheGivenAllocator() throws Exception {
        ConcurrentHashMap<Long, Boolean> sizes = new ConcurrentHashMap<>();
        FrameAllocator counting = (kind, size, scope) -> {
            sizes.put(size, true);
            return FrameAllocator.host().allocate(kind, size, scope);
        };
        CommOptions opts = CommOptions.builder()
                .config(UcxConfig.builder().build())
                .allocator(counting)
                .build();
        CommListener l = listen(CommConformanceTest::echo);
        Comm c = connect(l.address(), opts);
        c.write(Message.ofBytes(new byte[12345], new byte[777]));
        try (Message m = c.read(Duration.ofSeconds(10))) {
            assertEquals(2, m.frameCount());
        }
        assertTrue(sizes.containsKey(12345L) && sizes.containsKey(777L), sizes.toString());
    }

    @Test
    void connectingWhereNothingListensFailsClearly() {
        URI nowhere = URI.create(listenAddress().replace(":0", ":1").replace("inproc://", "inproc://nobody-here"));
        CommException e = assertThrows(CommException.class, () -> Comms.connect(nowhere, options()));
        assertTrue(e.getMessage().contains(nowhere.toString()) || e.getMessage().contains("nobody"), e.getMessage());
    }

    @Test
    void killedPeerFailsReadsAndWritesWithoutHanging() throws Exception {
        if (!crossesProcesses()) {
            return;
        }
        try (RunningJvm peer = CommPeerMain.start("listen", listenAddress())) {
            URI address = URI.create(peer.awaitLine("ADDRESS", Duration.ofSeconds(60)));
            Comm c = connect(address, options());
            c.write(Message.ofBytes(pattern(10, 1)));
            try (Message m = c.read(Duration.ofSeconds(10))) {
                assertArrayEquals(pattern(10, 1), m.frame(0).toByteArray());
            }
            CompletableFuture<Message> pending = c.readAsync();
            peer.kill9();
            long t0 = System.nanoTime();
            Exception e = assertThrows(Exception.class, () -> pending.get(60, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof CommClosedException, e.toString());
            System.out.printf(
                    "%s: read failed %d ms after kill -9%n",
                    getClass().getSimpleName(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            assertTrue(c.isClosed());
            assertThrows(CommClosedException.class, () -> c.write(Message.ofBytes(new byte[1])));
        }
    }
}
