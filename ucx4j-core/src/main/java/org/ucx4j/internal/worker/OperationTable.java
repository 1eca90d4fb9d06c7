package org.ucx4j.internal.worker;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxCanceledException;
import org.ucx4j.UcxException;
import org.ucx4j.UcxStatus;
import org.ucx4j.internal.IdTable;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;

/**
 * A worker's in-flight operations: registration under the id that UCX's user data carries, the request
 * parameters of each submission, and completion (request freed, heap receives copied back, staging
 * freed, future completed), whether UCX completes an operation at once, through a callback, or the
 * worker fails it for an outside reason.
 *
 * <p>Threading: lock holder only (the worker's progress lock), except {@link #size()} readers that
 * accept a stale value.
 */
public final class OperationTable {
    private static final Logger LOG = LoggerFactory.getLogger(OperationTable.class);

    // ucp_request_param_t fields and flags.
    static final int OP_ATTR_FIELD_CALLBACK = 1 << 1;
    static final int OP_ATTR_FIELD_USER_DATA = 1 << 2;
    static final int OP_ATTR_FIELD_DATATYPE = 1 << 3;
    /** {@code UCP_OP_ATTR_FIELD_FLAGS}: the call's flags are set. */
    public static final int OP_ATTR_FIELD_FLAGS = 1 << 4;

    public static final int OP_ATTR_FIELD_RECV_INFO = 1 << 7;
    /** {@code UCP_OP_ATTR_FIELD_MEMORY_TYPE}: the data buffer's memory type is given (staged or declared). */
    static final int OP_ATTR_FIELD_MEMORY_TYPE = 1 << 6;
    /** {@code UCP_OP_ATTR_FLAG_NO_IMM_CMPL}: always complete through the callback. */
    public static final int OP_ATTR_FLAG_NO_IMM_CMPL = 1 << 16;

    private static final long P_OP_ATTR = Structs.offset(Structs.UCP_REQUEST_PARAM, "op_attr_mask");
    private static final long P_FLAGS = Structs.offset(Structs.UCP_REQUEST_PARAM, "flags");
    private static final long P_CB = Structs.offset(Structs.UCP_REQUEST_PARAM, "cb");
    private static final long P_USER_DATA = Structs.offset(Structs.UCP_REQUEST_PARAM, "user_data");
    private static final long P_DATATYPE = Structs.offset(Structs.UCP_REQUEST_PARAM, "datatype");
    static final long P_RECV_INFO = Structs.offset(Structs.UCP_REQUEST_PARAM, "recv_info");
    private static final long P_MEMORY_TYPE = Structs.offset(Structs.UCP_REQUEST_PARAM, "memory_type");
    /** {@code ucp_dt_make_iov()}. */
    static final long DATATYPE_IOV = 2;

    private final MemorySegment workerHandle;
    private final int workerId;
    /** Scratch {@code ucp_request_param_t}, filled for one submission at a time. */
    private final MemorySegment param;

    /**
     * Bytes from which an operation counts as bulk: while one is in flight a thread-blocking progress
     * thread polls a while before it sleeps ({@link ProgressEngine#BULK_SPIN_NANOS}). Bulk are sends and
     * RMA of this size, and receives of this size into memory that UCX reports as not host memory (GPU
     * memory: with cuda_ipc the receiver drives the rendezvous copy, whose completion the event fd
     * announces late). A host-memory receive does not count: it may wait for its message indefinitely,
     * and polling on every unrelated event meanwhile would cost a core; the host transports that fill it
     * announce their progress on the event fd.
     */
    public static final long BULK_BYTES = 64 * 1024;

    private static final long RA_FIELD_MASK = Structs.offset(Structs.UCP_REQUEST_ATTR, "field_mask");
    private static final long RA_MEM_TYPE = Structs.offset(Structs.UCP_REQUEST_ATTR, "mem_type");
    /** {@code UCP_REQUEST_ATTR_FIELD_MEM_TYPE}. */
    private static final long REQUEST_ATTR_FIELD_MEM_TYPE = 1L << 3;
    /** {@code UCS_MEMORY_TYPE_HOST}. */
    private static final int MEMORY_TYPE_HOST = 0;

    private final IdTable<Operation> ops = new IdTable<>(64);
    /** Scratch {@code ucp_request_attr_t} for {@link #countsAsBulk}. */
    private final MemorySegment requestAttr;
    /** In-flight operations counted as bulk ({@link Operation#bulk}). */
    private int bulk;
    /** Scratch {@code ucp_tag_recv_info_t} (the worker's): where a polled receive's info is read. */
    private final MemorySegment tagInfo;

    private static final long TAG_INFO_SENDER_TAG = Structs.offset(Structs.UCP_TAG_RECV_INFO, "sender_tag");
    private static final long TAG_INFO_LENGTH = Structs.offset(Structs.UCP_TAG_RECV_INFO, "length");
    /** Polled operations with a live request ({@link #pollRequests}), the first {@link #polledCount}. */
    private Operation[] polled = new Operation[4];

    private int polledCount;
    /** Set while the worker is being destroyed: late callbacks must not free requests again. */
    private boolean destroying;

    OperationTable(
            MemorySegment workerHandle,
            int workerId,
            MemorySegment param,
            MemorySegment requestAttr,
            MemorySegment tagInfo) {
        this.workerHandle = workerHandle;
        this.workerId = workerId;
        this.param = param;
        this.requestAttr = requestAttr;
        this.tagInfo = tagInfo;
    }

    /** The sender's tag and the length in a {@code ucp_tag_recv_info_t}. */
    static TagInfo readTagInfo(MemorySegment info) {
        return new TagInfo(info.get(JAVA_LONG, TAG_INFO_SENDER_TAG), info.get(JAVA_LONG, TAG_INFO_LENGTH));
    }

    /** Registers an operation and returns its user-data word. */
    long register(Operation op) {
        int slot = ops.add(op);
        op.id = slot;
        if (op.length >= BULK_BYTES && !op.kind.awaitsPeer()) {
            op.bulk = true;
            bulk++;
        }
        if (op.owner != null) {
            op.owner.operations().link(op);
        }
        return Upcalls.word(workerId, slot);
    }

    /**
     * Registers {@code op} and fills the scratch request parameters for a callback-driven request.
     *
     * @param callback the upcall stub ({@link Upcalls})
     * @param extraAttrs more {@code op_attr_mask} bits
     * @param flags the call's flags
     * @return the parameters to pass to the {@code *_nbx} call
     */
    public MemorySegment param(Operation op, MemorySegment callback, int extraAttrs, int flags) {
        long userData = register(op);
        MemorySegment p = param;
        // A polled operation (callback null) gets no callback: UCX must not call a null one.
        int callbackAttrs = callback == null ? 0 : OP_ATTR_FIELD_CALLBACK | OP_ATTR_FIELD_USER_DATA;
        p.set(JAVA_INT, P_OP_ATTR, callbackAttrs | extraAttrs);
        if ((extraAttrs & OP_ATTR_FIELD_MEMORY_TYPE) != 0) {
            p.set(JAVA_INT, P_MEMORY_TYPE, op.knownMemoryType());
        }
        p.set(JAVA_INT, P_FLAGS, flags);
        p.set(ADDRESS, P_CB, callback == null ? MemorySegment.NULL : callback);
        p.set(JAVA_LONG, P_USER_DATA, userData);
        return p;
    }

    /** Like {@link #param} for a scatter-gather request (datatype iov). */
    MemorySegment iovParam(Operation op, MemorySegment callback, int extraAttrs, int flags) {
        MemorySegment p = param(op, callback, OP_ATTR_FIELD_DATATYPE | extraAttrs, flags);
        p.set(JAVA_LONG, P_DATATYPE, DATATYPE_IOV);
        return p;
    }

    /**
     * Handles what an {@code *_nbx} call returned: NULL (done now), an error code, or a request.
     *
     * @param immediateValue the result when UCX completed the operation at once
     */
    public void started(Operation op, MemorySegment statusPtr, Object immediateValue) {
        started(op, statusPtr.address(), immediateValue);
    }

    /**
     * Like {@link #started(Operation, MemorySegment, Object)} with the status pointer as a word (as the
     * {@code Ucp} methods of the calls made once per message return it).
     */
    void started(Operation op, long raw, Object immediateValue) {
        if (op.isDone()) {
            // UCX already called back inside the *_nbx call (NO_IMM_CMPL) and freed the request it returns.
            return;
        }
        if (raw == 0) {
            finish(op, UcxStatus.OK.code(), immediateValue);
        } else if (Long.compareUnsigned(raw, -100L) >= 0) {
            finish(op, (int) raw, null);
        } else {
            op.request = raw;
            if (!op.bulk && op.length >= BULK_BYTES && countsAsBulk(raw)) {
                op.bulk = true;
                bulk++;
            }
            if (op.polled()) {
                if (completeIfDone(op)) {
                    return; // done inside the call (a receive of a message that was here, on UCX < 1.16)
                }
                addPolled(op);
            }
            if (op.cancelRequested || op.overrideFailure != null) {
                cancelRequest(op);
            }
        }
    }

    private void addPolled(Operation op) {
        if (polledCount == polled.length) {
            polled = java.util.Arrays.copyOf(polled, polledCount * 2);
        }
        polled[polledCount++] = op;
    }

    /** Takes {@code op} off the list, if it is there (one completed inside its call never was). */
    private void removePolled(Operation op) {
        for (int i = polledCount - 1; i >= 0; i--) {
            if (polled[i] == op) {
                polled[i] = polled[--polledCount];
                polled[polledCount] = null;
                return;
            }
        }
    }

    /**
     * Lock holder, after UCX progress: completes the polled operations whose requests UCX has finished
     * (they have no callback: {@link PolledOperation}), whoever started them, so that one whose waiting
     * thread gave up (interrupted) is completed and leaves the table all the same.
     *
     * @return how many completed
     */
    int pollRequests() {
        int n = 0;
        for (int i = polledCount - 1; i >= 0; i--) {
            // A completed one is released: the last entry (already looked at, going down) moves into slot i.
            if (completeIfDone(polled[i])) {
                n++;
            }
        }
        return n;
    }

    /** Lock holder: completes a polled operation if UCX has finished its request; returns whether it did. */
    private boolean completeIfDone(Operation op) {
        long req = op.request;
        boolean receive = op.kind.tagReceive();
        int status =
                NativeCalls.callInt(() -> receive ? Ucp.tagRecvRequestTest(req, tagInfo) : Ucp.requestCheckStatus(req));
        if (status == UcxStatus.INPROGRESS.code()) {
            return false;
        }
        finish(op, status, receive && status == UcxStatus.OK.code() ? readTagInfo(tagInfo) : null);
        return true;
    }

    /** Fails an operation that could not even be submitted (registered or not). */
    public void failUnsubmitted(Operation op, Throwable t) {
        if (op.id >= 0) {
            release(op);
        }
        Buffers.freeAll(op);
        op.fail(t);
    }

    /** The caller asked to cancel {@code op}; {@code reason} is what its future fails with if it does. */
    void cancel(Operation op, UcxException reason) {
        if (op.isDone() || op.cancelRequested) {
            return;
        }
        op.cancelRequested = true;
        op.cancelReason = reason;
        if (op.request != 0) {
            cancelRequest(op);
        }
    }

    /** Cancels or fails an operation for an outside reason (endpoint failure, close). */
    public void abort(Operation op, UcxException reason) {
        if (op.overrideFailure == null) {
            op.overrideFailure = reason;
        }
        if (op.request != 0) {
            cancelRequest(op);
        }
    }

    private void cancelRequest(Operation op) {
        long req = op.request;
        NativeCalls.invoke(() -> {
            Ucp.requestCancel(workerHandle, req);
        });
    }

    /** Completes an operation: bookkeeping first, then the future. */
    void finish(Operation op, int status, Object value) {
        freeRequest(op);
        release(op);
        boolean ok = status == UcxStatus.OK.code();
        if (ok && op.copyBackTo != null && op.staging != null) {
            copyBack(op, value);
        }
        Buffers.freeAll(op);
        if (ok) {
            op.succeed(value);
        } else if (op.overrideFailure != null) {
            op.fail(op.overrideFailure);
        } else if (status == UcxStatus.MESSAGE_TRUNCATED.code()) {
            op.fail(new UcxException(
                    op.kind.call(),
                    status,
                    "the incoming message is larger than the " + op.length + "-byte receive buffer"));
        } else if (status == UcxStatus.CANCELED.code() && op.cancelRequested) {
            op.fail(
                    op.cancelReason != null
                            ? op.cancelReason
                            : new UcxCanceledException(op.kind.call(), status, "canceled by the caller"));
        } else {
            op.fail(UcxException.of(op.kind.call(), status, op.describe()));
        }
    }

    /** A receive into heap memory: copies what arrived from the staging copy. */
    private static void copyBack(Operation op, Object value) {
        long received;
        if (value instanceof TagInfo info) {
            received = info.length();
        } else if (value instanceof Long len) {
            received = len;
        } else if (op.kind == OperationKind.GET) {
            received = op.copyBackTo.byteSize(); // RMA get: UCX filled the whole staging buffer.
        } else {
            return;
        }
        MemorySegment.copy(op.staging, 0, op.copyBackTo, 0, Math.min(received, op.copyBackTo.byteSize()));
    }

    private static void freeRequest(Operation op) {
        if (op.request != 0) {
            long req = op.request;
            op.request = 0;
            NativeCalls.invoke(() -> {
                Ucp.requestFree(req);
            });
        }
    }

    /**
     * Whether a large receive's request counts as bulk: UCX reports its memory as not host memory (or
     * cannot say; polling then is the safe side).
     */
    private boolean countsAsBulk(long request) {
        requestAttr.set(JAVA_LONG, RA_FIELD_MASK, REQUEST_ATTR_FIELD_MEM_TYPE);
        int status = NativeCalls.callInt(() -> Ucp.requestQuery(request, requestAttr));
        return status != UcxStatus.OK.code() || requestAttr.get(JAVA_INT, RA_MEM_TYPE) != MEMORY_TYPE_HOST;
    }

    private void release(Operation op) {
        if (op.polled()) {
            removePolled(op);
        }
        if (op.id >= 0 && ops.remove(op.id, op) && op.bulk) {
            op.bulk = false;
            bulk--;
        }
        if (op.owner != null) {
            op.owner.operations().unlink(op);
        }
    }

    /** Whether a bulk operation ({@link #BULK_BYTES}) is in flight. Lock holder. */
    boolean bulkInFlight() {
        return bulk > 0;
    }

    /**
     * Whether UCX holds a receive that may have matched a rendezvous message
     * ({@link OperationKind#mayMatchRendezvous}): one it accepted and has not completed. Lock holder.
     */
    public boolean receivesHeldByUcx() {
        for (Operation op : ops.all()) {
            if (op.kind.mayMatchRendezvous() && op.request != 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Asks UCX to cancel every receive it holds that may match a rendezvous message; those that have not
     * matched complete at once (as canceled, or with {@code reason} when nothing else applies), those
     * that have stay. For a receive that reached UCX after the owner's own cancellations (it was
     * submitted while the worker closed). Lock holder.
     */
    public void cancelHeldReceives(UcxException reason) {
        for (Operation op : ops.all()) {
            if (op.kind.mayMatchRendezvous() && op.request != 0) {
                abort(op, reason);
            }
        }
        pollRequests(); // a polled receive has no callback: its canceled request is found here
    }

    /** The number of operations in flight. */
    public int size() {
        return ops.size();
    }

    /** A snapshot of every in-flight operation. */
    public List<Operation> pending() {
        return ops.all();
    }

    /**
     * Completes the operation that UCX's callback names, or hands back a request whose operation is
     * gone (freed, unless the worker is being destroyed).
     */
    void complete(int opId, long request, int status, Object value) {
        Operation op = ops.get(opId);
        if (op != null) {
            op.request = request;
            finish(op, status, value);
            return;
        }
        if (!destroying) {
            LOG.warn("UCX completion for unknown operation {} on worker {}", opId, workerId);
            NativeCalls.invoke(() -> {
                Ucp.requestFree(request);
            });
        }
    }

    /**
     * Before the worker is destroyed: hands every outstanding request back to UCX and fails every
     * operation. Destroying a worker (or an endpoint) whose requests the user still holds trips an
     * assertion in UCX 1.13; UCX may still call back for them while it destroys the worker, and
     * {@link #destroying} stops those callbacks from freeing again.
     */
    void failAllForDestroy() {
        destroying = true;
        for (Operation op : pending()) {
            freeRequest(op);
            release(op);
            Buffers.freeAll(op);
            op.fail(failureAtClose(op));
        }
    }

    /**
     * Instead of {@link #failAllForDestroy} when the worker is left undestroyed ({@code NativeWorker.destroy}):
     * fails every operation, but leaves UCX the requests it holds and the native blocks they use (a
     * staged heap receive's copy may still be written), which stay allocated with the worker.
     */
    void failAllForAbandon() {
        destroying = true;
        for (Operation op : pending()) {
            boolean held = op.request != 0;
            release(op);
            if (!held) {
                Buffers.freeAll(op);
            }
            op.fail(failureAtClose(op));
        }
    }

    private static UcxException failureAtClose(Operation op) {
        return op.overrideFailure != null
                ? op.overrideFailure
                : new UcxCanceledException(op.kind.call(), UcxStatus.CANCELED.code(), "worker closed");
    }
}
