package org.ucx4j.internal.worker;

import java.util.concurrent.CompletableFuture;
import org.ucx4j.UcxException;

/**
 * The ucx4j-only side of a {@code UcxFuture}: completing it. The public future refuses {@code complete},
 * {@code completeExceptionally} and the like from users (they could otherwise finish an operation whose
 * buffer UCX still owns); ucx4j completes it through this.
 *
 * <p>Why an interface: the future is public API in {@code org.ucx4j}; it implements this with one private
 * object for all futures, so only code given that object (an {@link Operation}) can complete one. One
 * object, not one per future: an operation names its future and this, and a message allocates nothing more.
 *
 * <p>Threading: by the worker's lock holder (or before the future is handed out).
 */
public interface Completion {
    /**
     * Completes {@code future} with a value, unless it is already done.
     *
     * @param future a future of ucx4j's, given with this completion
     * @param value its result
     * @return true when this call completed it
     */
    boolean succeed(CompletableFuture<?> future, Object value);

    /**
     * Completes {@code future} with a failure, unless it is already done.
     *
     * @param future a future of ucx4j's, given with this completion
     * @param error what it fails with
     * @return true when this call completed it
     */
    boolean fail(CompletableFuture<?> future, Throwable error);

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
