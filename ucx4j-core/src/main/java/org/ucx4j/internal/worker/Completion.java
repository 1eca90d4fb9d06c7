package org.ucx4j.internal.worker;

import org.ucx4j.UcxException;

/**
 * The ucx4j-only side of a {@code UcxFuture}: completing it, and asking for its cancellation. The public
 * future refuses {@code complete}, {@code completeExceptionally} and the like from users (they could
 * otherwise finish an operation whose buffer UCX still owns); ucx4j completes it through this.
 *
 * <p>Why an interface: the future is public API in {@code org.ucx4j}; it implements this with a private
 * object, so only code given that object (an {@link Operation}) can complete the future.
 *
 * <p>Threading: {@link #succeed} and {@link #fail} by the worker's lock holder (or before the future is
 * handed out); {@link #isDone} from any thread.
 */
public interface Completion {
    /**
     * Completes the future with a value, unless it is already done.
     *
     * @return true when this call completed it
     */
    boolean succeed(Object value);

    /**
     * Completes the future with a failure, unless it is already done.
     *
     * @return true when this call completed it
     */
    boolean fail(Throwable error);

    /** Whether the future is done. */
    boolean isDone();

    /**
     * Cancels what a future stands for, when the future itself is not tied to one UCX request (a connect,
     * a simple active-message receive). Any thread; asynchronous: the future completes with
     * {@code reason} (or its result, if that came first) once nothing of the operation is left in UCX.
     */
    @FunctionalInterface
    interface Canceller {
        /**
         * Requests the cancellation.
         *
         * @param reason what the future fails with when the cancellation takes effect
         */
        void cancel(UcxException reason);
    }
}
