package org.ucx4j;

import java.util.concurrent.CompletableFuture;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.OperationOwner;

/**
 * The future of one UCX operation. A plain {@link CompletableFuture} except for {@link #cancel}: it asks
 * UCX to cancel the request, and the future completes (exceptionally, with
 * {@link UcxCanceledException}) only when UCX has released the buffer. Completing at once, as
 * {@code CompletableFuture} would, could let the caller reuse memory that UCX is still writing into.
 *
 * <p>Threading: completes on the worker's progress thread; dependent stages without an executor run
 * there too (keep them short, and never call blocking ucx4j methods in them). {@code cancel} may be
 * called from any thread.
 *
 * @param <T> the result type
 */
public final class UcxFuture<T> extends CompletableFuture<T> {
    private volatile Operation operation;

    UcxFuture() {}

    /**
     * Creates the operation whose result completes this future; from then on {@link #cancel} cancels it.
     *
     * @param worker the worker it runs on
     * @param kind what it is
     * @param owner the endpoint it is tied to, or null
     * @param length the bytes it moves, for messages
     * @return the operation, not yet submitted
     */
    Operation track(NativeWorker worker, OperationKind kind, OperationOwner owner, long length) {
        Operation op = new Operation(worker, kind, owner, length, this);
        this.operation = op;
        return op;
    }

    /**
     * Asks UCX to cancel the operation. Returns at once; the future completes with
     * {@link UcxCanceledException} when UCX confirms (or normally, if the operation finished first).
     *
     * @param mayInterruptIfRunning ignored
     * @return true when a cancellation was requested for a still-pending operation
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        Operation op = operation;
        if (op == null || isDone()) {
            return false;
        }
        op.cancel();
        return true;
    }

    /**
     * Dependent stages are plain futures: cancelling one of them does not reach UCX.
     */
    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new CompletableFuture<>();
    }
}
