package org.ucx4j.comm.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * Bytes that comms hold for messages received ahead of their readers, bounded by {@code max-in-flight}
 * (one comm) or {@code max-in-flight-per-listener} (the comms of one listener). A comm reserves a message's bytes
 * once its header said how many, before any frame memory is allocated; when the budget has no room,
 * the comm's frame receives wait here (UCX holds the sender back meanwhile) and run, in arrival order,
 * as reservations are released. One message may go beyond the limit when nothing else is reserved, so
 * that a message larger than the limit is not stuck for ever.
 *
 * <p>{@code ucx://} reserves with a callback ({@link #reserve}: it posts receives from UCX's progress
 * thread, which must not wait); a {@code tcp://} reader, a virtual thread of its own, waits
 * ({@link #take}).
 *
 * <p>Threading: thread-safe; waiting work runs on the thread that released the bytes that admit it;
 * {@link #take} blocks its caller.
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

    /**
     * Reserves {@code bytes}, waiting in line while they do not fit.
     *
     * @param bytes the message's payload
     * @param stillWanted checked every 100 ms while waiting: false gives up (the comm closed)
     * @return whether the bytes were reserved (false: given up; nothing stays reserved)
     * @throws InterruptedException when interrupted while waiting (nothing stays reserved)
     */
    boolean take(long bytes, BooleanSupplier stillWanted) throws InterruptedException {
        CompletableFuture<Void> admitted = new CompletableFuture<>();
        // Admitted after this thread gave up: the reservation is handed straight back.
        reserve(bytes, () -> {
            if (!admitted.complete(null)) {
                release(bytes);
            }
        });
        while (true) {
            try {
                admitted.get(100, TimeUnit.MILLISECONDS);
                return true;
            } catch (TimeoutException e) {
                if (!stillWanted.getAsBoolean() && admitted.completeExceptionally(new CancellationException())) {
                    return false;
                }
            } catch (InterruptedException e) {
                if (!admitted.completeExceptionally(new CancellationException())) {
                    release(bytes);
                }
                throw e;
            } catch (ExecutionException e) {
                throw new IllegalStateException(e); // only this method fails it, and then returns
            }
        }
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
