package org.ucx4j.cluster;

import java.util.concurrent.TimeUnit;

/**
 * The wait between two attempts to reach a launcher or a peer: 20 ms, doubling up to 500 ms, for as long as
 * a deadline leaves room for it.
 *
 * <p>Threading: one attempt loop's own; not shared.
 */
final class Backoff {
    private final long deadlineNanos;
    private long millis = 20;

    /** Attempts until {@code deadlineNanos} ({@link System#nanoTime()}). */
    Backoff(long deadlineNanos) {
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * Sleeps before the next attempt.
     *
     * @return false, without sleeping, when the deadline would pass first: no more attempts
     * @throws InterruptedException when interrupted while sleeping
     */
    boolean pause() throws InterruptedException {
        if (deadlineNanos - System.nanoTime() <= TimeUnit.MILLISECONDS.toNanos(millis)) {
            return false;
        }
        Thread.sleep(millis);
        millis = Math.min(500, millis * 2);
        return true;
    }
}
