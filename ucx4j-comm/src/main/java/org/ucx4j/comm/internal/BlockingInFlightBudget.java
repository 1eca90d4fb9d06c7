package org.ucx4j.comm.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Bytes of messages a {@code tcp://} comm receives at once, under a limit ({@code max-in-flight} for one
 * comm, {@code max-in-flight-per-listener} for all comms of one listener): a receiver takes a
 * message's bytes before it allocates the message's memory and gives them back once the message is
 * complete. A message larger than the whole limit is let in when nothing else is in flight, so every
 * message within {@code max-message-size} can still arrive. While a receiver waits, its peer's data
 * waits in the network (TCP's window).
 *
 * <p>The blocking twin of {@link InFlightBudget}, whose reservations are answered by a callback because
 * {@code ucx://} receives are posted from UCX's progress thread, which must not wait; a {@code tcp://}
 * reader is a virtual thread of its own, for which waiting is the simple and cheap way.
 *
 * <p>Threading: any thread; {@link #take} blocks (meant for virtual threads).
 */
final class BlockingInFlightBudget {
    private final long limit;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition gaveBack = lock.newCondition();
    private long used;

    BlockingInFlightBudget(long limit) {
        this.limit = limit;
    }

    /**
     * Takes {@code bytes}, waiting while others hold too much.
     *
     * @param bytes the message's payload
     * @param stillWanted checked while waiting: false gives up (the comm closed)
     * @return whether the bytes were taken (false: given up)
     * @throws InterruptedException when interrupted while waiting
     */
    boolean take(long bytes, BooleanSupplier stillWanted) throws InterruptedException {
        lock.lock();
        try {
            while (used > 0 && used + bytes > limit) {
                if (!stillWanted.getAsBoolean()) {
                    return false;
                }
                gaveBack.await(100, TimeUnit.MILLISECONDS);
            }
            used += bytes;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Gives back what {@link #take} took. */
    void giveBack(long bytes) {
        lock.lock();
        try {
            used -= bytes;
            gaveBack.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The bytes in flight now. */
    long used() {
        lock.lock();
        try {
            return used;
        } finally {
            lock.unlock();
        }
    }
}
