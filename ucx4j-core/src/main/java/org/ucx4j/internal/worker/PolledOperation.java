package org.ucx4j.internal.worker;

/**
 * An operation without a future, for a blocking call of a caller-driven worker: UCX gets no callback for
 * it, the round that finds its request done completes it ({@link OperationTable#pollRequests}), and the
 * thread that started it reads the outcome here ({@link ProgressEngine#runPolled}). A class of its own so
 * that the async operations, one or two per message, carry none of these fields.
 *
 * <p>Threading: completed by the worker's lock holder; {@link #isDone()}, {@link #value()} and
 * {@link #error()} may be read by any thread, the last two once {@code isDone()} is true (they are written
 * before the volatile {@code done}).
 */
public final class PolledOperation extends Operation {
    private volatile boolean done;
    private Object value;
    private Throwable error;

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
        done = true;
        return true;
    }

    @Override
    boolean fail(Throwable error) {
        if (done) {
            return false;
        }
        this.error = error;
        done = true;
        return true;
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
