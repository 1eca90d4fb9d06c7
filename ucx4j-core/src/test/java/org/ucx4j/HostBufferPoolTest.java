package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The host buffer pool: size classes, reuse after the owner's arena closes, the retention cap. */
class HostBufferPoolTest {
    private static final long MIB = 1024 * 1024;

    @Test
    void sizeClassesFitWithAtMostAQuarterOfSlack() {
        for (long size = HostBufferPool.MIN_POOLED; size < 3L * 1024 * MIB; size = size * 9 / 8 + 4093) {
            int c = HostBufferPool.sizeClass(size);
            long bytes = HostBufferPool.classBytes(c);
            assertTrue(bytes >= size, size + " in class " + c + " of " + bytes);
            assertTrue(bytes <= size + size / 4 + 4096, size + " in class " + c + " of " + bytes);
            if (c > 0) {
                assertTrue(
                        HostBufferPool.classBytes(c - 1) < size || HostBufferPool.classBytes(c - 1) == bytes,
                        "class " + c + " is not the smallest for " + size);
            }
        }
        assertEquals(64 * 1024, HostBufferPool.classBytes(HostBufferPool.sizeClass(64 * 1024)));
        assertEquals(80 * MIB, HostBufferPool.classBytes(HostBufferPool.sizeClass(64 * MIB + 1)));
    }

    @Test
    void aBufferGoesBackWhenItsArenaClosesAndIsHandedOutAgain() {
        HostBufferPool pool = HostBufferPool.create(64 * MIB);
        MemorySegment first;
        long address;
        try (Arena a = Arena.ofShared()) {
            first = pool.allocate(3 * MIB - 5, a);
            assertEquals(3 * MIB - 5, first.byteSize());
            assertEquals(0, first.address() % 4096, "page aligned");
            first.set(ValueLayout.JAVA_LONG, 3 * MIB - 16, 42L);
            address = first.address();
            assertEquals(0, pool.retainedBytes());
        }
        assertEquals(HostBufferPool.classBytes(HostBufferPool.sizeClass(3 * MIB - 5)), pool.retainedBytes());
        MemorySegment stale = first;
        assertThrows(IllegalStateException.class, () -> stale.get(ValueLayout.JAVA_LONG, 0), "closed with its arena");
        try (Arena b = Arena.ofConfined()) {
            MemorySegment again = pool.allocate(3 * MIB, b);
            assertEquals(address, again.address(), "the same class reuses the kept buffer");
            assertEquals(3 * MIB, again.byteSize());
            assertEquals(1, pool.hits());
            assertEquals(1, pool.misses());
        }
        pool.trim();
        assertEquals(0, pool.retainedBytes());
    }

    @Test
    void idleMemoryNeverExceedsTheCap() {
        HostBufferPool pool = HostBufferPool.create(10 * MIB);
        Arena a = Arena.ofShared();
        for (int i = 0; i < 5; i++) {
            pool.allocate(4 * MIB, a);
        }
        a.close();
        assertEquals(8 * MIB, pool.retainedBytes(), "two 4 MiB buffers fit under 10 MiB, three were freed");
        HostBufferPool none = HostBufferPool.create(0);
        try (Arena b = Arena.ofConfined()) {
            none.allocate(MIB, b);
        }
        assertEquals(0, none.retainedBytes());
        pool.trim();
    }

    @Test
    void smallAndEmptyBuffersAndBadArguments() {
        HostBufferPool pool = HostBufferPool.create(MIB);
        try (Arena a = Arena.ofConfined()) {
            assertEquals(0, pool.allocate(0, a).byteSize());
            assertEquals(100, pool.allocate(100, a).byteSize());
            assertThrows(IllegalArgumentException.class, () -> pool.allocate(-1, a));
        }
        assertThrows(IllegalArgumentException.class, () -> HostBufferPool.create(-1));
        pool.trim();
    }
}
