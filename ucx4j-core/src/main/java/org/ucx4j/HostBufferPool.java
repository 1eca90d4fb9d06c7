package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.NativeLinker;

/**
 * Host memory for large buffers that come and go at a high rate, such as the frames of received
 * messages: a buffer given back is kept and handed out again instead of being freed.
 *
 * <p>Why: fresh memory costs more than the copy into it. A new 64 MiB buffer is zeroed by the JVM
 * (one pass), faulted in page by page by the kernel (another), registered by UCX (its registration
 * cache misses on a new address), and unmapped when freed; receiving 64 MiB messages into fresh
 * buffers ran at about a third of the bandwidth of receiving into one reused buffer. A buffer from
 * this pool is warm: mapped, and known to UCX's registration cache.
 *
 * <p>Buffers are not zeroed: whoever asks for one must overwrite what it reads (a receive does).
 * Sizes round up to classes of a quarter of a power of two (at most 25% slack), each buffer page
 * aligned. The pool keeps at most {@link #maxRetainedBytes()} of idle buffers; what would go beyond
 * is freed at once, so the pool never holds more than that cap beyond what is in use.
 *
 * <p>Ownership: {@link #allocate(long, Arena)} ties the buffer to an arena; the segment is usable
 * until that arena closes, and then the buffer goes back to the pool. A segment kept past its arena's
 * close fails on access like any closed segment: it never reaches the next user's data.
 *
 * <p>Threading: thread-safe; allocate and release take a short lock per size class.
 */
public final class HostBufferPool {
    private static final long PAGE = 4096;
    /** The smallest class: smaller buffers are cheap enough to allocate in an arena. */
    public static final long MIN_POOLED = 64 * 1024;

    private static final HostBufferPool SHARED = new HostBufferPool(512L * 1024 * 1024);

    private final long maxRetained;
    private final ArrayDeque<Chunk>[] classes;
    private long retained;
    private long hits;
    private long misses;

    private record Chunk(MemorySegment raw, MemorySegment aligned, int sizeClass) {}

    /**
     * A pool that keeps at most {@code maxRetainedBytes} of idle buffers.
     *
     * @param maxRetainedBytes the cap on idle memory (0 keeps nothing: every buffer is freed when released)
     * @return a new pool
     */
    public static HostBufferPool create(long maxRetainedBytes) {
        return new HostBufferPool(maxRetainedBytes);
    }

    /**
     * The process-wide pool, keeping at most 512 MiB of idle buffers; what ucx4j-comm's default
     * frame allocator uses for frames over {@value #MIN_POOLED} bytes.
     *
     * <p>Why process-wide: buffers are warm only if whoever receives next gets them back, across
     * comms and connections; one pool per comm would keep a cap's worth of idle memory per comm. It
     * holds nothing but memory (no thread, no native handle), never more than its cap idle, and
     * {@link #trim()} gives all of it back at once; a caller who wants the lifetime in hand creates its
     * own with {@link #create(long)}.
     *
     * @return the shared pool
     */
    public static HostBufferPool shared() {
        return SHARED;
    }

    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of generic deques, filled right below
    private HostBufferPool(long maxRetainedBytes) {
        if (maxRetainedBytes < 0) {
            throw new IllegalArgumentException("maxRetainedBytes must not be negative: " + maxRetainedBytes);
        }
        this.maxRetained = maxRetainedBytes;
        this.classes = new ArrayDeque[4 * 64];
        for (int i = 0; i < classes.length; i++) {
            classes[i] = new ArrayDeque<>();
        }
    }

    /**
     * A buffer of exactly {@code byteSize} bytes (page aligned, not zeroed), usable until {@code scope}
     * closes, when its memory goes back to the pool.
     *
     * @param byteSize the size, 0 or more
     * @param scope the arena whose close gives the buffer back; it must be alive
     * @return the buffer
     * @throws OutOfMemoryError when the system has no memory for a new buffer
     */
    public MemorySegment allocate(long byteSize, Arena scope) {
        if (byteSize < 0) {
            throw new IllegalArgumentException("byteSize must not be negative: " + byteSize);
        }
        int c = sizeClass(Math.max(byteSize, MIN_POOLED));
        Chunk chunk = take(c);
        if (chunk == null) {
            long size = classBytes(c);
            MemorySegment raw = Libc.malloc(size + PAGE);
            long aligned = (raw.address() + PAGE - 1) & -PAGE;
            chunk = new Chunk(raw, NativeLinker.view(MemorySegment.ofAddress(aligned), size), c);
        }
        Chunk mine = chunk;
        return NativeLinker.view(mine.aligned(), byteSize, scope, s -> release(mine));
    }

    private synchronized Chunk take(int c) {
        Chunk chunk = classes[c].pollLast();
        if (chunk != null) {
            retained -= classBytes(c);
            hits++;
        } else {
            misses++;
        }
        return chunk;
    }

    private void release(Chunk chunk) {
        long size = classBytes(chunk.sizeClass());
        synchronized (this) {
            if (retained + size <= maxRetained) {
                retained += size;
                classes[chunk.sizeClass()].addLast(chunk);
                return;
            }
        }
        Libc.free(chunk.raw());
    }

    /**
     * Frees every idle buffer.
     */
    public void trim() {
        java.util.List<Chunk> drop = new java.util.ArrayList<>();
        synchronized (this) {
            for (ArrayDeque<Chunk> q : classes) {
                drop.addAll(q);
                q.clear();
            }
            retained = 0;
        }
        drop.forEach(ch -> Libc.free(ch.raw()));
    }

    /**
     * The cap on idle memory.
     *
     * @return bytes
     */
    public long maxRetainedBytes() {
        return maxRetained;
    }

    /**
     * Idle memory kept now.
     *
     * @return bytes
     */
    public synchronized long retainedBytes() {
        return retained;
    }

    /**
     * How many allocations reused a kept buffer.
     *
     * @return the count since the pool was made
     */
    public synchronized long hits() {
        return hits;
    }

    /**
     * How many allocations needed new memory.
     *
     * @return the count since the pool was made
     */
    public synchronized long misses() {
        return misses;
    }

    /** Class of a size: 4 classes per power of two (2^k, 1.25, 1.5, 1.75 x 2^k), the smallest that fits. */
    static int sizeClass(long size) {
        int k = 63 - Long.numberOfLeadingZeros(size);
        if (k < 2) {
            return 0;
        }
        long base = 1L << k;
        if (size == base) {
            return 4 * k;
        }
        long quarter = base >> 2;
        long steps = (size - base + quarter - 1) / quarter;
        return steps >= 4 ? 4 * (k + 1) : 4 * k + (int) steps;
    }

    /** The bytes of a class, rounded up to whole pages. */
    static long classBytes(int c) {
        int k = c / 4;
        long base = 1L << k;
        long size = base + (base >> 2) * (c % 4);
        return (size + PAGE - 1) & -PAGE;
    }

    @Override
    public String toString() {
        return "HostBufferPool[retained " + retainedBytes() + " of " + maxRetained + " bytes, " + hits() + " hits, "
                + misses() + " misses]";
    }
}
