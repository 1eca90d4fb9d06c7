package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testing.RmaProtocol;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/**
 * RMA against a peer JVM ({@code PeerMain rma-server}, {@link RmaProtocol}): get checks the peer's
 * pattern byte for byte, put is checked by the peer and by reading it back; bad keys and out-of-bounds
 * access are refused before UCX sees them; a killed peer fails put and get in bounded time.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("native")
class RmaTest {
    private static final long REGION = (8L << 20) + 4096;
    private static final long[] SIZES = {0, 1, 4, 4096, 8192, 4L << 20};
    private static final Duration BOUND = Duration.ofSeconds(30);

    private static RunningJvm peer;
    private static UcxContext ctx;
    private static UcxWorker worker;
    private static UcxEndpoint ep;
    private static byte[] keyBytes;
    private static RemoteKey key;
    private static int port;

    @BeforeAll
    static void startPeer() throws Exception {
        Requirements.assumeUcx();
        peer = PeerMain.start(Map.of(), List.of("-Xmx96m"), "rma-server", Long.toString(REGION), "map");
        port = Integer.parseInt(peer.awaitLine("PORT", Duration.ofSeconds(60)));
        ctx = UcxContext.create();
        worker = ctx.newWorker();
        ep = worker.connect("127.0.0.1", port);
        EchoProtocol.hello(ep, 1);
        keyBytes = RmaProtocol.receiveKey(ep);
        key = ep.unpackRemoteKey(keyBytes);
    }

    @AfterAll
    static void stopPeer() throws Exception {
        if (ctx != null) {
            ctx.close();
        }
        if (peer != null) {
            peer.close();
        }
    }

    private static long[] offsetsFor(long size) {
        return new long[] {0, 1, 4093, REGION / 2 + 3, REGION - size};
    }

    // ------------------------------------------------------------------ get and put

    @Test
    void getReadsThePeersPatternByteForByte() {
        assertEquals(REGION, key.size());
        try (Arena arena = Arena.ofConfined()) {
            for (long size : SIZES) {
                MemorySegment local = arena.allocate(Math.max(size, 1)).asSlice(0, size);
                for (long off : offsetsFor(size)) {
                    local.fill((byte) 0x5A);
                    ep.get(local, key, off);
                    assertEquals(
                            -1,
                            RmaProtocol.mismatch(local, RmaProtocol.INITIAL_SEED, off),
                            "get of " + size + " bytes at offset " + off);
                }
            }
        }
    }

    @Test
    void getIntoHeapMemoryIsCopiedBack() {
        for (long size : SIZES) {
            byte[] local = new byte[(int) size];
            Arrays.fill(local, (byte) 0x5A);
            long off = 4093;
            ep.get(MemorySegment.ofArray(local), key, off);
            assertEquals(
                    -1,
                    RmaProtocol.mismatch(MemorySegment.ofArray(local), RmaProtocol.INITIAL_SEED, off),
                    "heap get of " + size + " bytes");
        }
    }

    @Test
    void putThenGetAndThePeerSeesIt() {
        long seed = 7;
        try (Arena arena = Arena.ofConfined()) {
            for (long size : SIZES) {
                for (long off : offsetsFor(size)) {
                    MemorySegment out = arena.allocate(Math.max(size, 1)).asSlice(0, size);
                    RmaProtocol.fill(out, seed, off);
                    ep.put(out, key, off);
                    ep.flush();
                    assertEquals(
                            -1,
                            RmaProtocol.command(ep, RmaProtocol.VERIFY, seed, off, size),
                            "peer's view after a put of " + size + " bytes at " + off);
                    MemorySegment in = arena.allocate(Math.max(size, 1)).asSlice(0, size);
                    ep.get(in, key, off);
                    assertEquals(-1, RmaProtocol.mismatch(in, seed, off), "get after put, " + size + " at " + off);
                    // Bytes just outside the put are untouched.
                    if (off > 0) {
                        assertEquals(
                                -1, RmaProtocol.command(ep, RmaProtocol.VERIFY, RmaProtocol.INITIAL_SEED, off - 1, 1));
                    }
                    if (off + size < REGION) {
                        assertEquals(
                                -1,
                                RmaProtocol.command(ep, RmaProtocol.VERIFY, RmaProtocol.INITIAL_SEED, off + size, 1));
                    }
                    assertEquals(0, RmaProtocol.command(ep, RmaProtocol.FILL, RmaProtocol.INITIAL_SEED, off, size));
                }
            }
        }
    }

    @Test
    void putFromHeapMemoryAndAsyncManyThenFlush() {
        byte[] data = new byte[8192];
        RmaProtocol.fill(MemorySegment.ofArray(data), 9, 8192);
        ep.put(MemorySegment.ofArray(data), key, 8192);
        // Many puts in flight at once, one flush for all, and a fence between two batches.
        List<UcxFuture<Void>> futures = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(64 * 1024);
            RmaProtocol.fill(src, 11, 1 << 20);
            for (int i = 0; i < 64; i++) {
                futures.add(ep.putAsync(src.asSlice(i * 512L, 512), key, (1 << 20) + i * 512L));
                if (i == 31) {
                    worker.fence();
                }
            }
            for (UcxFuture<Void> f : futures) {
                worker.await(f);
            }
            worker.flush();
        }
        assertEquals(-1, RmaProtocol.command(ep, RmaProtocol.VERIFY, 9, 8192, 8192));
        assertEquals(-1, RmaProtocol.command(ep, RmaProtocol.VERIFY, 11, 1 << 20, 32 * 1024));
        assertEquals(0, RmaProtocol.command(ep, RmaProtocol.FILL, RmaProtocol.INITIAL_SEED, 0, REGION));
    }

    // ------------------------------------------------------------------ refused before UCX

    @Test
    void outOfBoundsAccessIsRefusedBeforeUcx() {
        int before = worker.pendingOperations();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment eight = arena.allocate(8);
            MemorySegment tooBig = arena.allocate(REGION + 1);
            long[][] cases = {
                {-1, 8},
                {REGION - 7, 8},
                {REGION, 8},
                {REGION + 1, 0},
                {Long.MAX_VALUE, 8},
                {Long.MAX_VALUE - 4, 8},
                {Long.MIN_VALUE, 8},
                {0, REGION + 1}
            };
            for (long[] c : cases) {
                MemorySegment local = c[1] == REGION + 1 ? tooBig : eight.asSlice(0, c[1]);
                for (boolean put : new boolean[] {true, false}) {
                    IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> {
                        if (put) ep.putAsync(local, key, c[0]);
                        else ep.getAsync(local, key, c[0]);
                    });
                    assertTrue(
                            e.getMessage().contains("offset " + c[0])
                                    && e.getMessage().contains("length " + c[1])
                                    && e.getMessage().contains(REGION + " bytes"),
                            e.getMessage());
                }
            }
            // The edges themselves are fine.
            ep.get(eight, key, REGION - 8);
            ep.get(eight.asSlice(0, 0), key, REGION);
        }
        assertEquals(before, worker.pendingOperations());
        assertTrue(ep.isOpen());
    }

    @Test
    void zeroLengthCompletesAtOnce() {
        UcxFuture<Void> p = ep.putAsync(MemorySegment.ofArray(new byte[0]), key, 0);
        UcxFuture<Void> g = ep.getAsync(MemorySegment.ofArray(new byte[0]), key, REGION);
        assertTrue(p.isDone() && !p.isCompletedExceptionally());
        assertTrue(g.isDone() && !g.isCompletedExceptionally());
    }

    @Test
    void truncatedAndMalformedFramesAreRejectedWithClearErrors() {
        for (int n = 0; n < keyBytes.length; n++) {
            byte[] cut = Arrays.copyOf(keyBytes, n);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ep.unpackRemoteKey(cut));
            assertTrue(e.getMessage().contains("truncated"), n + " bytes: " + e.getMessage());
        }
        byte[] longer = Arrays.copyOf(keyBytes, keyBytes.length + 1);
        assertMessage(longer, "bytes follow the header");
        byte[] magic = keyBytes.clone();
        magic[0] = 'X';
        assertMessage(magic, "UCXRK");
        byte[] version = keyBytes.clone();
        version[5] = 2;
        assertMessage(version, "version 2");
        byte[] inner = Arrays.copyOfRange(keyBytes, RemoteKeyFormat.HEADER_SIZE, keyBytes.length);
        assertMessage(RemoteKeyFormat.encode(0x1000, -1L, inner), "region length");
        assertMessage(RemoteKeyFormat.encode(-16L, 4096, inner), "overflows");
        byte[] stale = keyBytes.clone();
        ByteBuffer.wrap(stale).order(ByteOrder.LITTLE_ENDIAN).putLong(14, REGION * 2);
        assertMessage(stale, "checksum");
        byte[] keyLength = keyBytes.clone();
        ByteBuffer.wrap(keyLength).order(ByteOrder.LITTLE_ENDIAN).putInt(22, -1);
        assertMessage(keyLength, "4294967295");
        byte[] empty = Arrays.copyOf(keyBytes, RemoteKeyFormat.HEADER_SIZE);
        ByteBuffer.wrap(empty).order(ByteOrder.LITTLE_ENDIAN).putInt(22, 0);
        assertMessage(empty, "empty");
        assertThrows(NullPointerException.class, () -> ep.unpackRemoteKey(null));
        assertTrue(ep.isOpen());
    }

    private static void assertMessage(byte[] bad, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ep.unpackRemoteKey(bad));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void damagedKeysNeverReachUcx() {
        // Every single-byte flip after the magic and version, in the header or inside UCX's packed key,
        // is caught by the frame's checks (mostly the CRC) before ucp_ep_rkey_unpack: UCX 1.13 crashes
        // the process on some damaged packed keys (seen: SIGSEGV in uct_rkey_release).
        int checked = 0;
        for (int i = 6; i < keyBytes.length; i++) {
            for (int flip : new int[] {0xFF, 0x01, 0x80}) {
                byte[] bad = keyBytes.clone();
                bad[i] ^= (byte) flip;
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> ep.unpackRemoteKey(bad), "byte " + i + " ^ " + flip);
                assertTrue(e.getMessage().startsWith("remote key"), e.getMessage());
                if (i >= RemoteKeyFormat.HEADER_SIZE) {
                    assertTrue(
                            e.getMessage().contains("checksum")
                                    && e.getMessage().contains("not passed to UCX"),
                            e.getMessage());
                }
                checked++;
            }
        }
        assertTrue(checked > 3 * RemoteKeyFormat.HEADER_SIZE, "only " + checked + " flips");
        // The endpoint and the good key still work.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(4096);
            ep.get(in, key, 12345);
            assertEquals(-1, RmaProtocol.mismatch(in, RmaProtocol.INITIAL_SEED, 12345));
        }
        assertTrue(ep.isOpen());
    }

    // ------------------------------------------------------------------ lifecycle

    @Test
    void keysBelongToTheirEndpointAndCloseWithIt() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(64);
            UcxEndpoint other = worker.connect("127.0.0.1", port);
            EchoProtocol.hello(other, 2);
            RemoteKey otherKey = other.unpackRemoteKey(RmaProtocol.receiveKey(other));
            RemoteKey second = other.unpackRemoteKey(keyBytes);
            other.get(in, otherKey, 64);
            assertEquals(-1, RmaProtocol.mismatch(in, RmaProtocol.INITIAL_SEED, 64));

            IllegalArgumentException wrong =
                    assertThrows(IllegalArgumentException.class, () -> ep.get(in, otherKey, 0));
            assertTrue(wrong.getMessage().contains("own endpoint"), wrong.getMessage());

            second.close();
            second.close();
            assertFalse(second.isOpen());
            assertThrows(IllegalStateException.class, () -> other.getAsync(in, second, 0));

            other.close();
            assertFalse(otherKey.isOpen(), "the endpoint's close destroys its keys");
            assertThrows(IllegalStateException.class, () -> other.getAsync(in, otherKey, 0));
            assertThrows(IllegalStateException.class, () -> other.unpackRemoteKey(keyBytes));
            otherKey.close();
        }
        assertTrue(key.isOpen());
    }

    @Test
    void memoryRegionsLocalLifecycle() {
        try (UcxContext local = UcxContext.create();
                Arena arena = Arena.ofShared()) {
            MemorySegment mine = arena.allocate(4096);
            MemoryRegion mapped = local.mapMemory(mine);
            assertEquals(4096, mapped.size());
            assertFalse(mapped.isAllocated());
            assertEquals(mine.address(), mapped.segment().address());
            byte[] packed = mapped.packRemoteKey();
            assertEquals('U', packed[0]);
            assertEquals(1, packed[5]);
            assertEquals(
                    mine.address(),
                    ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN).getLong(6));
            assertEquals(
                    4096, ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN).getLong(14));

            MemoryRegion allocated = local.allocateMemory(10_000);
            assertTrue(allocated.isAllocated());
            assertTrue(allocated.size() >= 10_000, "size " + allocated.size());
            allocated.segment().fill((byte) 3);
            assertEquals(3, allocated.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, allocated.size() - 1));
            MemorySegment view = allocated.segment();
            allocated.close();
            allocated.close();
            assertThrows(IllegalStateException.class, () -> view.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, allocated::packRemoteKey);

            assertThrows(IllegalArgumentException.class, () -> local.mapMemory(MemorySegment.ofArray(new byte[8])));
            assertThrows(IllegalArgumentException.class, () -> local.mapMemory(mine.asReadOnly()));
            assertThrows(IllegalArgumentException.class, () -> local.allocateMemory(0));

            MemoryRegion leftOpen = local.allocateMemory(4096);
            local.close();
            assertTrue(leftOpen.isClosed(), "the context closes its regions");
            assertTrue(mapped.isClosed());
            assertThrows(IllegalStateException.class, () -> local.mapMemory(mine));
        }
    }

    // ------------------------------------------------------------------ 1 GiB

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void oneGibibyteGetAndPutAgainstMemoryUcxAllocatedInThePeer() throws Exception {
        long size = 1L << 30;
        long chunk = 64L << 20;
        try (RunningJvm big =
                        PeerMain.start(Map.of(), List.of("-Xmx96m"), "rma-server", Long.toString(size), "allocate");
                UcxContext c = UcxContext.create();
                UcxWorker w = c.newWorker();
                Arena arena = Arena.ofShared()) {
            assertEquals(size + " allocated", big.awaitLine("REGION", Duration.ofSeconds(120)));
            int p = Integer.parseInt(big.awaitLine("PORT", Duration.ofSeconds(60)));
            UcxEndpoint e = w.connect("127.0.0.1", p);
            EchoProtocol.hello(e, 4);
            RemoteKey k = e.unpackRemoteKey(RmaProtocol.receiveKey(e));
            assertEquals(size, k.size());
            MemorySegment local = arena.allocate(size, 4096);

            long t0 = System.nanoTime();
            e.get(local, k, 0);
            long getMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(-1, RmaProtocol.mismatch(local, RmaProtocol.INITIAL_SEED, 0), "1 GiB get");

            RmaProtocol.fill(local, 5, 0);
            t0 = System.nanoTime();
            List<UcxFuture<Void>> puts = new ArrayList<>();
            for (long off = 0; off < size; off += chunk) {
                puts.add(e.putAsync(local.asSlice(off, chunk), k, off));
            }
            for (UcxFuture<Void> f : puts) {
                w.await(f);
            }
            e.flush();
            long putMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(-1, RmaProtocol.command(e, RmaProtocol.VERIFY, 5, 0, size), "peer's view of the 1 GiB put");

            local.fill((byte) 0);
            e.get(local, k, 0);
            assertEquals(-1, RmaProtocol.mismatch(local, 5, 0), "get after the 1 GiB put");
            System.out.println("1 GiB: get " + getMs + " ms, put in " + puts.size() + " chunks " + putMs + " ms");
            e.close();
        }
    }

    // ------------------------------------------------------------------ peer death

    /** Both kinds of region: mapped (the peer's own memory) and UCX-allocated (shared memory here). */
    @ParameterizedTest
    @ValueSource(strings = {"map", "allocate"})
    void putAndGetFailInBoundedTimeAfterThePeerIsKilled(String regionKind) throws Exception {
        try (RunningJvm victim = PeerMain.start(
                        Map.of("UCX_KEEPALIVE_INTERVAL", "1s"),
                        List.of("-Xmx96m"),
                        "rma-server",
                        Long.toString(64L << 20),
                        regionKind);
                UcxContext c =
                        UcxContext.builder().option("KEEPALIVE_INTERVAL", "1s").build();
                UcxWorker w = c.newWorker();
                Arena arena = Arena.ofShared()) {
            int p = Integer.parseInt(victim.awaitLine("PORT", Duration.ofSeconds(60)));
            UcxEndpoint e = w.connect("127.0.0.1", p);
            EchoProtocol.hello(e, 3);
            RemoteKey k = e.unpackRemoteKey(RmaProtocol.receiveKey(e));
            MemorySegment big = arena.allocate(64L << 20, 4096);
            e.get(big.asSlice(0, 4096), k, 0);
            assertEquals(-1, RmaProtocol.mismatch(big.asSlice(0, 4096), RmaProtocol.INITIAL_SEED, 0));

            victim.kill9();
            long t0 = System.nanoTime();
            List<UcxFuture<Void>> ops = new ArrayList<>();
            ops.add(e.getAsync(big, k, 0));
            ops.add(e.putAsync(big, k, 0));
            ops.add(e.getAsync(big.asSlice(0, 8), k, 0));
            ops.add(e.putAsync(big.asSlice(0, 8), k, 8));
            for (int i = 0; i < ops.size(); i++) {
                try {
                    ops.get(i).get(BOUND.toSeconds(), TimeUnit.SECONDS);
                    // kill9 waited for the process to exit: there is nobody to complete against.
                    fail("operation " + i + " completed although the peer was dead");
                } catch (ExecutionException ex) {
                    assertInstanceOf(UcxException.class, ex.getCause(), "operation " + i);
                } catch (TimeoutException ex) {
                    fail("operation " + i + " still pending " + BOUND + " after the peer was killed");
                }
            }
            System.out.println(regionKind + ": put/get failed " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)
                    + " ms after kill -9");
            // Later operations fail at once, without a hang: the endpoint is failed or closed by now.
            await("the endpoint notices the peer's death")
                    .atMost(BOUND)
                    .pollInterval(Duration.ofMillis(50))
                    .untilAsserted(() -> assertFalse(e.isOpen(), "the endpoint noticed the peer's death"));
            UcxException late = assertThrows(UcxException.class, () -> e.put(big.asSlice(0, 8), k, 0));
            assertTrue(
                    late instanceof UcxConnectionResetException || late instanceof UcxTimeoutException,
                    late.toString());
            assertThrows(UcxException.class, () -> e.get(big.asSlice(0, 8), k, 0));
        }
    }
}
