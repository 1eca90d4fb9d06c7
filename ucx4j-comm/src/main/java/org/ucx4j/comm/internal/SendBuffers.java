package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

/**
 * A few native buffers of one size that a comm sends from (inline messages, control records), made on
 * first need in the comm's arena, up to a count: a send from native memory declared as host memory
 * spares the core's staging copy of a {@code byte[]} and UCX's detection of the memory's type. When all
 * are in flight the caller sends from the heap instead.
 *
 * <p>Threading: any thread (guarded by itself). Ownership: the arena is the comm's; once the comm stops
 * ({@link #stop}) no buffer is handed out, and the memory goes with the arena.
 */
final class SendBuffers {
    private final Arena arena;
    private final long size;
    private final int most;
    private final ArrayDeque<MemorySegment> free = new ArrayDeque<>();
    private int made;
    private boolean stopped;

    /**
     * @param arena where the buffers are made (the comm's; closed by it)
     * @param size each buffer's bytes
     * @param most how many may be made
     */
    SendBuffers(Arena arena, long size, int most) {
        this.arena = arena;
        this.size = size;
        this.most = most;
    }

    /** A free buffer (the last one given back first: warm in the cache), or null when none can be had. */
    MemorySegment take() {
        synchronized (this) {
            if (stopped) {
                return null;
            }
            MemorySegment b = free.pollFirst();
            if (b != null || made >= most) {
                return b;
            }
            made++;
        }
        try {
            return arena.allocate(size, 64);
        } catch (IllegalStateException closed) { // the comm's arena closed meanwhile
            return null;
        }
    }

    /** Gives a buffer from {@link #take} back once UCX is done with it; null is ignored. */
    void giveBack(MemorySegment b) {
        if (b != null) {
            synchronized (this) {
                free.addFirst(b);
            }
        }
    }

    /** No buffer is handed out from now on (the comm is about to free its arena). */
    synchronized void stop() {
        stopped = true;
    }

    /** The bytes of the buffers made so far. */
    synchronized long bytesMade() {
        return made * size;
    }
}
