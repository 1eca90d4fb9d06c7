package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.AmAllocator;
import org.ucx4j.MemoryKind;
import org.ucx4j.RemoteKey;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxFuture;
import org.ucx4j.UcxWorker;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * GPU memory between two JVMs through UCX (cuda_ipc on one GPU, or across two when visible): tag
 * messages 0 B .. 256 MiB, active messages landing in GPU memory, put/get on a device region, and a peer
 * killed during a device transfer.
 */
@Tag("gpu")
@Timeout(300)
class GpuTransferTest {
    private RunningJvm peer;
    private UcxContext context;
    private UcxWorker worker;
    private GpuMemoryPool pool;
    private UcxEndpoint ep;

    @BeforeEach
    void start() throws Exception {
        GpuRequirement.assumeGpuAndUcx();
        int gpus = Cuda.devices().size();
        ChildJvm.Spec spec = ChildJvm.of(GpuPeerMain.class);
        if (gpus > 1) {
            // The peer's own GPU first; the others stay visible for CUDA IPC.
            spec.env("CUDA_VISIBLE_DEVICES", rotated(gpus));
        }
        peer = spec.start();
        int p = Integer.parseInt(peer.awaitLine("PORT ", Duration.ofSeconds(60)));
        context = UcxContext.create();
        worker = context.newWorker();
        pool = GpuMemoryPool.create(Cuda.device(0), 0, 4L << 30);
        worker.setAmAllocator(MemoryKind.CUDA, AmAllocator.of(pool));
        ep = worker.connect("127.0.0.1", p);
        System.out.println(
                "this JVM on " + Cuda.device(0) + "; " + Cuda.devices().size() + " GPU(s) visible");
    }

    private static String rotated(int gpus) {
        String visible = System.getenv("CUDA_VISIBLE_DEVICES");
        List<String> ids = new ArrayList<>();
        if (visible != null && !visible.isBlank()) {
            ids.addAll(List.of(visible.split(",")));
        } else {
            for (int i = 0; i < gpus; i++) {
                ids.add(Integer.toString(i));
            }
        }
        ids.add(ids.remove(0));
        return String.join(",", ids);
    }

    @AfterEach
    void stop() throws Exception {
        if (ep != null && ep.isOpen() && peer.process().isAlive()) {
            control(GpuPeerMain.EXIT, 0);
        }
        if (peer != null) {
            if (!peer.process().waitFor(30, TimeUnit.SECONDS)) {
                peer.kill9();
            }
            peer.close();
        }
        if (context != null) {
            context.close();
        }
        if (pool != null) {
            pool.close();
        }
    }

    private void control(long op, long size) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = a.allocate(16, 8);
            c.set(ValueLayout.JAVA_LONG, 0, op);
            c.set(ValueLayout.JAVA_LONG, 8, size);
            ep.tagSend(c, GpuPeerMain.CONTROL);
        }
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(120, TimeUnit.SECONDS);
    }

    @Test
    void tagMessagesRoundTripByteExactFrom0BTo256MiB() throws Exception {
        Random r = new Random(1);
        for (long size : new long[] {0, 1, 8, 4095, 8191, 8192, 65_536, 1 << 20, 16L << 20, 64L << 20, 256L << 20}) {
            byte[] data = new byte[(int) size];
            r.nextBytes(data);
            try (Arena a = Arena.ofShared()) {
                MemorySegment src = pool.allocate(size, a);
                MemorySegment dst = pool.allocate(size, a);
                pool.copy(src, MemorySegment.ofArray(data));
                control(GpuPeerMain.TAG_ECHO, size);
                UcxFuture<?> recv = ep.worker().tagRecvAsync(dst, GpuPeerMain.DATA_OUT, -1L, ep);
                await(ep.tagSendAsync(src, GpuPeerMain.DATA_IN));
                await(recv);
                byte[] back = new byte[(int) size];
                pool.copy(MemorySegment.ofArray(back), dst);
                assertArrayEquals(data, back, "size " + size);
            }
        }
        assertEquals(0, pool.usedBytes());
    }

    /**
     * Not a timed test (nothing is asserted on time): it prints the first round trip of fresh 64 MiB
     * buffers from cuMemAlloc and from the pool, the figures docs/BENCHMARKS.md records (cuda_ipc maps a
     * new allocation on first sight; the pool's buffers share a mapped slab).
     */
    @Test
    void firstTransferOfFreshBuffersWithAndWithoutThePool() throws Exception {
        long size = 64L << 20;
        int n = 6;
        // Warm the path (connection, both pools' first slab mapped) so that only the fresh buffers differ.
        echoFresh(pool.allocate(size, Arena.ofAuto()), size);
        long[] direct = new long[n];
        long[] pooled = new long[n];
        for (int i = 0; i < n; i++) {
            try (DeviceMemory fresh = Cuda.device(0).allocate(size)) {
                direct[i] = echoFresh(fresh.segment(), size);
            }
            try (Arena a = Arena.ofShared()) {
                pooled[i] = echoFresh(pool.allocate(size, a), size);
            }
        }
        java.util.Arrays.sort(direct);
        java.util.Arrays.sort(pooled);
        System.out.printf(
                "FIRST-TRANSFER 64MiB round trip of a fresh buffer: cuMemAlloc median %d usec (min %d, max %d);"
                        + " pool median %d usec (min %d, max %d)%n",
                direct[n / 2] / 1000,
                direct[0] / 1000,
                direct[n - 1] / 1000,
                pooled[n / 2] / 1000,
                pooled[0] / 1000,
                pooled[n - 1] / 1000);
    }

    /** One echo of {@code size} bytes from {@code src}; the nanoseconds it took. */
    private long echoFresh(MemorySegment src, long size) throws Exception {
        try (Arena a = Arena.ofShared()) {
            MemorySegment dst = pool.allocate(size, a);
            control(GpuPeerMain.TAG_ECHO, size);
            long t0 = System.nanoTime();
            UcxFuture<?> recv = ep.worker().tagRecvAsync(dst, GpuPeerMain.DATA_OUT, -1L, ep);
            await(ep.tagSendAsync(src, GpuPeerMain.DATA_IN));
            await(recv);
            return System.nanoTime() - t0;
        }
    }

    @Test
    void activeMessagesLandInGpuMemory() throws Exception {
        Random r = new Random(2);
        for (long size : new long[] {1, 100, 8192, 1 << 20, 16L << 20}) {
            byte[] data = new byte[(int) size];
            r.nextBytes(data);
            try (Arena a = Arena.ofShared()) {
                MemorySegment src = pool.allocate(size, a);
                pool.copy(src, MemorySegment.ofArray(data));
                control(GpuPeerMain.AM_ECHO, size);
                await(ep.amSendAsync(src, MemoryKind.CUDA));
                MemorySegment body = await(ep.amRecvAsync());
                assertEquals(MemoryKind.CUDA, Cuda.memoryKindOf(body), "size " + size);
                byte[] back = new byte[(int) size];
                pool.copy(MemorySegment.ofArray(back), body);
                assertArrayEquals(data, back, "size " + size);
            }
        }
        for (int i = 0; i < 5; i++) {
            String line = peer.awaitLine("AM ", Duration.ofSeconds(30));
            assertTrue(line.endsWith(" CUDA"), "the peer received its active message in " + line);
        }
    }

    @Test
    void putAndGetIntoGpuMemory() throws Exception {
        long size = 8L << 20;
        control(GpuPeerMain.REGION, size);
        byte[] keyBytes = new byte[4096];
        int n = (int) ep.worker().tagRecv(keyBytes, GpuPeerMain.KEY, -1L, ep).length();
        RemoteKey key = ep.unpackRemoteKey(java.util.Arrays.copyOf(keyBytes, n));
        try (Arena a = Arena.ofShared()) {
            MemorySegment local = pool.allocate(size, a);
            await(ep.getAsync(local, key, 0));
            byte[] got = new byte[(int) size];
            pool.copy(MemorySegment.ofArray(got), local);
            for (int i = 0; i < size; i++) {
                if (got[i] != GpuPeerMain.pattern(i, 7)) {
                    throw new AssertionError("get: byte " + i + " differs");
                }
            }
            byte[] mine = new byte[(int) size];
            for (int i = 0; i < size; i++) {
                mine[i] = GpuPeerMain.pattern(i, 11);
            }
            pool.copy(local, MemorySegment.ofArray(mine));
            await(ep.putAsync(local, key, 0));
            await(ep.flushAsync());
            control(GpuPeerMain.CHECK_REGION, 11);
            byte[] verdict = new byte[1];
            ep.worker().tagRecv(verdict, GpuPeerMain.VERDICT, -1L, ep);
            assertEquals(1, verdict[0], "the peer's GPU region holds what was put");
            key.close();
        }
    }

    @Test
    void aPeerKilledDuringADeviceTransferFailsOperationsAndFreesMemory() throws Exception {
        long size = 256L << 20;
        Arena a = Arena.ofShared();
        MemorySegment src = pool.allocate(size, a);
        MemorySegment dst = pool.allocate(size, a);
        List<UcxFuture<?>> ops = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            control(GpuPeerMain.TAG_ECHO, size);
            ops.add(ep.tagSendAsync(src, GpuPeerMain.DATA_IN));
            ops.add(ep.worker().tagRecvAsync(dst, GpuPeerMain.DATA_OUT, -1L, ep));
        }
        peer.kill9();
        assertTrue(!peer.process().isAlive());
        long t0 = System.nanoTime();
        int failed = 0;
        for (UcxFuture<?> f : ops) {
            try {
                f.get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failed++;
            }
        }
        Duration took = Duration.ofNanos(System.nanoTime() - t0);
        assertTrue(failed >= 1, "operations after the peer died must fail");
        assertTrue(took.toSeconds() < 60, "failed within the bound: " + took);
        // A new operation on the dead endpoint fails at once or through its future, never hangs.
        assertThrows(
                Exception.class,
                () -> ep.worker().tagRecvAsync(dst, 100, -1L, ep).get(60, TimeUnit.SECONDS));
        a.close();
        assertEquals(0, pool.usedBytes(), "GPU memory back in the pool");
        ep = null;
    }
}
