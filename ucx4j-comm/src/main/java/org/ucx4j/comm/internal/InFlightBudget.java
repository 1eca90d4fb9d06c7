package org.ucx4j.comm.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Bytes of messages being received at once, under a limit ({@code comm.max-bytes-in-flight} for one
 * comm, {@code comm.listener-max-bytes-in-flight} for all comms of one listener): a receiver takes a
 * message's bytes before it allocates the message's memory and gives them back once the message is
 * complete. A message larger than the whole limit is let in when nothing else is in flight, so every
 * message within {@code max-message-size} can still arrive. While a receiver waits, its peer's data
 * waits in the network (TCP's window).
 *
 * <p>Threading: any thread; {@link #take} blocks (meant for virtual threads).
 */
final class InFlightBudget {
    private final long limit;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition gaveBack = lock.newCondition();
    private long used;

    InFlightBudget(long limit) {
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
