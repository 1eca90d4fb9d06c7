package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * Host blocks of a {@link SpillStore}'s host tier in size classes (quarter powers of two, at most 25% slack),
 * with freed blocks kept for reuse up to a cap of idle bytes: pinning is slow (the driver faults in and locks
 * every page, a large fraction of a second per GiB), far slower than the copy it serves, so a steady stream of
 * spills pins nothing new.
 *
 * <p>Every block handed out is a view with a lifetime of its own: closing the block closes its segment, so a
 * use after close fails with "already closed" even when the memory under it is already another buffer's. A
 * block's close is idempotent; it fails with {@link IllegalStateException}, changing nothing, while another
 * thread is inside a call on its segment.
 *
 * <p>Threading: safe from any thread (one lock for the idle blocks).
 */
final class HostBlockCache implements AutoCloseable {
    private static final long MIN_CLASS = 4096;

    /** Memory under the blocks: pinned host memory on a GPU machine, plain native memory in CPU tests. */
    interface Backing {
        /**
         * The memory.
         *
         * @return a native segment of the size class asked for
         */
        MemorySegment segment();

        /** Frees the memory. */
        void free();
    }

    private final LongFunction<Backing> allocator;
    private final long retainedBytes;
    // Size class -> idle blocks; oldest class first, so trimming frees what waited longest.
    private final Map<Long, ArrayDeque<Backing>> idle = new LinkedHashMap<>();
    private long idleBytes;
    private boolean closed;

    /**
     * @param allocator allocates the memory of a size class
     * @param retainedBytes the most idle bytes kept for reuse
     */
    HostBlockCache(LongFunction<Backing> allocator, long retainedBytes) {
        this.allocator = allocator;
        this.retainedBytes = retainedBytes;
    }

    /** The size class of a host block: a quarter power of two at or above {@code bytes}, at least a page. */
    static long sizeClass(long bytes) {
        if (bytes <= MIN_CLASS) {
            return MIN_CLASS;
        }
        long base = Long.highestOneBit(bytes - 1);
        long quarter = base / 4;
        return base + (bytes - base + quarter - 1) / quarter * quarter;
    }

    /**
     * A block of {@code bytes}, an idle one of its size class when there is one.
     *
     * @param bytes at least 1
     * @return the block; its segment is exactly {@code bytes} long
     * @throws IllegalStateException when the cache is closed
     */
    SpillMemory.Block allocate(long bytes) {
        long size = sizeClass(bytes);
        Backing backing;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("spill store already closed");
            }
            ArrayDeque<Backing> q = idle.get(size);
            backing = q == null ? null : q.poll();
            if (backing != null) {
                idleBytes -= size;
            }
        }
        if (backing == null) {
            backing = allocator.apply(size);
        }
        return new Block(this, backing, bytes);
    }

    /**
     * The idle bytes kept for reuse now.
     *
     * @return bytes
     */
    synchronized long idleBytes() {
        return idleBytes;
    }

    /**
     * Frees idle blocks, those idle longest first, until at least {@code bytes} are freed or none is left.
     *
     * @param bytes bytes wanted freed
     * @return the bytes freed
     */
    long trim(long bytes) {
        ArrayDeque<Backing> toFree = new ArrayDeque<>();
        long freed = 0;
        synchronized (this) {
            var classes = idle.entrySet().iterator();
            while (freed < bytes && classes.hasNext()) {
                var e = classes.next();
                while (freed < bytes && !e.getValue().isEmpty()) {
                    toFree.add(e.getValue().poll());
                    freed += e.getKey();
                }
                if (e.getValue().isEmpty()) {
                    classes.remove();
                }
            }
            idleBytes -= freed;
        }
        toFree.forEach(Backing::free);
        return freed;
    }

    private void giveBack(Backing backing) {
        long size = backing.segment().byteSize();
        synchronized (this) {
            if (!closed && idleBytes + size <= retainedBytes) {
                idle.computeIfAbsent(size, k -> new ArrayDeque<>()).add(backing);
                idleBytes += size;
                return;
            }
        }
        backing.free();
    }

    /** Frees the idle blocks; blocks still out are freed when closed. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        RuntimeException failure = null;
        while (true) {
            Backing b;
            synchronized (this) {
                var classes = idle.values().iterator();
                if (!classes.hasNext()) {
                    idleBytes = 0;
                    break;
                }
                ArrayDeque<Backing> q = classes.next();
                b = q.poll();
                if (q.isEmpty()) {
                    classes.remove();
                }
            }
            if (b == null) {
                continue;
            }
            try {
                b.free();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** A block handed out: a view of its own lifetime over the backing memory. */
    private static final class Block implements SpillMemory.Block {
        private final HostBlockCache owner;
        private final Backing backing;
        private final Arena lifetime = Arena.ofShared();
        private final MemorySegment segment;
        private boolean freed;

        Block(HostBlockCache owner, Backing backing, long bytes) {
            this.owner = owner;
            this.backing = backing;
            this.segment = Cuda.view(backing.segment().address(), bytes, lifetime);
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public void close() {
            synchronized (this) {
                if (freed) {
                    return;
                }
                lifetime.close(); // throws, changing nothing, while another thread is in a call on the segment
                freed = true;
            }
            owner.giveBack(backing);
        }
    }
}
