package org.ucx4j.cuda;

import java.lang.foreign.Arena;

/**
 * The lifetime of memory ucx4j-cuda hands out as a segment: a shared arena whose closing makes every
 * later use of the segment fail with "already closed", and a flag that says whether it ended.
 *
 * <p>Threading: safe from any thread.
 */
final class Lifetime {
    private final Arena arena = Arena.ofShared();
    private volatile boolean ended;

    Arena arena() {
        return arena;
    }

    boolean isAlive() {
        return !ended;
    }

    /**
     * Ends the lifetime once: closes the arena, then marks it ended.
     *
     * @return true for the call that ended it (which then frees the memory), false when it had ended
     * @throws IllegalStateException while another thread uses the segment (a call into the driver or
     *     UCX, a Java access): nothing ends then
     */
    synchronized boolean end() {
        if (ended) {
            return false;
        }
        arena.close();
        ended = true;
        return true;
    }
}
