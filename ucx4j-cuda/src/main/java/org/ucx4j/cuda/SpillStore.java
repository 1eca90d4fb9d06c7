package org.ucx4j.cuda;

import static java.nio.file.StandardOpenOption.CREATE_NEW;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.ucx4j.ConfigKey;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryProvider;
import org.ucx4j.UcxConfig;

/**
 * A store of GPU buffers that spills them, least recently used first, from the device to pinned host memory
 * and from there to disk, and brings them back to the device when they are used: Dask-CUDA's device -> host
 * -> disk spilling, for the JVM.
 *
 * <p>When buffers move: a buffer comes in ({@link #allocate(long)}, {@link #put(DeviceMemory)}) or comes back
 * ({@link SpillableBuffer#acquire()}) only after the store has made room for it under the device limit
 * ({@code device-memory-limit}, default 80% of the GPU) by spilling the least recently used buffers not in
 * use; a buffer going to host memory first makes room under the host limit ({@code memory-limit}) by writing
 * the least recently used host buffers to files under {@code local-directory}. And "just in time": when the
 * {@link GpuMemoryPool} has no room for a buffer (its maximum reached, or the device full because of memory
 * outside the store), the store spills one buffer more and tries again, until the allocation succeeds or
 * every buffer not in use is spilled. Limits count the buffers' sizes; what other users of the pool or the
 * GPU hold shows only through failed allocations. Buffers in use (acquired) are never spilled; when they
 * alone pass a limit, the tier stays over it until they are released and something new comes in.
 *
 * <p>Failures lose nothing: a spill that cannot be written (a full disk, a missing or unwritable directory)
 * or read back fails the operation that needed it with an {@link UncheckedIOException} that names the
 * directory and the cause, before that operation has done anything; the buffer being moved stays whole where
 * it was. The device bytes come back exactly as they were spilled. A buffer whose memory cannot be freed now
 * (another thread is inside a call on its segment) is not spilled: it stays where it is, a warning is logged,
 * {@code failedSpills} counts it, and the next buffer is spilled instead.
 *
 * <p>Host memory: {@code memory-limit} bounds the pinned host memory the store holds, not just its buffers'
 * sizes: each host buffer counts by its block's size class (at most 25% above its size), idle blocks kept for
 * reuse count too (and are freed first when room is needed), and so does the one staging block (at most
 * 64 MiB and a quarter of the limit) through which buffers larger than the limit go from the device to disk
 * and every buffer comes back from disk. The default is 80% of the memory the process may use (its
 * container's limit, if any) divided by the GPUs it sees: pinned memory cannot be paged out.
 *
 * <p>The store is also a {@link MemoryProvider} ({@link #allocate(long, Arena)}): device memory for UCX to
 * receive into ({@code AmAllocator.of(store)}, ucx4j-comm's {@code FrameAllocator.host().with(store)}) comes
 * from the store's pool and, when the pool has no room, makes room by spilling the store's buffers.
 *
 * <p>Counters ({@link #statistics()}) count bytes, buffers and time per tier and direction; with
 * {@code log-spilling} each move is logged at INFO (else DEBUG): buffer, bytes, tiers, reason, time, speed.
 *
 * <p>Ownership: the store owns the memory of every buffer in it and the files it writes (in a directory of
 * its own under {@code local-directory}, deleted on {@link #close()}); the caller owns each
 * {@link SpillableBuffer} handle and the store. The {@link GpuMemoryPool} stays the caller's: close the store
 * before the pool, and the pool only after every {@link SpillableBuffer.Access} is closed.
 *
 * <p>Threading: safe from any thread, virtual threads included. One lock guards the store's bookkeeping (which
 * buffer is where, the bytes each tier holds, the counters); it is held only for that bookkeeping and never
 * while bytes move: the copies between device and host memory and the file I/O of a move run with the lock
 * released, so moves of different buffers proceed at once, and a slow disk write holds up neither the access
 * to other buffers ({@code acquire}, closing a buffer or an access, {@code tier()}, {@code statistics()}) nor
 * other moves. A buffer being moved is marked so: it is no spill candidate, and acquiring or closing it waits
 * for its move to end (its tier, asked meanwhile, is where it is moving from). Room is reserved before bytes
 * move, so that the limits hold as they would with one move at a time: a move to host memory reserves its
 * block under the host limit before copying, bytes coming onto the device are counted against the device
 * limit before they arrive, and a thread that needs room which other threads' moves in progress will free
 * waits for those moves rather than spilling more. This includes {@link #allocate(long, Arena)} on a UCX
 * progress thread, which may wait for a move (a copy or a disk write) that makes the room it needs. Threads
 * working on buffers they have acquired are not held up. The lock is never held while user code runs: log
 * lines (SLF4J appenders) are written after it is released.
 */
public final class SpillStore implements MemoryProvider, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SpillStore.class);
    private static final long IO_CHUNK = 64L << 20;
    private static final String SPILL_SUFFIX = ".spill";

    private final SpillMemory memory;
    private final GpuMemoryPool pool;
    private final long deviceLimit;
    private final long hostLimit;
    private final Path localDirectory;
    private final boolean logSpilling;

    // Guards every field below and the place of every buffer (SpillableBuffer's fields); never held while
    // bytes move (see unlocked) nor while user code runs. A single hold: methods that release it for I/O are
    // only called with the lock held once.
    private final ReentrantLock lock = new ReentrantLock();
    // Signalled whenever a move ends (and when the store closes): waits for room or for a buffer's move.
    private final Condition moveEnded = lock.newCondition();
    // Least recently used first.
    private final LinkedHashSet<SpillableBuffer> onDevice = new LinkedHashSet<>();
    private final LinkedHashSet<SpillableBuffer> onHost = new LinkedHashSet<>();
    private final LinkedHashSet<SpillableBuffer> onDisk = new LinkedHashSet<>();
    private final Map<SpillTier, Long> bytes = new EnumMap<>(SpillTier.class);
    private SpillStatistics.Moves deviceToHost = SpillStatistics.Moves.NONE;
    private SpillStatistics.Moves hostToDisk = SpillStatistics.Moves.NONE;
    private SpillStatistics.Moves hostToDevice = SpillStatistics.Moves.NONE;
    private SpillStatistics.Moves diskToDevice = SpillStatistics.Moves.NONE;
    private long justInTime;
    private long failed;
    private long nextId;
    private Path spillDirectory;
    // Host memory the host tier holds or has reserved: its buffers' blocks by size class, blocks being filled
    // by moves in progress, staging blocks in use.
    private long hostHeld;
    // Bytes on their way onto the device (allocate, put, buffers coming back), counted against its limit
    // before they are in the device tier's bytes.
    private long deviceIncoming;
    // Bytes of device buffers being spilled: still in the device tier's bytes until their move ends.
    private long deviceLeaving;
    // Host footprints of buffers being written to disk: still in hostHeld until their move ends.
    private long hostLeavingToDisk;
    // Host footprints of buffers on their way back to the device: counted as gone when room is made for the
    // host tier, as the buffer coming back must not be written to disk to make room for its own return.
    private long hostReturning;
    // Moves in progress (close waits for them).
    private int moves;
    // Log lines of moves made under the lock, written by the next thread to leave it (never under the lock).
    private final List<Runnable> pendingLog = new ArrayList<>();
    private boolean closed;

    private SpillStore(
            SpillMemory memory,
            GpuMemoryPool pool,
            long deviceLimit,
            long hostLimit,
            Path localDirectory,
            boolean logSpilling) {
        this.memory = memory;
        this.pool = pool;
        this.deviceLimit = deviceLimit;
        this.hostLimit = hostLimit;
        this.localDirectory = localDirectory;
        this.logSpilling = logSpilling;
        for (SpillTier t : SpillTier.values()) {
            bytes.put(t, 0L);
        }
    }

    /**
     * A store over a pool, with its limits, directory and logging from a configuration
     * ({@code device-memory-limit}, {@code memory-limit}, {@code local-directory}, {@code log-spilling}).
     *
     * @param pool the GPU memory pool buffers are allocated from and come back to
     * @param config the configuration
     * @return the store, owned by the caller
     * @throws IllegalArgumentException when a key's value is not valid (naming the key and where it came from)
     */
    public static SpillStore create(GpuMemoryPool pool, UcxConfig config) {
        return builder(pool).config(config).build();
    }

    /**
     * A builder for a store over a pool; unset limits are Dask-CUDA's defaults.
     *
     * @param pool the GPU memory pool buffers are allocated from and come back to
     * @return a new builder
     */
    public static Builder builder(GpuMemoryPool pool) {
        return new Builder(Objects.requireNonNull(pool, "pool"));
    }

    /** A builder without a pool, for {@link Builder#build(SpillMemory)}: tests without a GPU. */
    static Builder builder() {
        return new Builder(null);
    }

    /**
     * Allocates a buffer of device memory in the store, making room first (see the class comment).
     *
     * @param byteSize the size, at least 1; the contents are undefined until written
     * @return the buffer, on the device, not acquired; owned by the caller
     * @throws IllegalArgumentException when {@code byteSize} is below 1
     * @throws IllegalStateException when the store is closed
     * @throws CudaException when the device has no room even after spilling every buffer not in use, or at
     *     once, spilling nothing, when {@code byteSize} is larger than the pool's maximum size
     * @throws UncheckedIOException when a spill needed to make room failed; nothing was allocated
     */
    public SpillableBuffer allocate(long byteSize) {
        if (byteSize < 1) {
            throw new IllegalArgumentException("a spillable buffer of " + byteSize + " bytes (need at least 1)");
        }
        lock.lock();
        try {
            ensureOpen();
            requireCanFit(byteSize, "allocate");
            reserveDevice(byteSize);
            try {
                return add(byteSize, allocateDevice(byteSize, "allocate"));
            } finally {
                deviceIncoming -= byteSize;
            }
        } finally {
            unlockAndFlushLog();
        }
    }

    /**
     * Hands device memory to the store, which then owns it: it is freed (or returned to its pool) when the
     * buffer is spilled or closed, and a buffer brought back gets memory from the store's pool.
     *
     * @param deviceMemory open memory on the pool's GPU, of at least 1 byte, that nothing else uses any more
     * @return the buffer, on the device, not acquired; owned by the caller
     * @throws IllegalArgumentException when the memory is empty, closed or of another GPU
     * @throws IllegalStateException when the store is closed
     * @throws UncheckedIOException when a spill needed to make room failed: the caller still owns
     *     {@code deviceMemory}
     */
    public SpillableBuffer put(DeviceMemory deviceMemory) {
        if (!deviceMemory.isOpen() || deviceMemory.byteSize() < 1) {
            throw new IllegalArgumentException("cannot store " + deviceMemory + ": it is empty or closed");
        }
        if (pool != null && deviceMemory.device() != pool.device()) {
            throw new IllegalArgumentException("cannot store " + deviceMemory + " in a store that spills for cuda:"
                    + pool.device().ordinal() + " (it would come back on that GPU)");
        }
        return put(CudaSpillMemory.wrap(deviceMemory), deviceMemory.byteSize());
    }

    /** Takes a device block into the store, room made first; the seam that tests without a GPU use. */
    SpillableBuffer put(SpillMemory.Block device, long byteSize) {
        lock.lock();
        try {
            ensureOpen();
            reserveDevice(byteSize);
            try {
                return add(byteSize, device);
            } finally {
                deviceIncoming -= byteSize;
            }
        } finally {
            unlockAndFlushLog();
        }
    }

    private SpillableBuffer add(long byteSize, SpillMemory.Block device) {
        SpillableBuffer b = new SpillableBuffer(this, ++nextId, byteSize, device);
        onDevice.add(b);
        addBytes(SpillTier.DEVICE, byteSize);
        return b;
    }

    /**
     * Spills least recently used buffers not in use from the device until at least {@code byteCount} bytes
     * left it (or nothing is left to spill): room made on demand, for code that needs device memory outside
     * the store. Buffers that other threads are moving at the time are not counted.
     *
     * @param byteCount bytes wanted off the device
     * @return the bytes spilled (may be more than asked, or less when the rest is in use)
     * @throws IllegalStateException when the store is closed
     * @throws UncheckedIOException when a spill failed; what was spilled before stays spilled
     */
    public long spill(long byteCount) {
        lock.lock();
        try {
            ensureOpen();
            long spilled = 0;
            Set<SpillableBuffer> skipped = new HashSet<>();
            while (spilled < byteCount) {
                SpillableBuffer victim = leastRecentlyUsedIdle(skipped);
                if (victim == null) {
                    break;
                }
                if (spillToHost(victim, "asked")) {
                    spilled += victim.byteSize();
                } else {
                    skipped.add(victim);
                }
            }
            return spilled;
        } finally {
            unlockAndFlushLog();
        }
    }

    SpillableBuffer.Access acquire(SpillableBuffer b) {
        lock.lock();
        try {
            awaitNotMoving(b);
            ensureOpen();
            if (b.closed) {
                throw new IllegalStateException(b + " already closed");
            }
            if (b.tier != SpillTier.DEVICE) {
                unspill(b);
            } else {
                onDevice.remove(b); // most recently used now
                onDevice.add(b);
            }
            b.accesses++;
            return new SpillableBuffer.Access(b, b.device.segment());
        } finally {
            unlockAndFlushLog();
        }
    }

    void release(SpillableBuffer b) {
        lock.lock();
        try {
            b.accesses--;
            if (closed && b.accesses == 0 && !b.closed) {
                try {
                    discard(b); // the store closed while this access was open: freed now
                } catch (RuntimeException e) {
                    warn("cannot free " + b + " after its last access closed (the store is closed): " + e
                            + "; close the store again to free it");
                }
            }
        } finally {
            unlockAndFlushLog();
        }
    }

    SpillTier tierOf(SpillableBuffer b) {
        lock.lock();
        try {
            if (b.closed) {
                throw new IllegalStateException(b + " already closed");
            }
            return b.tier;
        } finally {
            lock.unlock();
        }
    }

    void free(SpillableBuffer b) {
        lock.lock();
        try {
            awaitNotMoving(b);
            if (b.closed) {
                return;
            }
            if (b.accesses > 0) {
                throw new IllegalStateException(
                        b + " is in use (" + b.accesses + " access(es) open): close them first");
            }
            discard(b);
        } finally {
            lock.unlock();
        }
    }

    /** Lock held: waits until no thread moves {@code b} (it cannot be used or freed half-moved). */
    private void awaitNotMoving(SpillableBuffer b) {
        while (b.moving) {
            moveEnded.awaitUninterruptibly();
        }
    }

    /**
     * Lock held, once: waits for a move in progress in another thread to end, then checks that the store is
     * still open (a thread waiting for room gives up when it closes).
     */
    private void awaitAnotherMove() {
        moveEnded.awaitUninterruptibly();
        ensureOpen();
    }

    /** Work done with the lock released: the copies and file I/O of a move. */
    @FunctionalInterface
    private interface Unlocked {
        void run() throws IOException;
    }

    /**
     * Lock held once: runs {@code work} with the lock released and takes it again, also when the work throws.
     * The caller has marked what the work touches (the buffer moving, the room reserved), so that no other
     * thread changes it meanwhile.
     */
    private void unlocked(Unlocked work) throws IOException {
        if (lock.getHoldCount() != 1) {
            throw new IllegalStateException("the spill store's lock is held " + lock.getHoldCount() + " times");
        }
        lock.unlock();
        try {
            work.run();
        } finally {
            lock.lock();
        }
    }

    /** {@link #unlocked} for work that does no file I/O. */
    private void unlockedCopy(Runnable copy) {
        try {
            unlocked(copy::run);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a copy between memories does no I/O
        }
    }

    /** Lock held: marks a buffer as moving (no spill candidate; acquire and close wait for it). */
    private void startMove(SpillableBuffer b) {
        b.moving = true;
        moves++;
    }

    /** Lock held: the move of {@code b} ended, however: wakes the threads waiting for it or for room. */
    private void endMove(SpillableBuffer b) {
        b.moving = false;
        moves--;
        moveEnded.signalAll();
    }

    /**
     * Lock held: frees a buffer not in use and not moving, wherever it is. When the memory cannot be freed
     * (another thread is inside a call on the segment right now) nothing changes and the
     * {@link IllegalStateException} goes on.
     */
    private void discard(SpillableBuffer b) {
        switch (b.tier) {
            case DEVICE -> b.device.close();
            case HOST -> b.host.close();
            case DISK -> deleteFile(b.file);
        }
        (b.tier == SpillTier.DEVICE ? onDevice : b.tier == SpillTier.HOST ? onHost : onDisk).remove(b);
        addBytes(b.tier, -b.byteSize());
        if (b.tier == SpillTier.HOST) {
            hostHeld -= memory.hostFootprint(b.byteSize());
        }
        b.closed = true;
        b.device = null;
        b.host = null;
        b.file = null;
    }

    /** Lock held: refuses at once, spilling nothing, a device allocation that could never succeed. */
    private void requireCanFit(long byteSize, String why) {
        long max = memory.maxDeviceAllocation();
        if (byteSize > max) {
            throw new CudaException("no room for " + byteSize + " bytes (" + why + ") on " + memory.deviceName()
                    + ": larger than the memory pool's maximum size (memory-pool.maximum-size) of " + max
                    + " bytes; nothing was spilled");
        }
    }

    /**
     * Lock held once: spills until {@code incoming} more bytes fit under the device limit (or nothing is idle),
     * then counts them as coming in ({@link #deviceIncoming}; the caller takes them off once they are in the
     * device tier or did not come). Waits instead of spilling when other threads' spills in progress free
     * enough.
     */
    private void reserveDevice(long incoming) {
        Set<SpillableBuffer> skipped = new HashSet<>();
        while (bytes.get(SpillTier.DEVICE) + deviceIncoming + incoming > deviceLimit) {
            if (bytes.get(SpillTier.DEVICE) - deviceLeaving + deviceIncoming + incoming <= deviceLimit) {
                awaitAnotherMove(); // spills in progress make the room
                continue;
            }
            SpillableBuffer victim = leastRecentlyUsedIdle(skipped);
            if (victim == null) {
                if (deviceLeaving > 0) {
                    awaitAnotherMove();
                    skipped.clear();
                    continue;
                }
                break; // the rest is in use: the tier stays over its limit
            }
            if (!spillToHost(victim, "device-memory-limit")) {
                skipped.add(victim);
            }
        }
        deviceIncoming += incoming;
    }

    /**
     * Device memory that is not a buffer of the store, from the store's pool, spilling buffers just in time
     * when the pool has no room: so that memory UCX receives into (active messages with
     * {@code AmAllocator.of(store)}, comm frames with {@code FrameAllocator.host().with(store)}) makes room
     * by spilling rather than failing. The memory itself is never spilled and does not count toward the
     * device limit; it goes back to the pool when {@code scope} closes.
     *
     * <p>A spill to make room runs on the calling thread, for active messages the worker's progress thread:
     * it takes the time of its copy and, when the host tier is full, of writing host buffers to disk; when
     * other threads' spills in progress are what will free the room, it waits for them. Keep the pool large
     * enough that this is the exception.
     *
     * @param byteSize the size
     * @param scope the arena that owns the memory
     * @return device memory of exactly {@code byteSize} bytes
     * @throws CudaException when the pool has no room even after spilling every buffer not in use, or at
     *     once, spilling nothing, when {@code byteSize} is larger than the pool's maximum size
     * @throws UncheckedIOException when a spill needed to make room failed
     * @throws IllegalStateException when the store is closed
     */
    @Override
    public MemorySegment allocate(long byteSize, Arena scope) {
        if (byteSize < 0) {
            throw new IllegalArgumentException("negative size " + byteSize);
        }
        lock.lock();
        try {
            ensureOpen();
            if (byteSize == 0) {
                return memory.allocateDevice(0, scope);
            }
            String why = "allocate(" + byteSize + ", arena)";
            requireCanFit(byteSize, why);
            return justInTime(byteSize, why, () -> memory.allocateDevice(byteSize, scope));
        } finally {
            unlockAndFlushLog();
        }
    }

    /**
     * The kind of the memory {@link #allocate(long, Arena)} gives.
     *
     * @return {@link MemoryKind#CUDA}
     */
    @Override
    public MemoryKind kind() {
        return MemoryKind.CUDA;
    }

    /**
     * Copies between device and host memory (see {@link Cuda#copy(MemorySegment, MemorySegment)}).
     *
     * @param dst where to copy to
     * @param src what to copy
     */
    @Override
    public void copy(MemorySegment dst, MemorySegment src) {
        memory.copy(dst, src);
    }

    /** Lock held once: device memory for a buffer, spilling one more buffer each time the pool has no room. */
    private SpillMemory.Block allocateDevice(long byteSize, String why) {
        return justInTime(byteSize, why, () -> memory.allocateDevice(byteSize));
    }

    /**
     * Lock held once: tries an allocation, spilling one more buffer each time it finds no room, or waiting for
     * other threads' spills in progress when nothing else is left to spill.
     */
    private <T> T justInTime(long byteSize, String why, Supplier<T> attempt) {
        T block = attempt.get();
        Set<SpillableBuffer> skipped = new HashSet<>();
        while (block == null) {
            SpillableBuffer victim = leastRecentlyUsedIdle(skipped);
            if (victim == null) {
                if (deviceLeaving > 0) {
                    awaitAnotherMove();
                    skipped.clear();
                    block = attempt.get();
                    continue;
                }
                throw new CudaException("no room for " + byteSize + " bytes (" + why + ") on " + memory.deviceName()
                        + " even after spilling every buffer not in use: the spill store holds "
                        + bytes.get(SpillTier.DEVICE) + " bytes there in " + onDevice.size()
                        + " buffers in use or not freeable now; the rest of the device's memory is held outside"
                        + " the store");
            }
            if (!spillToHost(victim, "just in time")) {
                skipped.add(victim);
                continue;
            }
            justInTime++;
            block = attempt.get();
        }
        return block;
    }

    /** Lock held: the least recently used device buffer that is neither in use, moving nor skipped. */
    private SpillableBuffer leastRecentlyUsedIdle(Set<SpillableBuffer> skipped) {
        for (SpillableBuffer b : onDevice) {
            if (b.accesses == 0 && !b.moving && !skipped.contains(b)) {
                return b;
            }
        }
        return null;
    }

    /**
     * Lock held once, a buffer on the device neither in use nor moving: device -> host (room reserved under the
     * host limit first; a buffer whose host block would not fit under the limit goes straight to disk, in
     * chunks). The copy runs with the lock released. Answers false, having changed nothing and logged a
     * warning, when the buffer's device memory cannot be freed now (another thread is inside a call on it): the
     * caller tries the next victim.
     */
    private boolean spillToHost(SpillableBuffer b, String why) {
        startMove(b);
        deviceLeaving += b.byteSize();
        try {
            long footprint = memory.hostFootprint(b.byteSize());
            if (footprint > hostLimit) {
                return spillDeviceToDisk(b, "larger than memory-limit");
            }
            long start = System.nanoTime();
            reserveHost(footprint);
            SpillMemory.Block[] host = new SpillMemory.Block[1];
            MemorySegment device = b.device.segment();
            try {
                unlockedCopy(() -> {
                    host[0] = memory.allocateHost(b.byteSize());
                    memory.copy(host[0].segment(), device);
                });
            } catch (RuntimeException e) {
                failed++;
                hostHeld -= footprint;
                if (host[0] != null) {
                    host[0].close();
                }
                throw e;
            }
            if (!freeLeft(b, b.device, "device")) {
                hostHeld -= footprint;
                host[0].close();
                return false;
            }
            b.device = null;
            b.host = host[0];
            move(b, onDevice, onHost, SpillTier.HOST);
            long nanos = System.nanoTime() - start;
            deviceToHost = deviceToHost.plus(b.byteSize(), nanos);
            log(b, SpillTier.DEVICE, SpillTier.HOST, why, nanos);
            return true;
        } finally {
            deviceLeaving -= b.byteSize();
            endMove(b);
        }
    }

    /**
     * Lock held: frees the block a buffer has just left (its bytes are whole in the new place). Answers false
     * when the block is still alive because another thread is inside a call on it: nothing was freed and the
     * buffer must stay where it was (that thread may still be writing). A free that fails after the memory's
     * lifetime ended keeps the move: the memory is leaked, with a warning.
     */
    private boolean freeLeft(SpillableBuffer b, SpillMemory.Block old, String tier) {
        MemorySegment segment = old.segment();
        try {
            old.close();
            return true;
        } catch (RuntimeException e) {
            if (segment.scope().isAlive()) {
                failed++;
                warn("cannot spill " + b + ": its " + tier + " memory is in use by another thread (" + e
                        + "); it stays where it is and the next buffer is spilled instead");
                return false;
            }
            warn("the " + tier + " memory of " + b + " could not be given back after the buffer left it: " + e
                    + "; it is leaked");
            return true;
        }
    }

    /**
     * Lock held once: writes host buffers to disk, after freeing idle host blocks, until {@code incoming} more
     * bytes fit under the host limit, then reserves them ({@link #hostHeld}; the caller gives them back if its
     * block does not come). Counts what the host tier really holds: blocks by their size class, blocks reserved
     * by moves in progress, and the idle ones. Buffers on their way back to the device are neither written nor
     * counted: they leave. Waits instead of writing when other threads' disk writes in progress free enough.
     */
    private void reserveHost(long incoming) {
        Set<SpillableBuffer> skipped = new HashSet<>();
        long over;
        while ((over = hostHeld - hostReturning + memory.idleHostBytes() + incoming - hostLimit) > 0) {
            if (memory.trimIdleHost(over) > 0) {
                continue;
            }
            if (over <= hostLeavingToDisk) {
                awaitAnotherMove(); // disk writes in progress make the room
                continue;
            }
            SpillableBuffer victim = null;
            for (SpillableBuffer b : onHost) {
                if (!b.moving && !skipped.contains(b)) {
                    victim = b;
                    break;
                }
            }
            if (victim == null) {
                if (hostLeavingToDisk > 0) {
                    awaitAnotherMove();
                    skipped.clear();
                    continue;
                }
                break;
            }
            if (!spillToDisk(victim, "memory-limit")) {
                skipped.add(victim);
            }
        }
        hostHeld += incoming;
    }

    /**
     * Lock held once, a buffer in host memory not moving: host -> a file of its own, written with the lock
     * released; on failure the buffer stays in host memory, whole.
     */
    private boolean spillToDisk(SpillableBuffer b, String why) {
        startMove(b);
        long footprint = memory.hostFootprint(b.byteSize());
        hostLeavingToDisk += footprint;
        try {
            long start = System.nanoTime();
            MemorySegment host = b.host.segment();
            Path file = writeFile(b, "in host memory", (ch, offset, n) -> write(ch, host.asSlice(offset, n), offset));
            if (!freeLeft(b, b.host, "host")) {
                deleteFile(file);
                return false;
            }
            b.host = null;
            b.file = file;
            hostHeld -= footprint;
            move(b, onHost, onDisk, SpillTier.DISK);
            long nanos = System.nanoTime() - start;
            hostToDisk = hostToDisk.plus(b.byteSize(), nanos);
            log(b, SpillTier.HOST, SpillTier.DISK, why, nanos);
            return true;
        } finally {
            hostLeavingToDisk -= footprint;
            endMove(b);
        }
    }

    /**
     * Lock held once, the buffer marked moving by the caller: device -> a file of its own through one bounded
     * pinned staging block, for a buffer larger than the host limit; on failure the buffer stays on the device,
     * whole. Counted as a move to host and one to disk.
     */
    private boolean spillDeviceToDisk(SpillableBuffer b, String why) {
        long start = System.nanoTime();
        Path file;
        MemorySegment device = b.device.segment();
        try (Staging staging = staging(b.byteSize())) {
            file = writeFile(b, "on the device", (ch, offset, n) -> {
                MemorySegment chunk = staging.segment().asSlice(0, n);
                memory.copy(chunk, device.asSlice(offset, n));
                write(ch, chunk, offset);
            });
        }
        if (!freeLeft(b, b.device, "device")) {
            deleteFile(file);
            return false;
        }
        b.device = null;
        b.file = file;
        move(b, onDevice, onDisk, SpillTier.DISK);
        long nanos = System.nanoTime() - start;
        deviceToHost = deviceToHost.plus(b.byteSize(), nanos);
        hostToDisk = hostToDisk.plus(b.byteSize(), nanos);
        log(b, SpillTier.DEVICE, SpillTier.DISK, why, nanos);
        return true;
    }

    /** Writes one chunk of a buffer at an offset of its file. */
    @FunctionalInterface
    private interface ChunkWriter {
        void write(FileChannel ch, long offset, long n) throws IOException;
    }

    /**
     * Lock held once: a new spill file written chunk by chunk with the lock released; on failure deleted,
     * counted and reported ({@code stays}: where the buffer stays then).
     */
    private Path writeFile(SpillableBuffer b, String stays, ChunkWriter writer) {
        Path file = null;
        try {
            Path target = spillDirectory().resolve(b.id() + SPILL_SUFFIX);
            file = target;
            long size = b.byteSize();
            long chunk = chunkSize(size);
            unlocked(() -> {
                try (FileChannel ch = FileChannel.open(target, CREATE_NEW, WRITE)) {
                    for (long offset = 0; offset < size; offset += chunk) {
                        writer.write(ch, offset, Math.min(chunk, size - offset));
                    }
                }
            });
            return file;
        } catch (IOException | UncheckedIOException e) {
            failed++;
            if (file != null) {
                deleteFile(file);
            }
            IOException io = e instanceof UncheckedIOException u ? u.getCause() : (IOException) e;
            throw new UncheckedIOException(
                    "cannot spill " + b + " to disk under local-directory " + localDirectory + ": " + io
                            + "; the buffer stays " + stays,
                    io);
        } catch (RuntimeException e) {
            failed++;
            if (file != null) {
                deleteFile(file);
            }
            throw e;
        }
    }

    /** The chunk in which a buffer moves to or from disk: at most a quarter of the host limit, 64 MiB. */
    private long chunkSize(long byteSize) {
        return Math.max(1, Math.min(byteSize, Math.min(IO_CHUNK, Math.max(4096, hostLimit / 4))));
    }

    /**
     * A pinned block for streaming between device and disk, counted against the host limit while held. Made
     * and closed with the lock held; its segment is used with the lock released.
     */
    private final class Staging implements AutoCloseable {
        private final SpillMemory.Block block;
        private final long footprint;

        Staging(long size) {
            footprint = memory.hostFootprint(size);
            reserveHost(footprint);
            try {
                block = memory.allocateHost(size);
            } catch (RuntimeException e) {
                hostHeld -= footprint;
                throw e;
            }
        }

        MemorySegment segment() {
            return block.segment();
        }

        @Override
        public void close() {
            hostHeld -= footprint;
            block.close();
        }
    }

    private Staging staging(long byteSize) {
        return new Staging(chunkSize(byteSize));
    }

    /**
     * Lock held once, a buffer in host memory or on disk, not moving: host or disk -> device, room made first;
     * the copy or the file's reading runs with the lock released. On failure nothing moved.
     */
    private void unspill(SpillableBuffer b) {
        startMove(b);
        SpillTier from = b.tier;
        long returning = from == SpillTier.HOST ? memory.hostFootprint(b.byteSize()) : 0;
        hostReturning += returning;
        try {
            long start = System.nanoTime();
            requireCanFit(b.byteSize(), "bring back " + b);
            reserveDevice(b.byteSize());
            try {
                SpillMemory.Block device = allocateDevice(b.byteSize(), "bring back " + b);
                try {
                    if (from == SpillTier.HOST) {
                        MemorySegment host = b.host.segment();
                        unlockedCopy(() -> memory.copy(device.segment(), host));
                    } else {
                        readFile(b, device.segment());
                    }
                } catch (RuntimeException e) {
                    if (!(e instanceof UncheckedIOException)) {
                        failed++; // a read that failed is counted where it failed
                    }
                    device.close();
                    throw e;
                }
                if (from == SpillTier.HOST) {
                    try {
                        b.host.close();
                    } catch (RuntimeException e) {
                        warn("the host memory of " + b + " could not be freed after it came back to the device: " + e
                                + "; it is leaked");
                    }
                    b.host = null;
                    hostHeld -= returning;
                    move(b, onHost, onDevice, SpillTier.DEVICE);
                } else {
                    deleteFile(b.file);
                    b.file = null;
                    move(b, onDisk, onDevice, SpillTier.DEVICE);
                }
                b.device = device;
            } finally {
                deviceIncoming -= b.byteSize();
            }
            long nanos = System.nanoTime() - start;
            if (from == SpillTier.HOST) {
                hostToDevice = hostToDevice.plus(b.byteSize(), nanos);
            } else {
                diskToDevice = diskToDevice.plus(b.byteSize(), nanos);
            }
            log(b, from, SpillTier.DEVICE, "acquired", nanos);
        } finally {
            hostReturning -= returning;
            endMove(b);
        }
    }

    /**
     * Lock held once, the buffer marked moving: its spill file back into device memory, chunk by chunk through
     * a pinned staging block, read with the lock released.
     */
    private void readFile(SpillableBuffer b, MemorySegment device) {
        Path file = b.file;
        long size = b.byteSize();
        long chunk = chunkSize(size);
        try (Staging staging = staging(size)) {
            MemorySegment stage = staging.segment();
            unlocked(() -> {
                try (FileChannel ch = FileChannel.open(file, READ)) {
                    for (long offset = 0; offset < size; offset += chunk) {
                        long n = Math.min(chunk, size - offset);
                        read(ch, stage.asSlice(0, n), offset);
                        memory.copy(device.asSlice(offset, n), stage.asSlice(0, n));
                    }
                }
            });
        } catch (IOException e) {
            failed++;
            throw new UncheckedIOException(
                    "cannot read " + b + " back from " + file + ": " + e + "; it stays on disk", e);
        }
    }

    private void move(
            SpillableBuffer b, LinkedHashSet<SpillableBuffer> from, LinkedHashSet<SpillableBuffer> to, SpillTier tier) {
        from.remove(b);
        to.add(b);
        addBytes(b.tier, -b.byteSize());
        addBytes(tier, b.byteSize());
        b.tier = tier;
    }

    private void addBytes(SpillTier tier, long delta) {
        bytes.merge(tier, delta, Long::sum);
    }

    /** Writes a chunk (at most 2 GiB) at an offset of a file. */
    private static void write(FileChannel ch, MemorySegment chunk, long offset) throws IOException {
        ByteBuffer buf = chunk.asByteBuffer();
        while (buf.hasRemaining()) {
            ch.write(buf, offset + buf.position());
        }
    }

    /** Reads a chunk (at most 2 GiB) from an offset of a file. */
    private static void read(FileChannel ch, MemorySegment chunk, long offset) throws IOException {
        ByteBuffer buf = chunk.asByteBuffer();
        while (buf.hasRemaining()) {
            if (ch.read(buf, offset + buf.position()) < 0) {
                throw new IOException("the spill file ends after " + (offset + buf.position()) + " bytes");
            }
        }
    }

    /** Lock held: the store's own directory, made on the first spill to disk. */
    private Path spillDirectory() {
        if (spillDirectory == null) {
            if (!Files.isDirectory(localDirectory)) {
                throw new UncheckedIOException(new java.nio.file.NoSuchFileException(
                        localDirectory.toString(), null, "local-directory does not exist or is not a directory"));
            }
            try {
                spillDirectory = Files.createTempDirectory(localDirectory, "ucx4j-spill-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return spillDirectory;
    }

    private static void deleteFile(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.warn("could not delete spill file {}: {}", file, e.toString());
        }
    }

    /** Lock held: logs a move, once the lock is released. */
    private void log(SpillableBuffer b, SpillTier from, SpillTier to, String why, long nanos) {
        Level level = logSpilling ? Level.INFO : Level.DEBUG;
        if (LOG.isEnabledForLevel(level)) {
            String ms = String.format(Locale.ROOT, "%.3f", nanos / 1e6);
            String speed = nanos > 0
                    ? String.format(Locale.ROOT, "%.1f", b.byteSize() / (double) (1 << 20) / (nanos / 1e9))
                    : "n/a";
            long id = b.id();
            long size = b.byteSize();
            pendingLog.add(() -> LOG.atLevel(level)
                    .log(
                            "spill: buffer #{} ({} bytes) {} -> {} ({}) in {} ms ({} MB/s)",
                            id,
                            size,
                            from.label(),
                            to.label(),
                            why,
                            ms,
                            speed));
        }
    }

    /** Lock held: logs a warning, once the lock is released. */
    private void warn(String message) {
        pendingLog.add(() -> LOG.warn("spill: {}", message));
    }

    /** Lock held: releases it, then writes the log lines of moves made under it. */
    private void unlockAndFlushLog() {
        List<Runnable> lines = null;
        if (!pendingLog.isEmpty()) {
            lines = new ArrayList<>(pendingLog);
            pendingLog.clear();
        }
        lock.unlock();
        if (lines != null) {
            lines.forEach(Runnable::run);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("spill store already closed");
        }
    }

    /**
     * The counters now. Moves in progress count where they started until they end; it does not wait for them.
     *
     * @return a snapshot
     */
    public SpillStatistics statistics() {
        lock.lock();
        try {
            return new SpillStatistics(
                    bytes.get(SpillTier.DEVICE),
                    bytes.get(SpillTier.HOST),
                    bytes.get(SpillTier.DISK),
                    onDevice.size(),
                    onHost.size(),
                    onDisk.size(),
                    deviceToHost,
                    hostToDisk,
                    hostToDevice,
                    diskToDevice,
                    justInTime,
                    failed);
        } finally {
            lock.unlock();
        }
    }

    /**
     * The device tier's limit.
     *
     * @return bytes
     */
    public long deviceMemoryLimit() {
        return deviceLimit;
    }

    /**
     * The host tier's limit.
     *
     * @return bytes
     */
    public long memoryLimit() {
        return hostLimit;
    }

    /**
     * The directory under which the disk tier goes (the store writes into a directory of its own there).
     *
     * @return the {@code local-directory}
     */
    public Path localDirectory() {
        return localDirectory;
    }

    /**
     * Closes the store: frees every buffer not in use, wherever it is, deletes the spill files and the store's
     * directory, and frees the pinned host memory kept for reuse. A buffer in use (an {@link
     * SpillableBuffer.Access} open) is not freed under its holder, whose kernels, copies or UCX requests may
     * still use the memory: its segment stays valid and the buffer is freed when its last access closes (so
     * the {@link GpuMemoryPool} must stay open until then). After this call the store takes no new buffers
     * and no new accesses.
     *
     * <p>Idempotent; a second call tries again what could not be freed the first time (memory another thread
     * was inside a call on).
     *
     * @throws IllegalStateException naming the buffer, when a buffer's memory cannot be freed now because
     *     another thread is inside a call on it (others' failures suppressed): the store is closed, that
     *     buffer stays allocated until {@code close()} is called again
     * @throws UncheckedIOException when the store's directory cannot be deleted
     */
    @Override
    public void close() {
        List<RuntimeException> failures = new ArrayList<>();
        lock.lock();
        try {
            closed = true;
            moveEnded.signalAll(); // threads waiting for room give up
            while (moves > 0) {
                moveEnded.awaitUninterruptibly(); // moves end whole (or not at all) before anything is freed
            }
            {
                List<SpillableBuffer> idle = new ArrayList<>();
                for (LinkedHashSet<SpillableBuffer> tier : List.of(onDevice, onHost, onDisk)) {
                    tier.stream().filter(b -> b.accesses == 0).forEach(idle::add);
                }
                for (SpillableBuffer b : idle) {
                    try {
                        discard(b);
                    } catch (RuntimeException e) {
                        failures.add(new IllegalStateException(
                                "cannot free " + b + " while closing the spill store: " + e.getMessage(), e));
                    }
                }
                if (spillDirectory != null && onDisk.isEmpty()) {
                    try {
                        Files.deleteIfExists(spillDirectory);
                        spillDirectory = null;
                    } catch (IOException e) {
                        failures.add(new UncheckedIOException("cannot delete " + spillDirectory, e));
                    }
                }
            }
            try {
                memory.close();
            } catch (RuntimeException e) {
                failures.add(e);
            }
        } finally {
            unlockAndFlushLog();
        }
        if (!failures.isEmpty()) {
            RuntimeException first = failures.getFirst();
            failures.stream().skip(1).forEach(first::addSuppressed);
            throw first;
        }
    }

    @Override
    public String toString() {
        return "SpillStore[" + memory.deviceName() + ", device-memory-limit " + deviceLimit + ", memory-limit "
                + hostLimit + ", local-directory " + localDirectory + "]";
    }

    /**
     * Options of a {@link SpillStore}, validated by {@link #build()}.
     *
     * <p>Threading: not thread-safe; use from one thread, then build.
     */
    public static final class Builder {
        private static final MemoryLimit DEFAULT_DEVICE_LIMIT = MemoryLimit.ofFraction(0.8);
        /**
         * The share of the process's memory ({@link #availableMemory()}) the host tier may hold by default,
         * before it is divided among the GPUs: the rest is for the JVM's heap, UCX, the driver and the OS,
         * since the host tier is pinned memory the kernel can neither page out nor reclaim.
         */
        static final double DEFAULT_HOST_FRACTION = 0.8;
        // Idle pinned host memory kept for the next spill, at most: pinning is slow, holding it is not free.
        private static final long MAX_RETAINED_PINNED = 2L << 30;

        private final GpuMemoryPool pool;
        private MemoryLimit deviceLimit;
        private MemoryLimit hostLimit;
        private Path localDirectory;
        private boolean logSpilling;

        private Builder(GpuMemoryPool pool) {
            this.pool = pool;
        }

        /**
         * Reads {@code device-memory-limit}, {@code memory-limit}, {@code local-directory} and
         * {@code log-spilling} from a configuration (keys it leaves unset keep what this builder has, and
         * {@code log-spilling: false}, its default, does not turn off what {@link #logSpilling} turned on).
         *
         * @param config the configuration
         * @return this builder
         * @throws IllegalArgumentException when a value is not valid, naming the key and where it came from
         */
        public Builder config(UcxConfig config) {
            config.find(CudaKeys.DEVICE_MEMORY_LIMIT)
                    .ifPresent(t -> deviceLimit = parse(config, CudaKeys.DEVICE_MEMORY_LIMIT, t));
            config.find(CudaKeys.MEMORY_LIMIT).ifPresent(t -> hostLimit = parse(config, CudaKeys.MEMORY_LIMIT, t));
            config.find(CudaKeys.LOCAL_DIRECTORY).ifPresent(t -> localDirectory = Path.of(t));
            logSpilling |= config.get(CudaKeys.LOG_SPILLING);
            return this;
        }

        /** A limit from the configuration; {@code auto} gives null (the default). */
        private static MemoryLimit parse(UcxConfig config, ConfigKey<String> key, String text) {
            try {
                return MemoryLimit.parse(text, null);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        key.name() + " (from " + config.source(key) + "): " + e.getMessage(), e);
            }
        }

        /**
         * The device tier's limit in bytes.
         *
         * @param bytes at least 1
         * @return this builder
         */
        public Builder deviceMemoryLimit(long bytes) {
            deviceLimit = MemoryLimit.ofBytes(bytes);
            return this;
        }

        /**
         * The device tier's limit as a fraction of the GPU's memory (default 0.8).
         *
         * @param fraction above 0, at most 1
         * @return this builder
         */
        public Builder deviceMemoryFraction(double fraction) {
            deviceLimit = MemoryLimit.ofFraction(fraction);
            return this;
        }

        /**
         * The host tier's limit in bytes: pinned host memory held, blocks counted by their size class, idle
         * blocks kept for reuse and the staging block included (default: 80% of the memory this process may
         * use, its container's limit when there is one, divided by the GPUs this process sees).
         *
         * @param bytes at least 1
         * @return this builder
         */
        public Builder memoryLimit(long bytes) {
            hostLimit = MemoryLimit.ofBytes(bytes);
            return this;
        }

        /**
         * The directory under which the disk tier goes (default {@code java.io.tmpdir}). It must exist when
         * the first buffer is written to disk; the store makes a directory of its own in it then.
         *
         * @param directory an existing directory
         * @return this builder
         */
        public Builder localDirectory(Path directory) {
            localDirectory = Objects.requireNonNull(directory, "directory");
            return this;
        }

        /**
         * Whether each move between tiers is logged at INFO (default: DEBUG).
         *
         * @param on true to log at INFO
         * @return this builder
         */
        public Builder logSpilling(boolean on) {
            logSpilling = on;
            return this;
        }

        /**
         * Builds the store.
         *
         * @return the store, owned by the caller
         */
        public SpillStore build() {
            // Dask's "RAM / workers": each worker of ucx4j launch sees every GPU, one per worker.
            long host = hostLimit(Cuda.devices().size());
            return build(new CudaSpillMemory(pool, Math.min(host, MAX_RETAINED_PINNED)), host);
        }

        /** Builds over given tiers; the seam for tests without a GPU (one GPU's worth of host memory). */
        SpillStore build(SpillMemory memory) {
            return build(memory, hostLimit(1));
        }

        private long hostLimit(int gpus) {
            return (hostLimit != null ? hostLimit : MemoryLimit.ofFraction(DEFAULT_HOST_FRACTION / gpus))
                    .resolve(availableMemory());
        }

        private SpillStore build(SpillMemory memory, long host) {
            long device = (deviceLimit != null ? deviceLimit : DEFAULT_DEVICE_LIMIT).resolve(memory.deviceCapacity());
            Path dir = localDirectory != null ? localDirectory : Path.of(System.getProperty("java.io.tmpdir"));
            return new SpillStore(memory, pool, device, host, dir, logSpilling);
        }
    }

    /**
     * The memory this process may use: the container's limit when there is one (cgroups), else the machine's
     * ({@code OperatingSystemMXBean.getTotalMemorySize()}, which is container-aware); 16 GiB when unknown.
     */
    static long availableMemory() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                long total = os.getTotalMemorySize();
                if (total > 0) {
                    return total;
                }
            }
        } catch (RuntimeException e) {
            LOG.debug("cannot read the total memory size: {}", e.toString());
        }
        return 16L << 30;
    }
}
