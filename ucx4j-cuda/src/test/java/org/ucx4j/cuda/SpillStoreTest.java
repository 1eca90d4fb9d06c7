package org.ucx4j.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.UcxConfig;

/**
 * The spill store's tier logic on host memory standing in for the device ({@link HostSpillMemory}), so it runs
 * in CI: LRU order, limits, buffers in use, just-in-time spills, byte-exact round trips through every tier,
 * disk errors that lose nothing, concurrency, logging, and cleanup.
 */
@Timeout(120)
class SpillStoreTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose.reversed()) {
            c.close();
        }
    }

    private HostSpillMemory memory;

    private SpillStore store(long deviceCapacity, long deviceLimit, long hostLimit) {
        return store(
                deviceCapacity,
                SpillStore.builder()
                        .deviceMemoryLimit(deviceLimit)
                        .memoryLimit(hostLimit)
                        .localDirectory(dir));
    }

    private SpillStore store(long deviceCapacity, SpillStore.Builder builder) {
        memory = new HostSpillMemory(deviceCapacity);
        SpillStore s = builder.build(memory);
        toClose.add(s);
        return s;
    }

    /** Writes bytes from a seed into the buffer (acquiring it), and returns them. */
    private static byte[] fill(SpillableBuffer b, long seed) {
        byte[] data = new byte[(int) b.byteSize()];
        new Random(seed).nextBytes(data);
        try (SpillableBuffer.Access a = b.acquire()) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, a.segment(), 0, data.length);
        }
        return data;
    }

    private static byte[] read(SpillableBuffer b) {
        try (SpillableBuffer.Access a = b.acquire()) {
            return a.segment().toArray(JAVA_BYTE);
        }
    }

    @Test
    void leastRecentlyUsedGoesFirst() {
        SpillStore s = store(100 * MIB, 3 * MIB, 100 * MIB);
        SpillableBuffer a = s.allocate(MIB);
        SpillableBuffer b = s.allocate(MIB);
        SpillableBuffer c = s.allocate(MIB);
        read(a); // a is now the most recently used: b is the oldest
        SpillableBuffer d = s.allocate(MIB);
        assertEquals(SpillTier.HOST, b.tier());
        assertEquals(SpillTier.DEVICE, a.tier());
        assertEquals(SpillTier.DEVICE, c.tier());
        assertEquals(SpillTier.DEVICE, d.tier());
        s.allocate(MIB); // then c, the oldest left
        assertEquals(SpillTier.HOST, c.tier());
        assertEquals(SpillTier.DEVICE, a.tier());
        read(b); // b comes back; a is the oldest now
        assertEquals(SpillTier.DEVICE, b.tier());
        assertEquals(SpillTier.HOST, a.tier());
        SpillStatistics st = s.statistics();
        assertEquals(3, st.deviceToHost().count());
        assertEquals(1, st.hostToDevice().count());
        assertEquals(3 * MIB, st.deviceBytes());
        assertEquals(2 * MIB, st.hostBytes());
        assertEquals(3, st.deviceBuffers());
        assertEquals(2, st.hostBuffers());
    }

    @Test
    void hostLimitSendsTheOldestHostBuffersToDisk() throws Exception {
        SpillStore s = store(100 * MIB, 2 * MIB, 2 * MIB);
        List<SpillableBuffer> all = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            all.add(s.allocate(MIB));
        }
        // 2 on the device (the newest), 2 in host memory, the 2 oldest on disk.
        assertEquals(
                List.of(
                        SpillTier.DISK,
                        SpillTier.DISK,
                        SpillTier.HOST,
                        SpillTier.HOST,
                        SpillTier.DEVICE,
                        SpillTier.DEVICE),
                all.stream().map(SpillableBuffer::tier).toList());
        SpillStatistics st = s.statistics();
        assertEquals(2 * MIB, st.deviceBytes());
        assertEquals(2 * MIB, st.hostBytes());
        assertEquals(2 * MIB, st.diskBytes());
        assertEquals(2, st.hostToDisk().count());
        assertEquals(2 * MIB, st.hostToDisk().bytes());
        assertEquals(4, st.deviceToHost().count());
        assertTrue(st.deviceToHost().time().toNanos() > 0);
        assertEquals(2 * MIB, memory.hostUsed.get());
        try (Stream<Path> files = Files.walk(dir)) {
            assertEquals(2, files.filter(p -> p.toString().endsWith(".spill")).count());
        }
        assertTrue(s.deviceMemoryLimit() == 2 * MIB && s.memoryLimit() == 2 * MIB);
    }

    @Test
    void everyTierGivesTheBytesBackExactly() {
        SpillStore s = store(100 * MIB, 3 * MIB, 3 * MIB);
        Random r = new Random(42);
        List<SpillableBuffer> buffers = new ArrayList<>();
        List<byte[]> expected = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            SpillableBuffer b = s.allocate(1 + r.nextInt((int) MIB)); // odd sizes too
            buffers.add(b);
            expected.add(fill(b, i));
        }
        assertTrue(s.statistics().diskBuffers() > 0, "some went to disk");
        // Back from every tier, oldest (disk) first; each acquire pushes others down again.
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < buffers.size(); i++) {
                assertArrayEquals(expected.get(i), read(buffers.get(i)), "buffer " + i + " round " + round);
            }
        }
        // Reading in LRU order pushes the next one down to disk (the staging block counts too): one from host.
        int onHost = buffers.indexOf(buffers.stream()
                .filter(b -> b.tier() == SpillTier.HOST)
                .findFirst()
                .orElseThrow());
        assertArrayEquals(expected.get(onHost), read(buffers.get(onHost)));
        SpillStatistics st = s.statistics();
        assertTrue(st.diskToDevice().count() > 0
                && st.hostToDevice().count() > 0
                && st.hostToDisk().count() > 0);
    }

    @Test
    void aBufferInUseIsNeverSpilled() {
        SpillStore s = store(100 * MIB, 2 * MIB, 100 * MIB);
        SpillableBuffer held = s.allocate(MIB);
        byte[] data = fill(held, 1);
        try (SpillableBuffer.Access access = held.acquire()) {
            for (int i = 0; i < 5; i++) {
                s.allocate(MIB);
            }
            assertEquals(0, s.spill(0));
            s.spill(Long.MAX_VALUE);
            assertEquals(SpillTier.DEVICE, held.tier());
            assertEquals(MIB, s.statistics().deviceBytes(), "all but the held one spilled");
            assertThrows(IllegalStateException.class, held::close, "closing a buffer in use is refused");
            // Held twice: still held after one is closed.
            try (SpillableBuffer.Access again = held.acquire()) {
                assertEquals(access.segment().address(), again.segment().address());
            }
            s.spill(Long.MAX_VALUE);
            assertEquals(SpillTier.DEVICE, held.tier());
            assertArrayEquals(data, access.segment().toArray(JAVA_BYTE));
        }
        assertEquals(MIB, s.spill(1), "spillable once released");
        assertEquals(SpillTier.HOST, held.tier());
    }

    @Test
    void buffersInUseMayPassTheLimitButNotTheDevice() {
        SpillStore s = store(4 * MIB, 2 * MIB, 100 * MIB);
        List<SpillableBuffer.Access> held = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            held.add(s.allocate(MIB).acquire());
        }
        assertEquals(4 * MIB, s.statistics().deviceBytes(), "over the limit: every buffer is in use");
        CudaException e = assertThrows(CudaException.class, () -> s.allocate(MIB));
        assertTrue(e.getMessage().contains("even after spilling every buffer not in use"), e.getMessage());
        held.forEach(SpillableBuffer.Access::close);
        s.allocate(MIB);
        assertEquals(2 * MIB, s.statistics().deviceBytes());
    }

    @Test
    void aFailedAllocationSpillsJustInTime() {
        // The limit would allow 10 MiB; the "pool" has room for 3.
        SpillStore s = store(3 * MIB, 10 * MIB, 100 * MIB);
        SpillableBuffer a = s.allocate(MIB);
        byte[] data = fill(a, 7);
        s.allocate(MIB);
        s.allocate(MIB);
        s.allocate(2 * MIB); // needs two spills
        SpillStatistics st = s.statistics();
        assertEquals(2, st.justInTimeSpills());
        assertEquals(2, st.deviceToHost().count());
        assertEquals(SpillTier.HOST, a.tier());
        assertArrayEquals(data, read(a)); // and back, again just in time
        assertEquals(3, s.statistics().justInTimeSpills());
    }

    @Test
    void memoryForUcxToReceiveIntoMakesRoomBySpilling() {
        SpillStore s = store(3 * MIB, 10 * MIB, 100 * MIB);
        SpillableBuffer a = s.allocate(MIB);
        byte[] data = fill(a, 8);
        s.allocate(MIB);
        s.allocate(MIB);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment frame = s.allocate(2 * MIB, arena); // as AmAllocator.of(store) would
            assertEquals(2 * MIB, frame.byteSize());
            assertEquals(2, s.statistics().justInTimeSpills());
            assertEquals(3 * MIB, memory.deviceUsed.get());
            assertEquals(SpillTier.HOST, a.tier());
            assertThrows(CudaException.class, () -> {
                try (SpillableBuffer.Access held = s.allocate(MIB).acquire()) {
                    s.allocate(MIB, arena); // full: the frame and one buffer in use
                }
            });
        }
        assertEquals(MIB, memory.deviceUsed.get(), "the frame went back when its arena closed");
        assertEquals(0, s.allocate(0, Arena.global()).byteSize());
        assertArrayEquals(data, read(a));
        assertEquals(org.ucx4j.MemoryKind.CUDA, s.kind());
    }

    @Test
    void putTakesOwnershipAndSpillsTheMemory() {
        SpillStore s = store(100 * MIB, 2 * MIB, 100 * MIB);
        SpillMemory.Block block = memory.deviceBlock(MIB);
        block.segment().fill((byte) 5);
        SpillableBuffer b = s.put(block, MIB);
        s.allocate(MIB);
        s.allocate(MIB);
        assertEquals(SpillTier.HOST, b.tier());
        assertFalse(block.segment().scope().isAlive(), "the device memory was freed when spilled");
        byte[] back = read(b);
        for (byte x : back) {
            assertEquals(5, x);
        }
    }

    @Test
    void aMissingDirectoryIsAClearErrorAndLosesNothing() {
        Path missing = dir.resolve("no-such-dir");
        SpillStore s = store(
                100 * MIB,
                SpillStore.builder().deviceMemoryLimit(MIB).memoryLimit(MIB).localDirectory(missing));
        SpillableBuffer a = s.allocate(MIB);
        byte[] data = fill(a, 3);
        SpillableBuffer b = s.allocate(MIB); // a -> host
        assertEquals(SpillTier.HOST, a.tier());
        UncheckedIOException e =
                assertThrows(UncheckedIOException.class, () -> s.allocate(MIB)); // b -> host needs a -> disk
        assertTrue(
                e.getMessage().contains(missing.toString()) && e.getMessage().contains("does not exist"),
                e.getMessage());
        assertTrue(e.getMessage().contains("stays in host memory"), e.getMessage());
        assertEquals(SpillTier.HOST, a.tier());
        assertEquals(SpillTier.DEVICE, b.tier());
        SpillStatistics st = s.statistics();
        assertEquals(1, st.failedSpills());
        assertEquals(2, st.deviceBuffers() + st.hostBuffers(), "nothing allocated by the failed call");
        assertFalse(Files.exists(missing));
        assertArrayEquals(data, read(a), "the buffer that could not go to disk is whole");
    }

    @Test
    void aFileWhereTheDirectoryShouldBeIsAClearError() throws Exception {
        Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
        SpillStore s = store(
                100 * MIB,
                SpillStore.builder().deviceMemoryLimit(MIB).memoryLimit(MIB).localDirectory(file));
        SpillableBuffer a = s.allocate(MIB);
        byte[] data = fill(a, 4);
        s.allocate(MIB);
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> s.allocate(MIB));
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        assertArrayEquals(data, read(a));
    }

    @Test
    void aFullDiskIsAClearErrorAndLosesNothing() throws Throwable {
        // A file size limit (RLIMIT_FSIZE, which root obeys too) makes the write fail as a full disk does:
        // the JVM ignores SIGXFSZ, so write(2) fails with EFBIG ("File too large").
        SpillStore s = store(
                100 * MIB,
                SpillStore.builder()
                        .deviceMemoryLimit(4 * MIB)
                        .memoryLimit(4 * MIB)
                        .localDirectory(dir));
        SpillableBuffer big = s.allocate(4 * MIB);
        byte[] data = fill(big, 9);
        s.allocate(4 * MIB); // big -> host
        assertEquals(SpillTier.HOST, big.tier());
        UncheckedIOException e;
        try (FileSizeLimit limit = FileSizeLimit.of(MIB)) {
            e = assertThrows(UncheckedIOException.class, () -> s.allocate(4 * MIB));
        }
        assertTrue(
                e.getMessage().contains("File too large") && e.getMessage().contains("stays in host memory"),
                e.getMessage());
        assertEquals(SpillTier.HOST, big.tier());
        try (Stream<Path> files = Files.walk(dir)) {
            assertEquals(0, files.filter(p -> p.toString().endsWith(".spill")).count(), "the partial file is gone");
        }
        assertArrayEquals(data, read(big));
        // Room again: the same spill now works.
        s.allocate(4 * MIB);
        s.allocate(4 * MIB);
        assertTrue(s.statistics().diskBuffers() > 0);
        assertArrayEquals(data, read(big));
    }

    @Test
    void aBufferLargerThanTheHostLimitGoesStraightOnToDisk() {
        SpillStore s = store(100 * MIB, 2 * MIB, MIB);
        SpillableBuffer big = s.allocate(2 * MIB);
        byte[] data = fill(big, 11);
        s.spill(1);
        assertEquals(SpillTier.DISK, big.tier());
        assertEquals(0, memory.hostUsed.get());
        assertArrayEquals(data, read(big));
    }

    @Test
    void aBufferLargerThanTheHostLimitStreamsThroughABoundedBlock() throws Throwable {
        SpillStore s = store(100 * MIB, 8 * MIB, MIB);
        SpillableBuffer big = s.allocate(8 * MIB);
        byte[] data = fill(big, 12);
        try (FileSizeLimit limit = FileSizeLimit.of(MIB)) {
            UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> s.spill(1));
            assertTrue(e.getMessage().contains("stays on the device"), e.getMessage());
        }
        assertEquals(SpillTier.DEVICE, big.tier(), "a failed write leaves it where it was");
        assertEquals(1, s.statistics().failedSpills());
        assertEquals(0, s.statistics().hostBytes());
        s.spill(1);
        assertEquals(SpillTier.DISK, big.tier());
        assertArrayEquals(data, read(big));
        assertTrue(
                memory.hostPeak.get() <= MIB,
                "host memory held at most the limit, not the whole buffer: " + memory.hostPeak.get());
        assertEquals(0, memory.hostUsed.get());
    }

    @Test
    void theHostLimitCountsSizeClassesIdleBlocksAndStaging() {
        long limit = 7 * MIB / 2;
        memory = new HostSpillMemory(100 * MIB, 64 * MIB); // keeps idle blocks for reuse
        SpillStore s = SpillStore.builder()
                .deviceMemoryLimit(2 * MIB + 2)
                .memoryLimit(limit)
                .localDirectory(dir)
                .build(memory);
        toClose.add(s);
        Random r = new Random(5);
        List<SpillableBuffer> buffers = new ArrayList<>();
        List<byte[]> expected = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            SpillableBuffer b = s.allocate(MIB + 1); // a block of 1.25 MiB each
            buffers.add(b);
            expected.add(fill(b, i));
        }
        s.spill(3 * MIB + 3);
        assertEquals(1, s.statistics().diskBuffers(), "3 x 1.25 MiB of blocks do not fit under 3.5 MiB");
        for (int step = 0; step < 200; step++) {
            int i = r.nextInt(buffers.size());
            assertArrayEquals(expected.get(i), read(buffers.get(i)));
            if (r.nextBoolean()) {
                s.spill(MIB);
            }
            assertTrue(memory.hostUsed.get() <= limit, "host memory held " + memory.hostUsed.get());
        }
        assertTrue(memory.hostPeak.get() <= limit, "peak " + memory.hostPeak.get());
    }

    @Test
    void aRequestLargerThanThePoolsMaximumIsRefusedAtOnce() {
        SpillStore s = store(100 * MIB, 100 * MIB, 100 * MIB);
        memory.maxDeviceAllocation = 8 * MIB;
        SpillableBuffer a = s.allocate(4 * MIB);
        CudaException e = assertThrows(CudaException.class, () -> s.allocate(8 * MIB + 1));
        assertTrue(e.getMessage().contains("memory-pool.maximum-size"), e.getMessage());
        try (Arena arena = Arena.ofConfined()) {
            assertThrows(CudaException.class, () -> s.allocate(8 * MIB + 1, arena));
        }
        assertEquals(SpillTier.DEVICE, a.tier(), "nothing was spilled for it");
        assertEquals(0, s.statistics().deviceToHost().count());
    }

    @Test
    void aPinnedBlockReusedIsNeverReachedThroughItsOldSegment() {
        HostSpillMemory m = new HostSpillMemory(MIB, 16 * MIB);
        SpillMemory.Block first = m.allocateHost(3000);
        MemorySegment old = first.segment();
        first.close();
        first.close(); // idempotent: given back once
        assertEquals(4096, m.idleHostBytes());
        SpillMemory.Block second = m.allocateHost(4000);
        assertEquals(old.address(), second.segment().address(), "the same memory, reused");
        assertEquals(0, m.idleHostBytes());
        second.segment().fill((byte) 7);
        assertThrows(IllegalStateException.class, () -> old.get(JAVA_BYTE, 0), "the old view is closed");
        assertEquals(4000, second.segment().byteSize());
        second.close();
        assertEquals(4096, m.trimIdleHost(1));
        assertEquals(0, m.hostUsed.get());
        m.close();
    }

    @Test
    void closingTheStoreFreesABufferInUseOnItsLastAccess() {
        SpillStore s = store(100 * MIB, 100 * MIB, 100 * MIB);
        SpillableBuffer b = s.allocate(MIB);
        byte[] data = fill(b, 4);
        SpillableBuffer.Access one = b.acquire();
        SpillableBuffer.Access two = b.acquire();
        s.close();
        assertThrows(IllegalStateException.class, b::acquire);
        assertArrayEquals(data, one.segment().toArray(JAVA_BYTE), "still the buffer's bytes");
        one.close();
        assertEquals(MIB, memory.deviceUsed.get());
        two.close();
        assertEquals(0, memory.deviceUsed.get());
        s.close();
    }

    @Test
    void aBufferInUseByAnotherThreadIsSkippedAndTheNextSpilled() throws Throwable {
        SpillStore s = store(100 * MIB, 2 * MIB, 100 * MIB);
        SpillableBuffer stuck = s.allocate(MIB);
        MemorySegment segment;
        try (SpillableBuffer.Access a = stuck.acquire()) {
            segment = a.segment();
        }
        SpillableBuffer next = s.allocate(MIB);
        byte[] nextData = fill(next, 2);
        // A thread inside read(2) into the buffer's memory (after its access closed: a misuse, or a copy still
        // running): the memory cannot be freed while the call lasts.
        try (Arena arena = Arena.ofConfined();
                BlockedRead blocked = BlockedRead.into(segment, arena)) {
            PrintStream err = System.err;
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try {
                s.allocate(MIB);
            } finally {
                System.setErr(err);
            }
            assertEquals(SpillTier.DEVICE, stuck.tier(), "skipped, whole where it was");
            assertEquals(SpillTier.HOST, next.tier(), "the next least recently used went instead");
            assertEquals(1, s.statistics().failedSpills());
            String log = captured.toString(StandardCharsets.UTF_8);
            assertTrue(
                    log.contains("cannot spill SpillableBuffer[#1, 1048576 bytes]: its device memory is in use"), log);
        }
        assertEquals(2 * MIB, s.spill(2 * MIB), "spillable again once the call returned");
        assertEquals(SpillTier.HOST, stuck.tier());
        assertArrayEquals(nextData, read(next));
    }

    @Test
    void aFreeThatFailsAfterTheMemoryEndedKeepsTheMoveAndWarnsOfALeak() {
        SpillStore s = store(100 * MIB, MIB, 100 * MIB);
        Arena arena = Arena.ofShared();
        MemorySegment memory = arena.allocate(MIB);
        SpillMemory.Block failing = new SpillMemory.Block() {
            @Override
            public MemorySegment segment() {
                return memory;
            }

            @Override
            public void close() {
                if (arena.scope().isAlive()) {
                    arena.close();
                    throw new IllegalStateException("the pool refused it back");
                }
            }
        };
        memory.fill((byte) 0x3c);
        SpillableBuffer b = s.put(failing, MIB);
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            s.allocate(MIB);
        } finally {
            System.setErr(err);
        }
        assertEquals(SpillTier.HOST, b.tier(), "the move stands: the host copy is the buffer now");
        for (byte x : read(b)) {
            assertEquals(0x3c, x);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("could not be given back after the buffer left it") && log.contains("leaked"), log);
    }

    @Test
    void aSecondCloseFreesWhatAnotherThreadHeldDuringTheFirst() throws Throwable {
        SpillStore s = store(100 * MIB, 100 * MIB, 100 * MIB);
        SpillableBuffer b = s.allocate(MIB);
        MemorySegment segment;
        try (SpillableBuffer.Access a = b.acquire()) {
            segment = a.segment();
        }
        try (Arena arena = Arena.ofConfined();
                BlockedRead blocked = BlockedRead.into(segment, arena)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, s::close);
            assertTrue(e.getMessage().contains("cannot free SpillableBuffer[#1"), e.getMessage());
            assertEquals(MIB, memory.deviceUsed.get(), "not freed under the thread in the call");
            assertThrows(IllegalStateException.class, () -> s.allocate(1), "closed all the same");
        }
        s.close();
        assertEquals(0, memory.deviceUsed.get(), "freed by the second close");
    }

    /** A thread blocked in read(2) from an empty pipe into a segment, released on close by a write. */
    private static final class BlockedRead implements AutoCloseable {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final MethodHandle PIPE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("pipe").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS));
        private static final MethodHandle READ = LINKER.downcallHandle(
                LINKER.defaultLookup().find("read").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS, JAVA_LONG));
        private static final MethodHandle WRITE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("write").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS, JAVA_LONG));
        private static final MethodHandle CLOSE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        private final int readEnd;
        private final int writeEnd;
        private final MemorySegment one;
        private final Thread thread;

        private BlockedRead(int readEnd, int writeEnd, MemorySegment one, Thread thread) {
            this.readEnd = readEnd;
            this.writeEnd = writeEnd;
            this.one = one;
            this.thread = thread;
        }

        static BlockedRead into(MemorySegment target, Arena arena) throws Throwable {
            MemorySegment fds = arena.allocate(8);
            assertEquals(0, (int) PIPE.invokeExact(fds));
            int r = fds.get(JAVA_INT, 0);
            String name = "spill-blocked-" + r;
            Thread t = Thread.ofPlatform().name(name).start(() -> {
                try {
                    long n = (long) READ.invokeExact(r, target, 1L);
                    assertEquals(1, n);
                } catch (Throwable e) {
                    throw new AssertionError(e);
                }
            });
            // In read(2): the thread sleeps in the kernel (its /proc state is S).
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> sleepingInKernel(name));
            return new BlockedRead(r, fds.get(JAVA_INT, 4), arena.allocate(1), t);
        }

        private static boolean sleepingInKernel(String name) throws Exception {
            try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
                for (Path task : tasks.toList()) {
                    try {
                        if (name.startsWith(
                                Files.readString(task.resolve("comm")).strip())) {
                            String stat = Files.readString(task.resolve("stat"));
                            return stat.substring(stat.lastIndexOf(')') + 2).startsWith("S");
                        }
                    } catch (java.io.IOException gone) {
                        // a thread that ended meanwhile
                    }
                }
            }
            return false;
        }

        @Override
        public void close() throws Exception {
            try {
                assertEquals(1L, (long) WRITE.invokeExact(writeEnd, one, 1L));
                thread.join(Duration.ofSeconds(30));
                assertFalse(thread.isAlive());
            } catch (Throwable e) {
                throw new AssertionError(e);
            } finally {
                closeFd(readEnd);
                closeFd(writeEnd);
            }
        }

        private static void closeFd(int fd) {
            try {
                assertEquals(0, (int) CLOSE.invokeExact(fd));
            } catch (Throwable e) {
                throw new AssertionError(e);
            }
        }
    }

    @Test
    void manyThreadsKeepEveryBufferWhole() throws Exception {
        SpillStore s = store(6 * MIB, 4 * MIB, 4 * MIB);
        int n = 24;
        List<SpillableBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            buffers.add(s.allocate(256 * 1024 + i));
        }
        long[] version = new long[n];
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    Random r = new Random(thread);
                    for (int k = 0; k < 300; k++) {
                        int i = r.nextInt(n);
                        SpillableBuffer b = buffers.get(i);
                        try (SpillableBuffer.Access a = b.acquire()) {
                            // Whoever holds the buffer's monitor writes a stamp over the whole buffer and checks
                            // that the previous stamp was intact everywhere.
                            synchronized (b) {
                                MemorySegment seg = a.segment();
                                long expected = version[i];
                                for (long off = 0; off + 8 <= seg.byteSize(); off += 4096) {
                                    assertEquals(expected, seg.get(JAVA_LONG.withByteAlignment(1), off));
                                }
                                long next = expected + 1 + thread;
                                for (long off = 0; off + 8 <= seg.byteSize(); off += 4096) {
                                    seg.set(JAVA_LONG.withByteAlignment(1), off, next);
                                }
                                version[i] = next;
                            }
                        }
                        if (k % 50 == 0) {
                            s.spill(MIB);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        SpillStatistics st = s.statistics();
        assertTrue(st.hostToDisk().count() > 0 && st.diskToDevice().count() > 0, st.toString());
        long total = 0;
        for (SpillableBuffer b : buffers) {
            total += b.byteSize();
        }
        assertEquals(total, st.deviceBytes() + st.hostBytes() + st.diskBytes());
    }

    /** Holds the first copy that passes {@link HostSpillMemory#beforeCopy} until released; the others pass. */
    private static final class HeldCopy implements Runnable, AutoCloseable {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);
        private final AtomicBoolean taken = new AtomicBoolean();

        @Override
        public void run() {
            if (taken.compareAndSet(false, true)) {
                entered.countDown();
                try {
                    assertTrue(release.await(60, TimeUnit.SECONDS), "the held copy was never released");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                }
            }
        }

        void awaitHeld() throws InterruptedException {
            assertTrue(entered.await(30, TimeUnit.SECONDS), "no copy started");
        }

        @Override
        public void close() {
            release.countDown();
        }
    }

    @Test
    void aMoveInProgressHoldsUpNeitherOtherBuffersNorOtherMoves() throws Exception {
        SpillStore s = store(100 * MIB, 3 * MIB, 100 * MIB);
        SpillableBuffer a = s.allocate(MIB);
        SpillableBuffer b = s.allocate(MIB);
        SpillableBuffer c = s.allocate(MIB);
        byte[] aData = fill(a, 1);
        byte[] bData = fill(b, 2);
        byte[] cData = fill(c, 3);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (HeldCopy held = new HeldCopy()) {
            memory.beforeCopy = held;
            Future<Long> spillA = threads.submit(() -> s.spill(1)); // a, the least recently used
            held.awaitHeld();
            // a's copy is held in the middle: the store's other calls go on.
            assertEquals(SpillTier.DEVICE, a.tier(), "where it is moving from, until the move ends");
            assertEquals(3 * MIB, s.statistics().deviceBytes());
            assertArrayEquals(bData, read(b), "another buffer is acquired while a moves");
            assertEquals(MIB, s.spill(1), "another move (c, a is taken) ends while a's is held");
            assertEquals(SpillTier.HOST, c.tier());
            assertArrayEquals(cData, read(c), "and comes back");
            assertEquals(SpillTier.DEVICE, a.tier());
            // Acquiring a waits for its move: it never gets memory that the move is about to free.
            AtomicReference<Thread> reader = new AtomicReference<>();
            Future<byte[]> readA = threads.submit(() -> {
                reader.set(Thread.currentThread());
                return read(a);
            });
            Awaitility.await("acquire(a) waits for a's move")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> reader.get() != null && reader.get().getState() == Thread.State.WAITING);
            assertFalse(readA.isDone());
            held.close();
            assertEquals(MIB, spillA.get(30, TimeUnit.SECONDS));
            assertArrayEquals(aData, readA.get(30, TimeUnit.SECONDS), "a went to host memory and came back whole");
        } finally {
            threads.shutdownNow();
        }
        SpillStatistics st = s.statistics();
        assertEquals(3 * MIB, st.deviceBytes(), "a came back; b and c are there");
        assertEquals(0, st.hostBytes());
        assertEquals(2, st.deviceToHost().count(), "a and c");
        assertEquals(2, st.hostToDevice().count(), "c and a");
        assertEquals(3 * MIB, memory.deviceUsed.get(), "the device memory held is what the tier counts");
        assertEquals(0, memory.hostUsed.get(), "host copies freed when their buffers came back");
        assertArrayEquals(bData, read(b));
        assertArrayEquals(cData, read(c));
    }

    @Test
    void aDiskWriteInProgressHoldsUpOnlyWhatNeedsItsRoom() throws Exception {
        SpillStore s = store(100 * MIB, 3 * MIB, MIB);
        SpillableBuffer big = s.allocate(2 * MIB); // larger than memory-limit: straight on to disk when spilled
        SpillableBuffer other = s.allocate(MIB / 2);
        byte[] bigData = fill(big, 4);
        byte[] otherData = fill(other, 5);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (HeldCopy held = new HeldCopy()) {
            memory.beforeCopy = held;
            Future<Long> spillBig = threads.submit(() -> s.spill(1));
            held.awaitHeld(); // big's write to disk is under way, held after its first chunk's copy
            assertArrayEquals(otherData, read(other));
            assertEquals(SpillTier.DEVICE, big.tier());
            SpillableBuffer fits = s.allocate(MIB / 4); // under the limit with big still counted: at once
            assertEquals(SpillTier.DEVICE, fits.tier());
            // Room only the write in progress frees: waited for, not made by spilling other buffers.
            AtomicReference<Thread> allocating = new AtomicReference<>();
            Future<SpillableBuffer> needsRoom = threads.submit(() -> {
                allocating.set(Thread.currentThread());
                return s.allocate(MIB);
            });
            Awaitility.await("allocate waits for the room big's move makes")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> allocating.get() != null && allocating.get().getState() == Thread.State.WAITING);
            assertFalse(needsRoom.isDone());
            held.close();
            assertEquals(2 * MIB, spillBig.get(30, TimeUnit.SECONDS));
            assertEquals(SpillTier.DEVICE, needsRoom.get(30, TimeUnit.SECONDS).tier());
        } finally {
            threads.shutdownNow();
        }
        assertEquals(SpillTier.DISK, big.tier());
        assertEquals(SpillTier.DEVICE, other.tier(), "not spilled for room that big's move made");
        SpillStatistics st = s.statistics();
        assertEquals(1, st.deviceToHost().count(), "big alone moved");
        assertEquals(MIB / 2 + MIB / 4 + MIB, st.deviceBytes());
        assertEquals(st.deviceBytes(), memory.deviceUsed.get());
        assertEquals(0, memory.hostUsed.get(), "the staging block is given back");
        assertArrayEquals(bigData, read(big), "back from disk whole");
        assertArrayEquals(otherData, read(other));
    }

    @Test
    void concurrentAllocationsMovesAndFreesKeepTheAccountsExact() throws Exception {
        long hostLimit = 2 * MIB;
        SpillStore s = store(5 * MIB, 3 * MIB, hostLimit);
        int threads = 6;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<SpillableBuffer> survivors = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.Map<SpillableBuffer, byte[]> contents = new java.util.concurrent.ConcurrentHashMap<>();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    Random r = new Random(100 + thread);
                    List<SpillableBuffer> mine = new ArrayList<>();
                    for (int k = 0; k < 150; k++) {
                        int op = r.nextInt(10);
                        if (mine.isEmpty() || op < 3) {
                            SpillableBuffer b = s.allocate(64 * 1024 + r.nextInt(448 * 1024));
                            contents.put(b, fill(b, r.nextLong()));
                            mine.add(b);
                        } else if (op < 7) {
                            SpillableBuffer b = mine.get(r.nextInt(mine.size()));
                            assertArrayEquals(contents.get(b), read(b), b + " came back changed");
                        } else if (op < 9) {
                            SpillableBuffer b = mine.remove(r.nextInt(mine.size()));
                            b.close();
                            contents.remove(b);
                        } else {
                            s.spill(r.nextInt((int) MIB));
                        }
                    }
                    survivors.addAll(mine);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        SpillStatistics st = s.statistics();
        assertTrue(st.hostToDisk().count() > 0 && st.diskToDevice().count() > 0, st.toString());
        java.util.Map<SpillTier, Long> byTier = new java.util.EnumMap<>(SpillTier.class);
        long hostFootprints = 0;
        for (SpillableBuffer b : survivors) {
            SpillTier tier = b.tier();
            byTier.merge(tier, b.byteSize(), Long::sum);
            if (tier == SpillTier.HOST) {
                hostFootprints += memory.hostFootprint(b.byteSize());
            }
        }
        assertEquals(byTier.getOrDefault(SpillTier.DEVICE, 0L), st.deviceBytes(), st.toString());
        assertEquals(byTier.getOrDefault(SpillTier.HOST, 0L), st.hostBytes(), st.toString());
        assertEquals(byTier.getOrDefault(SpillTier.DISK, 0L), st.diskBytes(), st.toString());
        assertTrue(st.deviceBytes() <= 3 * MIB, "under the device limit with nothing in use: " + st);
        assertEquals(st.deviceBytes(), memory.deviceUsed.get(), "device memory held = the device tier");
        assertEquals(
                hostFootprints + memory.idleHostBytes(), memory.hostUsed.get(), "host memory held = the host tier");
        assertTrue(memory.hostUsed.get() <= hostLimit, "under memory-limit with nothing moving");
        assertEquals(st.diskBuffers(), spillFiles(), "one file per buffer on disk");
        for (SpillableBuffer b : survivors) {
            assertArrayEquals(contents.get(b), read(b));
            b.close();
        }
        st = s.statistics();
        assertEquals(0, st.deviceBytes() + st.hostBytes() + st.diskBytes(), st.toString());
        assertEquals(0, memory.deviceUsed.get());
        assertEquals(0, spillFiles());
    }

    private long spillFiles() throws java.io.IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(p -> p.toString().endsWith(".spill")).count();
        }
    }

    @Test
    void logSpillingLogsEachMoveWithBytesTiersAndTime() {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            SpillStore s = store(
                    100 * MIB,
                    SpillStore.builder()
                            .deviceMemoryLimit(MIB)
                            .memoryLimit(MIB)
                            .localDirectory(dir)
                            .logSpilling(true));
            SpillableBuffer a = s.allocate(MIB);
            s.allocate(MIB);
            s.allocate(MIB);
            read(a);
        } finally {
            System.setErr(err);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("spill: buffer #1 (1048576 bytes) device -> host (device-memory-limit) in "), log);
        assertTrue(log.contains("spill: buffer #1 (1048576 bytes) host -> disk (memory-limit) in "), log);
        assertTrue(log.contains("spill: buffer #1 (1048576 bytes) disk -> device (acquired) in "), log);
        assertTrue(log.matches("(?s).* in [0-9.]+ ms \\([0-9.]+ MB/s\\).*"), log);
    }

    @Test
    void closingFreesEveryTierAndTheDirectory() throws Exception {
        SpillStore s = store(100 * MIB, MIB, MIB);
        SpillableBuffer a = s.allocate(MIB);
        for (int i = 0; i < 4; i++) {
            s.allocate(MIB);
        }
        SpillableBuffer.Access held = s.allocate(MIB).acquire();
        a.close();
        a.close();
        assertThrows(IllegalStateException.class, a::acquire);
        assertThrows(IllegalStateException.class, a::tier);
        s.close();
        assertEquals(MIB, memory.deviceUsed.get(), "a buffer in use is not freed under its holder");
        assertEquals(0, memory.hostUsed.get());
        assertTrue(memory.closed);
        assertTrue(held.segment().scope().isAlive(), "a held buffer's segment stays valid until its access closes");
        held.close();
        assertEquals(0, memory.deviceUsed.get(), "freed when its last access closed");
        assertFalse(held.segment().scope().isAlive());
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(0, files.count(), "no spill directory left");
        }
        assertThrows(IllegalStateException.class, () -> s.allocate(1));
        s.close();
    }

    @Test
    void pinnedHostBlocksComeInSizeClassesOfAtMostAQuarterSlack() {
        assertEquals(4096, HostBlockCache.sizeClass(1));
        assertEquals(4096, HostBlockCache.sizeClass(4096));
        assertEquals(1L << 30, HostBlockCache.sizeClass(1L << 30), "1 GiB spills into exactly 1 GiB");
        Random r = new Random(3);
        for (int i = 0; i < 10_000; i++) {
            long n = 4097 + (r.nextLong() & ((1L << 40) - 1));
            long c = HostBlockCache.sizeClass(n);
            assertTrue(c >= n && c <= n + n / 4 + 1, n + " -> " + c);
        }
    }

    @Test
    void badSizesAreRefused() {
        SpillStore s = store(100 * MIB, MIB, MIB);
        assertThrows(IllegalArgumentException.class, () -> s.allocate(0));
        assertThrows(IllegalArgumentException.class, () -> SpillStore.builder().deviceMemoryLimit(0));
        assertThrows(IllegalArgumentException.class, () -> SpillStore.builder().deviceMemoryFraction(1.5));
        assertThrows(IllegalArgumentException.class, () -> SpillStore.builder().memoryLimit(-1));
    }

    @Test
    void limitsComeFromTheConfigurationInDasksForms() {
        UcxConfig c = UcxConfig.builder()
                .set("device-memory-limit", "50%")
                .set("memory-limit", "3MiB")
                .set("local-directory", dir.toString())
                .set("log-spilling", "true")
                .build();
        SpillStore s = store(10 * MIB, SpillStore.builder().config(c));
        assertEquals(5 * MIB, s.deviceMemoryLimit());
        assertEquals(3 * MIB, s.memoryLimit());
        assertEquals(dir, s.localDirectory());
        assertEquals(10 * MIB / 4, deviceLimit("0.25"));
        assertEquals(10 * MIB, deviceLimit("1"), "a plain number of at most 1 is a fraction");
        assertEquals(8 * MIB, deviceLimit("auto"), "Dask-CUDA's default: 80% of the GPU");
        assertEquals(4_000_000, deviceLimit("4000000"));
        assertEquals(5_000_000, deviceLimit("5MB"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> deviceLimit("lots"));
        assertTrue(
                e.getMessage().startsWith("device-memory-limit (from builder): 'lots' is not a memory limit"),
                e.getMessage());
        assertTrue(e.getMessage().contains("a fraction of the total (0.8)"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> deviceLimit("0"));
        assertThrows(IllegalArgumentException.class, () -> deviceLimit("150%"));
        assertThrows(IllegalArgumentException.class, () -> deviceLimit("1.5"));
        SpillStore unset = store(10 * MIB, SpillStore.builder());
        assertEquals(8 * MIB, unset.deviceMemoryLimit());
        assertEquals(
                (long) (SpillStore.availableMemory() * 0.8),
                unset.memoryLimit(),
                "one GPU: 80% of the memory the process may use");
        assertEquals(Path.of(System.getProperty("java.io.tmpdir")), unset.localDirectory());
    }

    private long deviceLimit(String text) {
        UcxConfig c = UcxConfig.builder().set("device-memory-limit", text).build();
        return store(10 * MIB, SpillStore.builder().config(c)).deviceMemoryLimit();
    }

    /** The process's RLIMIT_FSIZE lowered for a while (setrlimit(2)), restored on close. */
    private static final class FileSizeLimit implements AutoCloseable {
        private static final int RLIMIT_FSIZE = 1; // Linux, x86_64 and aarch64
        private static final Linker LINKER = Linker.nativeLinker();
        private static final MethodHandle GET = LINKER.downcallHandle(
                LINKER.defaultLookup().find("getrlimit").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS));
        private static final MethodHandle SET = LINKER.downcallHandle(
                LINKER.defaultLookup().find("setrlimit").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS));
        private final Arena arena = Arena.ofConfined();
        private final MemorySegment old = arena.allocate(16);

        static FileSizeLimit of(long bytes) throws Throwable {
            FileSizeLimit l = new FileSizeLimit();
            assertEquals(0, (int) GET.invokeExact(RLIMIT_FSIZE, l.old));
            MemorySegment lower = l.arena.allocate(16);
            lower.set(JAVA_LONG, 0, bytes);
            lower.set(JAVA_LONG, 8, l.old.get(JAVA_LONG, 8));
            assertEquals(0, (int) SET.invokeExact(RLIMIT_FSIZE, lower));
            return l;
        }

        @Override
        public void close() {
            try {
                assertEquals(0, (int) SET.invokeExact(RLIMIT_FSIZE, old));
            } catch (Throwable t) {
                throw new AssertionError(t);
            } finally {
                arena.close();
            }
        }
    }
}
