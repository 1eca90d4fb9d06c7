package org.ucx4j;

import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.ucx4j.internal.worker.Completion;
import org.ucx4j.internal.worker.DoneWaits;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.OperationOwner;

/**
 * The future of one UCX operation: a {@link CompletableFuture} that only ucx4j completes.
 *
 * <p><b>Why users cannot complete it.</b> While an operation is in flight UCX owns its buffer: it may
 * still write into a receive buffer or read a send buffer. If user code could complete the future
 * ({@code complete}, {@code obtrudeValue}, {@code completeOnTimeout}, ...) it would look finished while
 * UCX still owned the buffer, and closing the buffer's arena would let UCX write into freed memory. So
 * {@link #complete}, {@link #completeExceptionally}, {@link #obtrudeValue}, {@link #obtrudeException},
 * {@link #completeAsync(Supplier)}, {@link #completeAsync(Supplier, Executor)} and
 * {@link #completeOnTimeout} throw {@link UnsupportedOperationException}, and the two that may end an
 * operation early go through UCX instead:
 *
 * <ul>
 *   <li>{@link #cancel(boolean)} asks UCX to cancel the request ({@code ucp_request_cancel}); the future
 *       fails with {@link UcxCanceledException} only when UCX has released the request, and completes
 *       normally if the operation finished first. UCX cancels receives that have not matched a message
 *       yet (tag, stream, simple active-message receives); a send, flush or RMA operation cannot be taken
 *       back and completes when UCX is done with its buffer (or its endpoint fails or closes).
 *   <li>{@link #orTimeout} schedules that same cancellation for the deadline; the future then fails with
 *       {@link UcxTimeoutException} (not {@code java.util.concurrent.TimeoutException}), again only once
 *       UCX has released the request.
 * </ul>
 *
 * <p>So whenever this future is done, ucx4j and UCX are done with the buffers it was given, and they may
 * be freed. Dependent stages ({@code thenApply}, {@code copy()}, {@code minimalCompletionStage()}, ...)
 * are plain {@code CompletableFuture}s: completing one of them touches neither this future nor UCX (so
 * it says nothing about the buffer: wait for this future before freeing it). {@link #toCompletableFuture()}
 * returns this future itself.
 *
 * <p><b>Threading.</b> Every method may be called from any thread. ucx4j completes the future, and so
 * runs the dependent stages attached without an executor, on the worker's progress thread
 * ({@link ProgressMode#THREAD_BLOCKING}, {@link ProgressMode#THREAD_POLLING}), or in
 * {@link ProgressMode#CALLER} mode on the thread inside {@link UcxWorker#progress()} or a blocking call
 * of that worker; never on a thread that only submits an operation or waits for one on a threaded
 * worker. Two exceptions: a stage attached to a future that is already done runs at once on the
 * attaching thread (the {@code CompletableFuture} rule), and operations still pending when their worker
 * is destroyed fail on the thread that closes the worker. Such stages must be short and must not block:
 * blocking ucx4j calls on the same worker are refused there with {@link IllegalStateException}, starting
 * asynchronous operations is fine; for longer work use the {@code ...Async(fn, executor)} variants.
 * {@link #cancel} and {@link #orTimeout} only request: the completion they cause happens on the progress
 * thread like any other.
 *
 * @param <T> the result type
 */
public final class UcxFuture<T> extends CompletableFuture<T> {
    private volatile Operation operation;
    private volatile Completion.Canceller canceller;
    /** Completes ucx4j's futures on its behalf: one for all of them; never handed to users. */
    private static final Completion COMPLETION = new Completion() {
        @Override
        @SuppressWarnings("unchecked") // an operation's value has its future's type by construction
        public boolean succeed(CompletableFuture<?> future, Object value) {
            return ((UcxFuture<Object>) future).succeed(value);
        }

        @Override
        public boolean fail(CompletableFuture<?> future, Throwable error) {
            return ((UcxFuture<?>) future).fail(error);
        }
    };

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
        Operation op = new Operation(worker, kind, owner, length, this, COMPLETION);
        this.operation = op;
        return op;
    }

    /** Sets how {@link #cancel} and {@link #orTimeout} cancel a future that is not one UCX request. */
    UcxFuture<T> cancelWith(Completion.Canceller how) {
        this.canceller = how;
        return this;
    }

    /** ucx4j completes the future. */
    boolean succeed(T value) {
        return super.complete(value);
    }

    /** ucx4j fails the future. */
    boolean fail(Throwable error) {
        return super.completeExceptionally(error);
    }

    /** Completes this future as {@code from} completes (ucx4j's plumbing: one operation's result for another). */
    void completeFrom(CompletableFuture<? extends T> from) {
        from.whenComplete((v, e) -> {
            if (e != null) {
                fail(e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e);
            } else {
                succeed(v);
            }
        });
    }

    /**
     * Requests the cancellation of the operation through UCX. Returns at once; the future fails with
     * {@link UcxCanceledException} when UCX has released the request, or completes normally if the
     * operation finished first (see the class comment for which operations UCX can cancel).
     *
     * @param mayInterruptIfRunning ignored
     * @return true when a cancellation was requested for an operation still pending; false when the
     *     future is done or stands for something that cannot be canceled (an endpoint close)
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        return requestCancel(null);
    }

    /**
     * Fails the future with {@link UcxTimeoutException} if it has not completed within the time, by
     * canceling the operation through UCX at the deadline (as {@link #cancel}): the future fails only once
     * UCX has released the request, and an operation UCX cannot cancel (a send) is not ended early.
     *
     * @param timeout how long from now
     * @param unit the unit of {@code timeout}
     * @return this future
     * @throws UnsupportedOperationException for a future that cannot be canceled (an endpoint close, which
     *     has the worker's close timeout)
     */
    @Override
    public UcxFuture<T> orTimeout(long timeout, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (isDone()) {
            return this;
        }
        if (operation == null && canceller == null) {
            throw new UnsupportedOperationException(
                    "this ucx4j future cannot be canceled, so it cannot time out (an endpoint close has the worker's"
                            + " close timeout)");
        }
        WeakReference<UcxFuture<T>> self = new WeakReference<>(this);
        String limit = unit.toMillis(timeout) + " ms";
        CompletableFuture.delayedExecutor(timeout, unit).execute(() -> {
            UcxFuture<T> f = self.get();
            if (f != null && !f.isDone()) {
                f.requestCancel(new UcxTimeoutException(
                        "orTimeout", UcxStatus.TIMED_OUT.code(), "no completion within " + limit + "; canceled"));
            }
        });
        return this;
    }

    private boolean requestCancel(UcxException reason) {
        if (isDone()) {
            return false;
        }
        Operation op = operation;
        if (op != null) {
            op.cancel(reason);
            return true;
        }
        Completion.Canceller c = canceller;
        if (c != null) {
            c.cancel(reason != null ? reason : new UcxCanceledException("cancel", "canceled by the caller"));
            return true;
        }
        return false;
    }

    /**
     * Refused: only ucx4j completes this future (see the class comment).
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public boolean complete(T value) {
        throw refused("complete");
    }

    /**
     * Refused: only ucx4j completes this future; {@link #cancel} ends an operation early, through UCX.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        throw refused("completeExceptionally");
    }

    /**
     * Refused: only ucx4j completes this future.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public void obtrudeValue(T value) {
        throw refused("obtrudeValue");
    }

    /**
     * Refused: only ucx4j completes this future.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public void obtrudeException(Throwable ex) {
        throw refused("obtrudeException");
    }

    /**
     * Refused: only ucx4j completes this future.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public UcxFuture<T> completeAsync(Supplier<? extends T> supplier) {
        throw refused("completeAsync");
    }

    /**
     * Refused: only ucx4j completes this future.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public UcxFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
        throw refused("completeAsync");
    }

    /**
     * Refused: a value in place of the operation's result would leave UCX owning the buffer; use
     * {@link #orTimeout} (which cancels through UCX) and recover with {@code exceptionally}.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public UcxFuture<T> completeOnTimeout(T value, long timeout, TimeUnit unit) {
        throw refused("completeOnTimeout");
    }

    private static UnsupportedOperationException refused(String what) {
        return new UnsupportedOperationException("UcxFuture." + what + ": only ucx4j completes the future of a UCX "
                + "operation (UCX may still own its buffer); use cancel() or orTimeout(), which cancel through UCX");
    }

    /**
     * Waits for the result, running none of the dependent stages (unlike {@code CompletableFuture}, whose
     * waiter may run them once it wakes: see the threading paragraph of the class comment).
     */
    @Override
    public T get() throws InterruptedException, ExecutionException {
        DoneWaits.awaitDone(this, -1);
        return super.get(); // done: no waiting, no stages run here
    }

    /** Like {@link #get()}, within a time limit. */
    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        if (!DoneWaits.awaitDone(this, Math.max(0, unit.toNanos(timeout)))) {
            throw new TimeoutException();
        }
        return super.get(timeout, unit);
    }

    /** Like {@link #get()} without checked exceptions, not interruptible (the flag is kept). */
    @Override
    public T join() {
        boolean interrupted = false;
        while (!isDone()) {
            try {
                DoneWaits.awaitDone(this, -1);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return super.join();
    }

    /**
     * Dependent stages are plain futures: completing or cancelling one of them touches neither this
     * future nor UCX.
     */
    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new CompletableFuture<>();
    }
}
