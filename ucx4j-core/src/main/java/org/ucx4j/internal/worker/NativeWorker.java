package org.ucx4j.internal.worker;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxCanceledException;
import org.ucx4j.UcxException;
import org.ucx4j.UcxStatus;
import org.ucx4j.WorkerOptions;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.NativeLinker;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.UcsVfs;
import org.ucx4j.internal.Upcalls;

/**
 * A UCX worker ({@code ucp_worker_h}) and the parts that run it: its {@link ProgressEngine} (lock,
 * queue, progress thread, waits), its {@link OperationTable} (in-flight operations), its
 * {@link TimerQueue}, and the {@link UpcallDispatcher} registered with {@link Upcalls}. The public
 * {@code UcxWorker}, {@code UcxEndpoint} and friends are facades over this.
 *
 * <p>Ownership: owns the native worker and the scratch memory; {@link #destroy()} frees both, once
 * (or, when UCX could abort in the destruction, leaves both allocated: see there).
 *
 * <p>Threading: see {@link ProgressEngine}. The scratch structs are for the lock holder only.
 */
public final class NativeWorker {

    private final Arena arena = Arena.ofShared();
    /** The {@code ucp_worker_h}. */
    public final MemorySegment handle;
    /** The id in the upper half of this worker's UCX user data. */
    public final int id;
    /** Drives progress; the lock every UCX call on this worker is made under. */
    public final ProgressEngine engine;
    /** The in-flight operations. */
    public final OperationTable operations;
    /** Connect and close timeouts. */
    public final TimerQueue timers = new TimerQueue();

    /** Size of {@link #discardBuffer}: a longer message is received truncated, which drops it. */
    public static final long DISCARD_BUFFER_BYTES = 64;

    private final UpcallDispatcher upcalls;
    /** Scratch {@code ucp_tag_recv_info_t}. Lock holder only. */
    public final MemorySegment tagInfo;
    /** Scratch length out-parameter. Lock holder only. */
    public final MemorySegment lengthOut;
    /** Scratch {@code sockaddr_storage}. Lock holder only. */
    public final MemorySegment sockaddr;
    /**
     * Where discarded tag messages go ({@code UcxWorker.tagDiscard}): written by UCX, never read; lives
     * until the worker is destroyed, so a discard still in flight never writes into freed memory.
     */
    public final MemorySegment discardBuffer;
    /** Zeroed {@code ucp_request_param_t} (no callback: the request is freed at once). Never written. */
    public final MemorySegment noCallbackParam;
    /** The worker's close timeout: how long {@link #destroy()} waits for queued wireup messages. */
    private final long closeTimeoutNanos;
    /** Whether the worker's endpoints use peer error handling (UCX then lists their requests: destroy()). */
    private final boolean peerErrorHandling;
    /** Whether the worker's address was handed out: peers may have connected to it. */
    private volatile boolean addressExported;
    /** Set by {@link #destroy()} when it leaves the UCX worker undestroyed; lock holder. */
    private String abandonReason;

    /**
     * Creates the UCX worker (serialized thread mode), registers its upcalls and starts its progress
     * thread (unless {@link ProgressMode#CALLER}). Frees what it made if it fails half-way.
     *
     * @param contextHandle the {@code ucp_context_h}
     * @param options the worker's options; {@code name()} names the thread
     * @param events where endpoint, listener and active-message upcalls go
     * @throws UcxException when UCX refuses (naming the call)
     */
    public NativeWorker(MemorySegment contextHandle, WorkerOptions options, WorkerEvents events) {
        this.closeTimeoutNanos = options.closeTimeout().toNanos();
        this.peerErrorHandling = options.peerErrorHandling();
        MemorySegment param = scratch(Structs.UCP_REQUEST_PARAM);
        this.tagInfo = scratch(Structs.UCP_TAG_RECV_INFO);
        this.lengthOut = scratch(JAVA_LONG);
        this.sockaddr = arena.allocate(Structs.SOCKADDR_STORAGE_SIZE, 8);
        this.discardBuffer = arena.allocate(DISCARD_BUFFER_BYTES, 8);
        this.noCallbackParam = arena.allocate(Structs.UCP_REQUEST_PARAM);
        MemorySegment pointerOut = arena.allocate(ADDRESS);
        MemorySegment params = arena.allocate(Structs.UCP_WORKER_PARAMS);
        // UCP_WORKER_PARAM_FIELD_THREAD_MODE: SERIALIZED, since whichever thread holds the lock calls UCX.
        params.set(JAVA_LONG, Structs.offset(Structs.UCP_WORKER_PARAMS, "field_mask"), 1L);
        params.set(JAVA_INT, Structs.offset(Structs.UCP_WORKER_PARAMS, "thread_mode"), 1);
        int status = NativeCalls.callInt(() -> Ucp.workerCreate(contextHandle, params, pointerOut));
        if (status != UcxStatus.OK.code()) {
            arena.close();
            throw UcxException.of("ucp_worker_create", status, "worker '" + options.name() + "'");
        }
        this.handle = pointerOut.get(ADDRESS, 0);
        MemorySegment fdOut = arena.allocate(JAVA_INT);
        status = NativeCalls.callInt(() -> Ucp.workerGetEfd(handle, fdOut));
        if (status != UcxStatus.OK.code()) {
            NativeCalls.invoke(() -> {
                Ucp.workerDestroy(handle);
            });
            arena.close();
            throw UcxException.of("ucp_worker_get_efd", status, "the context needs Feature.WAKEUP");
        }
        this.engine = new ProgressEngine(
                handle,
                fdOut.get(JAVA_INT, 0),
                options.progressMode(),
                options.spin().toNanos(),
                timers);
        // The table needs the id (it is in every user-data word), the id needs the dispatcher: the
        // dispatcher gets the table before anything can call back (nothing has been posted yet).
        this.upcalls = new UpcallDispatcher(events, options.name());
        this.id = Upcalls.register(upcalls);
        this.operations = new OperationTable(handle, id, param, scratch(Structs.UCP_REQUEST_ATTR), tagInfo);
        upcalls.attach(operations);
        engine.pollWhileBulk(operations::bulkInFlight);
        engine.pollRequests(operations::pollRequests);
        engine.deferInsideCallbacks(upcalls::inUpcall);
        engine.start(options.name() + "-progress");
    }

    /**
     * Scratch memory written and read on every operation, by the lock holder only: a global-scope view of
     * the worker's arena. A segment of the shared arena itself costs a liveness check on every access
     * (downcalls take raw addresses: {@code Ucp}); the view does not. It is safe because nothing touches it
     * once the worker is destroyed: the lock holder checks {@code destroyed} first, and the arena closes
     * after the destruction's last locked drain ({@link #destroy}).
     */
    private MemorySegment scratch(MemoryLayout layout) {
        return NativeLinker.view(MemorySegment.ofAddress(arena.allocate(layout).address()), layout.byteSize());
    }

    /**
     * Whether the current thread is inside a UCX callback. UCX is then in the middle of its own work on
     * the objects involved (for an error callback: tearing down the failed endpoint), so calls that
     * destroy objects must wait for the next round ({@link ProgressEngine#later}); UCX 1.13 aborts
     * otherwise.
     */
    public boolean inUpcall() {
        return engine.inCallbackContext() && upcalls.inUpcall();
    }

    /**
     * A {@code *_nbx} call, given its operation and the filled request parameters; returns UCX's status
     * pointer. The hot calls (a contiguous tag send or receive) are constants that read their arguments
     * from the operation ({@link Operation#arguments}), so a message allocates no call object; the others
     * capture theirs.
     */
    @FunctionalInterface
    public interface NbxCall {
        /**
         * Makes the call.
         *
         * @param op the operation being submitted
         * @param param the operation's {@code ucp_request_param_t}
         * @return UCX's status pointer as a word (a {@code long}, as {@code Ucp}'s methods return it)
         * @throws Throwable what the downcall declares
         */
        long call(Operation op, MemorySegment param) throws Throwable;
    }

    /**
     * Runs an operation's submission with the lock held; if it throws, the operation fails with that
     * exception instead of being lost; if the worker closed before it could run, the operation fails with
     * an {@link IllegalStateException} saying so.
     */
    public void submit(Operation op, Runnable task) {
        executeOrFail(op, () -> {
            try {
                task.run();
            } catch (Throwable t) {
                if (!op.isDone()) {
                    operations.failUnsubmitted(op, t);
                }
            }
        });
    }

    /**
     * Hands {@code task} to the engine; if the worker closed between the caller's open check and here,
     * the task never ran and never will, so the operation fails now (nothing of it reached UCX or the
     * table, and its staging buffers are freed).
     */
    private void executeOrFail(Operation op, Runnable task) {
        try {
            engine.execute(task);
        } catch (IllegalStateException workerClosed) {
            if (!op.isDone()) {
                operations.failUnsubmitted(op, workerClosed);
            }
        }
    }

    /**
     * Submits one operation: with the lock held, checks its endpoint (if any) admits it, fills the
     * request parameters (contiguous or scatter-gather), calls UCX and tracks what it returned. Any
     * failure on the way fails the operation instead of losing it, and so does a worker that closed
     * before the submission could run.
     *
     * @param iov whether the buffer is a scatter-gather list
     * @param callback the upcall stub
     * @param attrs more {@code op_attr_mask} bits
     * @param flags the call's flags
     * @param call the {@code *_nbx} call
     */
    public void startOp(Operation op, boolean iov, MemorySegment callback, int attrs, int flags, NbxCall call) {
        // The operation is its own submission task: no task object per message.
        op.submission(iov, callback, attrs, flags, call);
        executeOrFail(op, op);
    }

    /**
     * A blocking call without a future: submits {@code op} with no UCX callback and waits on the calling
     * thread until a round (the caller's own, or the progress thread's) finds its request done
     * ({@link ProgressEngine#runPolled}). Contiguous only.
     *
     * @param op the polled operation, its arguments set ({@link Operation#arguments})
     * @param attrs more {@code op_attr_mask} bits
     * @param call the {@code *_nbx} call, a constant reading its arguments from {@code op}
     * @param what the call's name, for errors
     */
    public void runPolled(PolledOperation op, int attrs, NbxCall call, String what) {
        op.submission(false, null, attrs, 0, call);
        engine.runPolled(op, what);
    }

    /** Lock held: the body of {@link #startOp}; any failure fails the operation instead of losing it. */
    void start(Operation op, boolean iov, MemorySegment callback, int attrs, int flags, NbxCall call) {
        try {
            if (op.owner != null && !op.owner.admit(op)) {
                return;
            }
            // A heap buffer is staged in malloc'd memory, and a caller may declare a native buffer's kind:
            // UCX is told the memory type, which spares it the detection it does per operation where GPU
            // transports are loaded (a cache lookup under a lock, and on an H200 machine a query of the
            // driver for receive buffers).
            int known = op.knownMemoryType() >= 0 ? OperationTable.OP_ATTR_FIELD_MEMORY_TYPE : 0;
            MemorySegment p = iov
                    ? operations.iovParam(op, callback, attrs, flags)
                    : operations.param(op, callback, attrs | known, flags);
            boolean tagInfoNow = (attrs & OperationTable.OP_ATTR_FIELD_RECV_INFO) != 0 && op.kind.tagReceive();
            if (tagInfoNow) {
                p.set(ADDRESS, OperationTable.P_RECV_INFO, tagInfo);
            }
            long r;
            try {
                r = call.call(op, p);
            } catch (Throwable t) {
                operations.failUnsubmitted(op, t);
                return;
            }
            Object immediate = null;
            if (r == 0 && tagInfoNow) {
                immediate = readTagInfo();
            } else if (r == 0 && op.kind.lengthOnImmediateCompletion()) {
                immediate = lengthOut.get(JAVA_LONG, 0);
            }
            operations.started(op, r, immediate);
        } catch (Throwable t) {
            if (op.isDone()) {
                return;
            }
            if (op.request != 0) {
                // UCX holds a live request and reads the buffers: cancel it; its callback completes the
                // operation (and frees the staging) once UCX is done with them.
                operations.abort(
                        op,
                        new UcxException(op.kind.call(), UcxStatus.CANCELED.code(), "failed after UCX accepted it", t));
            } else {
                operations.failUnsubmitted(op, t);
            }
        }
    }

    /** Lock holder: the sender's tag and the length UCX left in {@link #tagInfo} (a probe, a receive done at once). */
    public TagInfo readTagInfo() {
        return OperationTable.readTagInfo(tagInfo);
    }

    /**
     * Cancels an operation on the caller's behalf. Any thread. Queued for the next round rather than run
     * inline: UCX completes a canceled receive at once, and its future's continuations must run where the
     * threading contract says (the progress thread), not on whichever thread asked.
     */
    void cancel(Operation op, UcxException reason) {
        engine.later(() -> operations.cancel(op, reason));
    }

    /**
     * Records that this worker's address left it ({@code UcxWorker.address()}): from then on a peer may
     * connect to it, and UCX makes endpoints of its own for such peers (see {@link #destroy()}). Any thread.
     */
    public void addressExported() {
        addressExported = true;
    }

    /** Why {@link #destroy()} left the UCX worker undestroyed, for the owner's warning; null if it did not. */
    public String abandonReason() {
        return abandonReason;
    }

    /**
     * Stops the progress thread, fails whatever is still pending, destroys the UCX worker and frees the
     * scratch memory. Call once, after the owner has closed what it could.
     *
     * <p>Except when UCX still holds a receive that may have matched a rendezvous message
     * ({@link OperationTable#receivesHeldByUcx}): UCX may track it on an endpoint that could only be
     * closed gracefully (one whose flush close was under way, or one made by UCX for a peer that connected
     * to this worker's address), and {@code ucp_worker_destroy}
     * destroys such an endpoint with the request still listed, which aborts the process on UCX builds
     * with assertions ({@code ucp_ep_destroy_base}, ucp_ep.c:437 in 1.13.1). Then the operations are
     * failed all the same, but the UCX worker, the scratch memory, the native blocks of the requests UCX
     * holds and the upcall id are left allocated (a warning says so); nothing progresses the worker again.
     * Without peer error handling UCX lists no request on an endpoint (its ids are direct), so there such
     * a receive is failed and the worker destroyed as usual, unless its address was handed out (a peer
     * that connected to it may have asked for error handling on the endpoint UCX made for it).
     *
     * <p>And except, before UCX 1.14, when a wireup message may be stuck ({@link #wireupSettled}): a
     * worker whose address was handed out may hold endpoints that UCX made for peers that connected to
     * it; answering such a peer's wireup request, UCX queues its reply on the transport endpoint itself
     * (not on a wireup proxy) while that transport is not connected yet ({@code ucp_wireup_process_request},
     * wireup.c: with no point-to-point lane the lanes are plain; a tcp endpoint waits for the peer's
     * acknowledgement of its connection, {@code uct_tcp_ep_check_tx_res}). A peer that stalls there leaves
     * the reply queued, and {@code ucp_worker_destroy} purges it ({@code ucp_worker_destroy_eps} ->
     * {@code ucp_ep_err_pending_purge} -> {@code ucp_request_send_state_ff}), which asserts that only
     * EP_REMOVED, EP_CHECK or ACK messages are purged that way: an abort (ucp_request.c:684 in 1.13.1;
     * UCX removed the assertion in 1.14, commit 9ccaf31). So every endpoint UCX holds for this worker is
     * flushed, within the close timeout: a flush queues behind the reply and completes only once nothing
     * is queued. If one does not, the worker is left undestroyed as above. That wait progresses the worker
     * on the closing thread, so callbacks (of operations, of active-message handlers) may run there, and
     * a rendezvous that arrives meanwhile may leave a receive held: the check for such receives is made
     * again after it.
     *
     * @return true when the UCX worker was destroyed, false when it was left undestroyed
     */
    public boolean destroy() {
        engine.stop();
        boolean[] abandoned = new boolean[1];
        try {
            engine.runLockedAfterDrain(() -> {
                if (receivesStuck()) {
                    abandonReason = "UCX still holds a receive that matched a rendezvous message whose sender"
                            + " never finished it, on an endpoint that could not be closed by force";
                } else if (!wireupSettled()) {
                    abandonReason = "a peer that connected to its address stalled during the connection's"
                            + " setup, and UCX (before 1.14) still queues a wireup message to it";
                } else if (receivesStuck()) {
                    // wireupSettled progressed the worker: a rendezvous that arrived meanwhile (an active
                    // message's data its handler fetched) may now be held the same way.
                    abandonReason = "UCX still holds a receive that matched a rendezvous message during the"
                            + " worker's close, from a peer that then stalled";
                }
                if (abandonReason != null) {
                    abandoned[0] = true;
                    operations.failAllForAbandon();
                    return;
                }
                operations.failAllForDestroy();
                NativeCalls.invoke(() -> {
                    Ucp.workerDestroy(handle);
                });
                Upcalls.unregister(id);
            });
        } finally {
            if (!abandoned[0]) {
                arena.close();
            }
        }
        return !abandoned[0];
    }

    /**
     * Cancels the receives UCX still holds ({@link OperationTable#cancelHeldReceives}) and tells whether
     * one remains that UCX may list on any of this worker's endpoints ({@link #receiveMayBeListedOnAnyEndpoint}),
     * where {@code ucp_worker_destroy} would meet it. Without peer error handling and with the address never
     * handed out, such a receive is failed and the worker destroyed as usual. Lock held, progress stopped.
     */
    private boolean receivesStuck() {
        // A receive that reached UCX after the owner's cancellations has not matched, most likely.
        operations.cancelHeldReceives(
                new UcxCanceledException("worker close", UcxStatus.CANCELED.code(), "worker closed"));
        return receiveMayBeListedOnAnyEndpoint();
    }

    /**
     * Whether UCX holds a receive that it may list on an endpoint this worker made itself (a
     * {@code UcxEndpoint}'s, which has the worker's error-handling mode): only with peer error handling
     * ({@link #receiveMayBeListed}). The endpoints UCX made for peers that connected to this worker's
     * address do not count: this is for the graceful close of one of the worker's own, which then closes
     * it by force after its flush (without peer error handling nothing is listed, and UCX refuses a forced
     * close anyway). Lock holder.
     */
    public boolean receiveMayBeListedOnOwnEndpoint() {
        return receiveMayBeListed(peerErrorHandling);
    }

    /**
     * Whether UCX holds a receive that it may list on any endpoint of this worker: its own with peer error
     * handling, and, once its address was handed out, those UCX made for peers that connected to it, which
     * may have asked for peer error handling on them (whether one did, UCX does not say). For
     * {@link #destroy()}, which meets every endpoint. Lock holder.
     */
    private boolean receiveMayBeListedOnAnyEndpoint() {
        return receiveMayBeListed(peerErrorHandling || addressExported);
    }

    /**
     * Whether UCX holds a receive that may have matched a rendezvous message
     * ({@link OperationTable#receivesHeldByUcx}), when the endpoints that concern the caller may use
     * indirect request ids. Such a receive's ready-to-receive request is listed on the sender's endpoint
     * ({@code proto_reqs}, {@code ucp_send_request_id_alloc}) until the peer's data arrives, but only on an
     * endpoint with indirect ids, which UCX gives to endpoints with peer error handling
     * ({@code ucp_ep_shall_use_indirect_id}); with direct ids nothing is listed. Destroying an endpoint that
     * still lists one aborts UCX builds with assertions ({@code ucp_ep_destroy_base}, ucp_ep.c:437 in
     * 1.13.1). Which receive matched which peer UCX does not say, so any held receive counts. Lock holder.
     *
     * @param indirectIds whether an endpoint that concerns the caller may use indirect request ids
     */
    private boolean receiveMayBeListed(boolean indirectIds) {
        return indirectIds && operations.receivesHeldByUcx();
    }

    /**
     * Whether {@code ucp_worker_destroy} can purge this worker's endpoints without meeting a wireup
     * request or reply queued on a plain transport endpoint (see {@link #destroy()}); lock held, progress
     * stopped. True at once on UCX 1.14 and later (the purge frees such a message) and for a worker whose
     * address never left it (UCX made no endpoint on its own, and an endpoint this worker created sends
     * its wireup request through a wireup proxy, which the purge handles). Otherwise it flushes every
     * endpoint UCX lists for the worker ({@link UcsVfs#endpointsOf}) and progresses the worker until all
     * flushes are done or the close timeout passes: false if one is still queued then, or if the
     * endpoints cannot be listed.
     */
    private boolean wireupSettled() {
        if (!addressExported || org.ucx4j.internal.UcxLibrary.require().atLeast(1, 14)) {
            return true;
        }
        java.util.Optional<java.util.List<Long>> endpoints = UcsVfs.endpointsOf(handle);
        if (endpoints.isEmpty()) {
            return false;
        }
        java.util.List<Long> requests = new java.util.ArrayList<>();
        try {
            for (long ep : endpoints.get()) {
                // No callback: the request is polled, and freed below whatever its state.
                long r;
                try {
                    r = Ucp.epFlushNbx(MemorySegment.ofAddress(ep), noCallbackParam)
                            .address();
                } catch (Throwable t) {
                    throw NativeCalls.unchecked(t);
                }
                if (r != 0 && Long.compareUnsigned(r, -100L) < 0) {
                    requests.add(r); // neither done at once nor an error status
                }
            }
            long deadline = System.nanoTime() + closeTimeoutNanos;
            while (!requests.isEmpty()) {
                requests.removeIf(r -> {
                    if (NativeCalls.callInt(() -> Ucp.requestCheckStatus(r)) == UcxStatus.INPROGRESS.code()) {
                        return false;
                    }
                    NativeCalls.invoke(() -> {
                        Ucp.requestFree(r);
                    });
                    return true;
                });
                if (requests.isEmpty() || System.nanoTime() - deadline >= 0) {
                    break;
                }
                NativeCalls.callInt(() -> Ucp.workerProgress(handle));
            }
            return requests.isEmpty();
        } finally {
            for (long r : requests) {
                NativeCalls.invoke(() -> {
                    Ucp.requestFree(r); // released by UCX when it completes, or with the worker
                });
            }
        }
    }
}
