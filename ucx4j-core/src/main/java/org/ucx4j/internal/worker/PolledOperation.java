package org.ucx4j.internal.worker;

import java.util.concurrent.locks.LockSupport;

/**
 * An operation without a future, for a blocking call: UCX gets no callback for it, the round that finds
 * its request done completes it ({@link OperationTable#pollRequests}), and the thread that started it
 * reads the outcome here ({@link ProgressEngine#runPolled}). On a caller-driven worker that thread runs
 * the rounds itself; on a threaded one the progress thread does, and the waiting thread spins on
 * {@link #isDone()} and then parks, to be unparked by the completion ({@link #waitFor}). A class of its
 * own so that the async operations, one or two per message, carry none of these fields.
 *
 * <p>Threading: completed by the worker's lock holder; {@link #isDone()}, {@link #value()} and
 * {@link #error()} may be read by any thread, the last two once {@code isDone()} is true (they are written
 * before the volatile {@code done}).
 */
public final class PolledOperation extends Operation {
    private volatile boolean done;
    private Object value;
    private Throwable error;
    /** The thread parked for it, or null: unparked once it is done. */
    private volatile Thread waiter;

    /**
     * Creates a polled operation; nothing is submitted yet.
     *
     * @param worker the worker it runs on
     * @param kind what it is
     * @param owner the endpoint it runs on, or null for a worker-wide operation
     * @param length the bytes it moves, for error messages
     */
    public PolledOperation(NativeWorker worker, OperationKind kind, OperationOwner owner, long length) {
        super(worker, kind, owner, length, null);
    }

    @Override
    boolean polled() {
        return true;
    }

    @Override
    boolean succeed(Object value) {
        if (done) {
            return false;
        }
        this.value = value;
        done();
        return true;
    }

    @Override
    boolean fail(Throwable error) {
        if (done) {
            return false;
        }
        this.error = error;
        done();
        return true;
    }

    /** Marks it done, then wakes a thread parked for it (done is written before the waiter is read). */
    private void done() {
        done = true;
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    /**
     * Names the thread about to park until this operation is done (null once it stopped waiting). The
     * thread sets it, then reads {@link #isDone()} before each park; the completion sets done, then reads
     * this: one of them sees the other's write, so no wake-up is lost.
     *
     * @param thread the waiting thread, or null
     */
    void waitFor(Thread thread) {
        waiter = thread;
    }

    @Override
    boolean isDone() {
        return done;
    }

    /**
     * Its result, once {@link #isDone()}: the {@code TagInfo} of a receive, null for a send.
     *
     * @return what it completed with, or null when it failed
     */
    public Object value() {
        return value;
    }

    /**
     * Its failure, once {@link #isDone()}.
     *
     * @return what it failed with, or null when it succeeded
     */
    public Throwable error() {
        return error;
    }
}
