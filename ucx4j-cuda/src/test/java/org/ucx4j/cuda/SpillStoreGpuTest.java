package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The spill store on a real GPU: pool memory, pinned host memory, files; pressure and just-in-time spills. */
@Tag("gpu")
@Timeout(120)
class SpillStoreGpuTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    @BeforeEach
    void gpu() {
        GpuRequirement.assumeGpu();
    }

    private static byte[] write(SpillableBuffer b, long seed) {
        byte[] data = new byte[(int) b.byteSize()];
        new Random(seed).nextBytes(data);
        try (SpillableBuffer.Access a = b.acquire()) {
            assertEquals(Cuda.device(0), Cuda.deviceOf(a.segment()).orElseThrow(), "on the device");
            Cuda.copy(a.segment(), MemorySegment.ofArray(data));
        }
        return data;
    }

    private static byte[] read(SpillableBuffer b) {
        try (SpillableBuffer.Access a = b.acquire();
                Arena arena = Arena.ofConfined()) {
            assertEquals(SpillTier.DEVICE, b.tier());
            MemorySegment host = arena.allocate(b.byteSize());
            Cuda.copy(host, a.segment());
            return host.toArray(JAVA_BYTE);
        }
    }

    @Test
    void underPressureEveryBufferComesBackByteExactThroughEveryTier() throws Exception {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 64 * MIB, 64 * MIB);
                SpillStore store = SpillStore.builder(pool)
                        .deviceMemoryLimit(40 * MIB)
                        .memoryLimit(32 * MIB)
                        .localDirectory(dir)
                        .logSpilling(true)
                        .build()) {
            Random r = new Random(1);
            List<SpillableBuffer> buffers = new ArrayList<>();
            List<byte[]> expected = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                SpillableBuffer b = store.allocate(4 * MIB + r.nextInt(1 << 16)); // 24 x ~4 MiB: 96+ MiB
                buffers.add(b);
                expected.add(write(b, i));
            }
            SpillStatistics st = store.statistics();
            assertTrue(st.deviceBytes() <= 40 * MIB && st.hostBytes() <= 32 * MIB, st.toString());
            assertTrue(st.diskBuffers() > 0 && st.hostBuffers() > 0 && st.deviceBuffers() > 0, st.toString());
            try (Stream<Path> files = Files.walk(dir)) {
                assertEquals(
                        st.diskBuffers(),
                        files.filter(p -> p.toString().endsWith(".spill")).count());
            }
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < buffers.size(); i++) {
                order.add(i);
            }
            for (int round = 0; round < 3; round++) {
                Collections.shuffle(order, r);
                for (int i : order) {
                    assertArrayEquals(expected.get(i), read(buffers.get(i)), "buffer " + i + ", round " + round);
                }
            }
            st = store.statistics();
            assertTrue(st.deviceToHost().count() > 0 && st.hostToDisk().count() > 0, st.toString());
            assertTrue(st.hostToDevice().count() > 0 && st.diskToDevice().count() > 0, st.toString());
            assertEquals(0, st.failedSpills());
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(0, files.count(), "the store's directory is gone after close");
        }
    }

    @Test
    void aPoolAllocationFailureSpillsJustInTime() {
        // The device limit would allow a GiB; the pool holds 16 MiB: the fifth 4 MiB buffer makes the pool
        // fail, and the store spills the oldest and tries again.
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 16 * MIB, 16 * MIB);
                SpillStore store = SpillStore.builder(pool)
                        .deviceMemoryLimit(1L << 30)
                        .localDirectory(dir)
                        .build()) {
            List<SpillableBuffer> buffers = new ArrayList<>();
            List<byte[]> expected = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                buffers.add(store.allocate(4 * MIB));
                expected.add(write(buffers.get(i), 100 + i));
            }
            assertEquals(0, store.statistics().justInTimeSpills());
            SpillableBuffer fifth = store.allocate(4 * MIB);
            assertEquals(1, store.statistics().justInTimeSpills());
            assertEquals(SpillTier.HOST, buffers.get(0).tier(), "the least recently used went");
            byte[] fifthData = write(fifth, 5);
            for (int i = 0; i < 4; i++) {
                assertArrayEquals(expected.get(i), read(buffers.get(i)));
            }
            assertArrayEquals(fifthData, read(fifth));
            assertTrue(store.statistics().justInTimeSpills() >= 4);
            assertTrue(pool.usedBytes() <= 16 * MIB);
            // Memory for UCX to receive into (AmAllocator.of(store)) makes room the same way.
            long before = store.statistics().justInTimeSpills();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment frame = store.allocate(8 * MIB, arena);
                assertEquals(Cuda.device(0), Cuda.deviceOf(frame).orElseThrow());
                assertTrue(store.statistics().justInTimeSpills() >= before + 2);
            }
            assertArrayEquals(fifthData, read(fifth));
        }
    }

    @Test
    void putHandsPoolMemoryToTheStore() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 16 * MIB, 16 * MIB);
                SpillStore store = SpillStore.builder(pool)
                        .deviceMemoryLimit(8 * MIB)
                        .localDirectory(dir)
                        .build()) {
            DeviceMemory m = pool.allocate(8 * MIB);
            m.fill((byte) 0x5a);
            SpillableBuffer b = store.put(m);
            store.allocate(MIB); // over the limit: b is spilled and its pool memory returned
            assertEquals(SpillTier.HOST, b.tier());
            assertTrue(!m.isOpen() && pool.usedBytes() == MIB);
            for (byte x : read(b)) {
                assertEquals(0x5a, x);
            }
        }
    }

    @Test
    void aBufferLargerThanTheHostLimitStreamsToDiskAndBackThroughPinnedChunks() {
        // 48 MiB past a 4 MiB host limit: device -> disk and disk -> device in 1 MiB pinned chunks.
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 64 * MIB, 64 * MIB);
                SpillStore store = SpillStore.builder(pool)
                        .deviceMemoryLimit(64 * MIB)
                        .memoryLimit(4 * MIB)
                        .localDirectory(dir)
                        .build()) {
            SpillableBuffer big = store.allocate(48 * MIB + 12345);
            byte[] data = write(big, 77);
            store.spill(1);
            assertEquals(SpillTier.DISK, big.tier());
            assertEquals(0, pool.usedBytes(), "its device memory went back to the pool");
            assertArrayEquals(data, read(big));
            SpillStatistics st = store.statistics();
            assertEquals(1, st.diskToDevice().count());
            assertEquals(0, st.failedSpills());
            CudaException e = assertThrows(CudaException.class, () -> store.allocate(64 * MIB + 1));
            assertTrue(e.getMessage().contains("memory-pool.maximum-size"), e.getMessage());
            assertEquals(SpillTier.DEVICE, big.tier(), "refused at once, nothing spilled");
        }
    }

    @Test
    void closingTheStoreLeavesABufferInUseToItsHolder() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 16 * MIB, 16 * MIB)) {
            SpillStore store = SpillStore.builder(pool).localDirectory(dir).build();
            SpillableBuffer b = store.allocate(4 * MIB);
            byte[] data = write(b, 9);
            SpillableBuffer.Access held = b.acquire();
            store.close();
            assertEquals(4 * MIB, pool.usedBytes(), "not back in the pool while held");
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(b.byteSize());
                Cuda.copy(host, held.segment());
                assertArrayEquals(data, host.toArray(JAVA_BYTE));
            }
            held.close();
            assertEquals(0, pool.usedBytes(), "freed on its last access");
            store.close();
        }
    }
}
