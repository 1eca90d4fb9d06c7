package org.ucx4j;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.OperationList;
import org.ucx4j.internal.worker.OperationOwner;
import org.ucx4j.internal.worker.OperationTable;
import org.ucx4j.internal.worker.TimerQueue;

/**
 * One endpoint's state machine (open, failed, closing, closed) and the operations tied to it: it admits
 * operations while open, fails them all when the peer breaks the endpoint (then runs the user's
 * {@link EndpointErrorHandler} and closes by force), and runs the close ({@code ucp_ep_close_nbx}
 * under the worker's close timeout).
 *
 * <p>Threading: {@link #ensureOpen()}, {@link #isOpen()}, {@link #failure()} and {@link #closeAsync}
 * from any thread; the rest by the worker's lock holder.
 */
final class EndpointLifecycle implements OperationOwner {
    private static final Logger LOG = LoggerFactory.getLogger(EndpointLifecycle.class);
    private static final int CLOSE_FLAG_FORCE = 1;

    private enum State {
        OPEN,
        FAILED,
        CLOSING,
        CLOSED
    }

    private final UcxEndpoint endpoint;
    private final NativeWorker rt;
    private final EndpointErrorHandler errorHandler;
    private final OperationList operations = new OperationList();
    private volatile State state = State.OPEN;
    private volatile UcxException failure;
    private UcxFuture<Void> closeFuture;
    /** The peer broke the endpoint while a graceful close waited for its operations: close by force. */
    private boolean failedWhileClosing;

    EndpointLifecycle(UcxEndpoint endpoint, NativeWorker rt, EndpointErrorHandler errorHandler) {
        this.endpoint = endpoint;
        this.rt = rt;
        this.errorHandler = errorHandler;
    }

    // ------------------------------------------------------------------ state

    boolean isOpen() {
        return state == State.OPEN;
    }

    Optional<UcxException> failure() {
        return Optional.ofNullable(failure);
    }

    /** The failure, or null; no allocation (hot path). */
    UcxException failureOrNull() {
        return failure;
    }

    /** The failure while the endpoint is in the failed state (not yet closed by force), else null. */
    UcxException failureIfFailed() {
        return state == State.FAILED ? failure : null;
    }

    String stateName() {
        return state.name();
    }

    /**
     * Refuses new operations on a closed endpoint: an {@link IllegalStateException} when the caller closed
     * it, the endpoint's failure (a {@link UcxException}, fresh for this caller) when the peer broke it,
     * since the caller needs to know the peer is gone, not that someone called close.
     */
    void ensureOpen() {
        UcxException failed = failure;
        if (failed != null) {
            throw UcxException.of(
                    failed.call(),
                    failed.rawStatus(),
                    "endpoint to " + describePeer() + " failed earlier: " + failed.getMessage());
        }
        State s = state;
        if (s == State.CLOSING || s == State.CLOSED) {
            throw closed();
        }
        endpoint.worker().ensureOpen();
    }

    /** Lock held: throws the failure of a failed endpoint, or "closed" when it is not open. */
    void checkOpenLocked() {
        State s = state;
        if (s == State.FAILED && failure != null) {
            throw failure;
        }
        if (s != State.OPEN) {
            throw closed();
        }
    }

    private IllegalStateException closed() {
        return new IllegalStateException("endpoint to " + describePeer() + " is closed");
    }

    // ------------------------------------------------------------------ OperationOwner

    @Override
    public boolean admit(Operation op) {
        if (state == State.OPEN) {
            return true;
        }
        Throwable why = failure != null ? failure : closed();
        rt.operations.failUnsubmitted(op, why);
        return false;
    }

    @Override
    public OperationList operations() {
        return operations;
    }

    @Override
    public String describePeer() {
        return endpoint.describePeer();
    }

    // ------------------------------------------------------------------ failure

    /**
     * Called with the lock held, from inside UCX's error callback, when this endpoint failed. Only the
     * state changes here; aborting operations, the user's handler and the forced close run in the next
     * round, outside the callback, because UCX is still tearing the endpoint down.
     */
    void failed(int status) {
        if (state == State.CLOSED) {
            return;
        }
        UcxException error = UcxException.of("endpoint", status, "peer " + describePeer());
        boolean closing = state == State.CLOSING;
        if (failure == null && !closing) {
            // Only a failure of an open endpoint is the peer's doing; during our own close it is expected.
            failure = error;
        }
        if (!closing) {
            state = State.FAILED;
        } else {
            failedWhileClosing = true;
        }
        rt.engine.later(() -> afterFailure(error, closing));
    }

    private void afterFailure(UcxException error, boolean closing) {
        endpoint.simpleChannel().failWaiters(error);
        OperationTable table = rt.operations;
        for (Operation op : operations.snapshot()) {
            table.abort(op, error);
        }
        if (errorHandler != null && !closing) {
            try {
                errorHandler.onError(endpoint, error);
            } catch (Throwable t) {
                LOG.error("endpoint error handler failed for {}", describePeer(), t);
            }
        } else {
            LOG.debug("endpoint to {} failed: {}", describePeer(), error.getMessage());
        }
        if (!closing) {
            startClose(CloseMode.FORCE, new UcxFuture<>());
        }
    }

    // ------------------------------------------------------------------ close

    UcxFuture<Void> closeAsync(CloseMode mode) {
        UcxFuture<Void> f = new UcxFuture<>();
        // Queued, not run inline: closing cancels the endpoint's pending operations, whose futures'
        // continuations must run on the progress thread (the threading contract), not on the caller's.
        rt.engine.later(() -> startClose(mode, f));
        return f;
    }

    /**
     * Starts a close, or ties {@code f} to the close already under way; lock held.
     *
     * <p>What UCX requires, and why the close runs in two steps: {@code ucp_ep_close_nbx} in flush mode
     * with sends still in flight is not safe on UCX 1.13: when the peer stops receiving (it closed, or
     * died) while a rendezvous send waits in a transport's pending queue, the flush completes with the
     * endpoint's error and UCX destroys the endpoint with the request still queued, which is a fatal
     * {@code ucs_bug} ("pending request ... should have been flushed", ucp_ep.c); on 1.22 the same flush
     * can wait for a peer that never answers. So a graceful close first refuses new operations, cancels
     * the receives nobody will match, and waits (up to the worker's close timeout) for the operations in
     * flight to complete; with none left it closes in flush mode (which then only says goodbye), and
     * with some still pending it closes by force ({@code UCP_EP_CLOSE_FLAG_FORCE}, which UCX allows with
     * peer error handling only), which completes them as canceled. A forced close, or the close of a
     * failed endpoint, goes to UCX at once.
     *
     * <p>One more case decides the mode: a receive that matched this peer's rendezvous message (a
     * worker-wide receive, which this endpoint does not list) is tracked by UCX on this endpoint until the
     * data comes. A flush close cannot end it, cannot be turned into a forced one later, and when UCX
     * destroys the endpoint with it still listed (at the peer's disconnect, or in
     * {@code ucp_worker_destroy}) UCX 1.13 aborts the process. So when UCX holds any receive at the moment
     * of the close, the endpoint is flushed (what was sent still arrives) and then closed by force:
     * {@link #closeGracefully}.
     */
    void startClose(CloseMode requested, UcxFuture<Void> f) {
        if (rt.inUpcall()) {
            rt.engine.later(() -> startClose(requested, f));
            return;
        }
        if (closeFuture != null) {
            f.completeFrom(closeFuture);
            return;
        }
        closeFuture = f;
        CloseMode mode = state == State.FAILED ? CloseMode.FORCE : requested;
        state = State.CLOSING;
        UcxCanceledException closed =
                new UcxCanceledException("endpoint close", "endpoint to " + describePeer() + " closed");
        endpoint.simpleChannel().failWaiters(closed);
        OperationTable table = rt.operations;
        for (Operation op : operations.snapshot()) {
            if (mode == CloseMode.FORCE || op.kind().awaitsPeer()) {
                table.abort(op, closed);
            }
        }
        endpoint.rma().closeAll();
        java.time.Duration closeTimeout = endpoint.worker().options().closeTimeout();
        // The last resort: the caller hears of a close that UCX did not finish within twice the timeout
        // (the drain below may take one), while the close itself goes on.
        TimerQueue.Timer guard = rt.timers.schedule(2 * closeTimeout.toNanos(), () -> {
            if (!f.isDone()) {
                f.fail(new UcxTimeoutException(
                        "ucp_ep_close_nbx",
                        UcxStatus.TIMED_OUT.code(),
                        "endpoint to " + describePeer() + " did not close within " + closeTimeout.multipliedBy(2)));
            }
        });
        long flushBy = System.nanoTime() + closeTimeout.toNanos();
        if (mode == CloseMode.FORCE) {
            submitClose(mode, f, guard);
            return;
        }
        if (operations.isEmpty()) {
            closeGracefully(f, guard, flushBy);
            return;
        }
        // A graceful close with operations in flight: wait for them, then close.
        boolean[] submitted = new boolean[1];
        TimerQueue.Timer drainTimer = rt.timers.schedule(closeTimeout.toNanos(), () -> {
            if (!submitted[0]) {
                submitted[0] = true;
                operations.whenEmpty(null);
                LOG.debug(
                        "endpoint to {}: operations still in flight after {}; closing by force",
                        describePeer(),
                        closeTimeout);
                submitClose(CloseMode.FORCE, f, guard);
            }
        });
        operations.whenEmpty(() -> rt.engine.later(() -> {
            if (!submitted[0]) {
                submitted[0] = true;
                drainTimer.cancel();
                closeGracefully(f, guard, flushBy);
            }
        }));
    }

    /**
     * The graceful close once this endpoint's own operations are done; lock held, outside UCX callbacks.
     * Closes by force if the endpoint failed meanwhile, in flush mode if UCX holds no receive, and
     * otherwise flushes it (until {@code flushBy}, a {@link System#nanoTime()} instant, and for at least
     * half the close timeout) and then closes it by force.
     *
     * <p>Why a receive forces the close (UCX 1.13.1; 1.22.0 has the same code): a tag or active-message
     * receive that matched a rendezvous message sends the peer its ready-to-receive message through a
     * request that UCX lists on the endpoint ({@code ucp_send_request_id_alloc}, ucp_request.inl: the
     * endpoint's {@code proto_reqs}, with peer error handling) until the peer's data and
     * acknowledgement arrive. Nothing but a forced close or an endpoint failure empties that list
     * ({@code ucp_ep_reqs_purge} from {@code ucp_ep_discard_lanes}, ucp_ep.c); a flush close marks the
     * endpoint closed ({@code UCP_EP_CLOSE_FLAG_FORCE} is then refused as "already closed") and
     * destroys it when the peer answers the disconnect, or in {@code ucp_worker_destroy}
     * ({@code ucp_worker_destroy_eps}), and {@code ucp_ep_destroy_base} asserts the list is empty: an
     * abort on UCX builds with assertions (ucp_ep.c:437 in 1.13.1). Which receive matched which peer UCX
     * does not say, so any receive counts. A flush close needs no such care for receives that match
     * later: UCX refuses a rendezvous from an endpoint already closed (rndv.c,
     * {@code UCP_WORKER_GET_VALID_EP_BY_ID}), failing that receive at once.
     */
    private void closeGracefully(UcxFuture<Void> f, TimerQueue.Timer guard, long flushBy) {
        if (failedWhileClosing) {
            submitClose(CloseMode.FORCE, f, guard);
            return;
        }
        if (!rt.receiveMayBeListedOnOwnEndpoint()) {
            // Nothing UCX could list on this endpoint (no peer error handling: its request ids are direct).
            submitClose(CloseMode.FLUSH, f, guard);
            return;
        }
        // The flush gets what is left of the close timeout after the drain, and at least half of it, so
        // that a slow drain does not turn the close into a forced one with nothing flushed (drain and
        // flush together stay within the guard's twice the close timeout).
        long left = Math.max(
                flushBy - System.nanoTime(),
                endpoint.worker().options().closeTimeout().toNanos() / 2);
        LOG.debug("endpoint to {}: UCX holds receives; flushing, then closing by force", describePeer());
        boolean[] submitted = new boolean[1];
        Runnable force = () -> {
            if (!submitted[0]) {
                submitted[0] = true;
                submitClose(CloseMode.FORCE, f, guard);
            }
        };
        TimerQueue.Timer flushTimer = rt.timers.schedule(left, force);
        UcxFuture<Void> flushed = new UcxFuture<>();
        Operation op = flushed.track(rt, OperationKind.ENDPOINT_FLUSH, this, 0);
        // Whatever the flush's outcome (a failed endpoint fails it), the close is forced next round:
        // its completion may come from inside a UCX callback, where no endpoint may be closed.
        flushed.whenComplete((v, e) -> rt.engine.later(() -> {
            flushTimer.cancel();
            force.run();
        }));
        endpoint.submitFlush(op);
    }

    /** Calls {@code ucp_ep_close_nbx}; lock held, outside UCX callbacks. */
    private void submitClose(CloseMode requested, UcxFuture<Void> f, TimerQueue.Timer guard) {
        // UCX refuses a forced close without peer error handling (UCS_ERR_INVALID_PARAM).
        CloseMode mode = endpoint.worker().options().peerErrorHandling() ? requested : CloseMode.FLUSH;
        OperationTable table = rt.operations;
        if (mode == CloseMode.FORCE) {
            UcxCanceledException closed =
                    new UcxCanceledException("endpoint close", "endpoint to " + describePeer() + " closed");
            for (Operation op : operations.snapshot()) {
                table.abort(op, closed);
            }
        }
        // UCX's close completes 'released'; the bookkeeping runs first, then 'f', so whoever waits on
        // the close sees the endpoint already gone from the worker.
        UcxFuture<Void> released = new UcxFuture<>();
        Operation op = released.track(rt, OperationKind.ENDPOINT_CLOSE, null, 0);
        MemorySegment p = table.param(
                op, Upcalls.SEND, OperationTable.OP_ATTR_FIELD_FLAGS, mode == CloseMode.FORCE ? CLOSE_FLAG_FORCE : 0);
        MemorySegment r;
        try {
            r = Ucp.epCloseNbx(endpoint.handle, p);
        } catch (Throwable t) {
            table.failUnsubmitted(op, t);
            r = null;
        }
        released.whenComplete((v, e) -> {
            guard.cancel();
            state = State.CLOSED;
            endpoint.worker().endpointClosed(endpoint);
            if (e != null) {
                f.fail(e);
            } else {
                f.succeed(null);
            }
        });
        if (r != null) {
            table.started(op, r, null);
        }
    }
}
