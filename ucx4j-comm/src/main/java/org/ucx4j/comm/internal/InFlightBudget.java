package org.ucx4j.comm.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Bytes that a group of comms (those of one {@code ucx://} listener) hold for messages received ahead
 * of their readers, bounded by {@code max-in-flight-per-listener}. A comm reserves a message's bytes
 * once its header said how many, before any frame memory is allocated; when the budget has no room,
 * the comm's frame receives wait here (UCX holds the sender back meanwhile) and run, in arrival order,
 * as reservations are released. One message may go beyond the limit when nothing else is reserved, so
 * that a message larger than the limit is not stuck for ever.
 *
 * <p>Threading: thread-safe; waiting work runs on the thread that released the bytes that admit it.
 */
final class InFlightBudget {
    private final long limit;
    private long used;
    private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();

    private record Waiter(long bytes, Runnable admitted) {}

    InFlightBudget(long limit) {
        this.limit = limit;
    }

    /** Runs {@code admitted} once {@code bytes} are reserved: now, on this thread, or after a release. */
    void reserve(long bytes, Runnable admitted) {
        synchronized (this) {
            if (!waiting.isEmpty() || !fits(bytes)) {
                waiting.add(new Waiter(bytes, admitted));
                return;
            }
            used += bytes;
        }
        admitted.run();
    }

    /** Gives back bytes reserved before; admits the waiting work that now fits, in order. */
    void release(long bytes) {
        if (bytes == 0) {
            return;
        }
        List<Runnable> admitted = new ArrayList<>();
        synchronized (this) {
            used -= bytes;
            while (!waiting.isEmpty() && fits(waiting.peekFirst().bytes())) {
                Waiter w = waiting.pollFirst();
                used += w.bytes();
                admitted.add(w.admitted());
            }
        }
        admitted.forEach(Runnable::run);
    }

    private boolean fits(long bytes) {
        return used == 0 || used + bytes <= limit;
    }

    /** Reservations waiting for room. */
    synchronized int waiting() {
        return waiting.size();
    }

    /** Bytes reserved now. */
    synchronized long used() {
        return used;
    }
}
