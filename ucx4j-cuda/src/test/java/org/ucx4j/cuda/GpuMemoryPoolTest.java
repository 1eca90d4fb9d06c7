package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.MemoryKind;

/** The GPU memory pool: sizes, reuse, exhaustion, maximum, lifetimes. */
@Tag("gpu")
class GpuMemoryPoolTest {
    @BeforeEach
    void gpu() {
        GpuRequirement.assumeGpu();
    }

    @Test
    void manySizesFitInOneSlabAndDoNotOverlap() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 64L << 20, 64L << 20)) {
            assertEquals(1, pool.slabCount());
            Random r = new Random(7);
            List<DeviceMemory> live = new ArrayList<>();
            long sum = 0;
            for (int i = 0; i < 200; i++) {
                long size = 1 + r.nextInt(200_000);
                DeviceMemory m = pool.allocate(size);
                assertEquals(0, m.segment().address() % GpuMemoryPool.ALIGNMENT);
                assertEquals(size, m.byteSize(), "the size asked for, not its 256-byte rounding");
                live.add(m);
                sum += (size + 255) / 256 * 256;
            }
            assertEquals(sum, pool.usedBytes());
            live.sort((a, b) -> Long.compare(a.segment().address(), b.segment().address()));
            for (int i = 1; i < live.size(); i++) {
                DeviceMemory prev = live.get(i - 1);
                assertTrue(
                        prev.segment().address() + prev.byteSize()
                                <= live.get(i).segment().address(),
                        "overlap");
            }
            // Each holds its own bytes.
            for (int i = 0; i < live.size(); i++) {
                live.get(i).fill((byte) i);
            }
            try (Arena a = Arena.ofConfined()) {
                for (int i = 0; i < live.size(); i++) {
                    MemorySegment one = a.allocate(1);
                    live.get(i).copyTo(one);
                    assertEquals((byte) i, one.get(ValueLayout.JAVA_BYTE, 0));
                }
            }
            live.forEach(DeviceMemory::close);
            assertEquals(0, pool.usedBytes());
            assertEquals(1, pool.slabCount());
            // Everything coalesced: the whole slab fits again.
            try (DeviceMemory all = pool.allocate(64L << 20)) {
                assertEquals(64L << 20, all.byteSize());
            }
        }
    }

    @Test
    void freedMemoryIsReused() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 16L << 20, 16L << 20)) {
            DeviceMemory a = pool.allocate(1 << 20);
            long address = a.segment().address();
            a.close();
            try (DeviceMemory b = pool.allocate(1 << 20)) {
                assertEquals(address, b.segment().address());
            }
        }
    }

    @Test
    void exhaustionIsAClearErrorAndMaximumIsHonoured() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 8L << 20, 24L << 20)) {
            List<DeviceMemory> held = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                held.add(pool.allocate(8L << 20)); // grows by 8 MiB slabs up to 24 MiB
            }
            assertEquals(24L << 20, pool.reservedBytes());
            CudaException e = assertThrows(CudaException.class, () -> pool.allocate(1));
            assertTrue(e.getMessage().contains("exhausted") && e.getMessage().contains("maximum size"), e.getMessage());
            assertTrue(pool.reservedBytes() <= pool.maximumSize());
            held.remove(0).close();
            held.add(pool.allocate(4L << 20)); // room again after a free
            held.forEach(DeviceMemory::close);
            assertEquals(0, pool.releaseUnused() % (8L << 20));
            assertEquals(0, pool.reservedBytes());
        }
    }

    @Test
    void arenaScopedMemoryReturnsWhenTheArenaCloses() {
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 0, 1L << 30)) {
            assertEquals(MemoryKind.CUDA, pool.kind());
            MemorySegment seg;
            try (Arena arena = Arena.ofShared()) {
                seg = pool.allocate(3 << 20, arena);
                assertEquals(3 << 20, seg.byteSize());
                pool.copy(seg, MemorySegment.ofArray(new byte[3 << 20]));
                assertEquals(3L << 20, pool.usedBytes());
            }
            assertEquals(0, pool.usedBytes());
            assertFalse(seg.scope().isAlive());
        }
    }

    @Test
    void closingThePoolClosesWhatIsOut() {
        GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 4L << 20, 4L << 20);
        DeviceMemory m = pool.allocate(1024);
        pool.close();
        pool.close();
        assertFalse(m.isOpen());
        assertThrows(IllegalStateException.class, () -> pool.allocate(1));
        assertThrows(IllegalArgumentException.class, () -> GpuMemoryPool.create(Cuda.device(0), 2L << 20, 1L << 20));
    }
}
