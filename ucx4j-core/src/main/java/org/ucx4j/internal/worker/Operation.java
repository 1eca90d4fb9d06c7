package org.ucx4j.internal.worker;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.UcxException;

/**
 * One in-flight UCX operation. Lives in its worker's {@link OperationTable} from submission until UCX's
 * callback, an immediate completion, or (a polled operation: no callback) the round that finds its
 * request done.
 *
 * <p>Threading: created on any thread, then touched only while holding the worker's progress lock,
 * except for what it inherits as a queued task (its link and claim word: {@link SubmissionQueue}) and,
 * for a {@link PolledOperation}, its outcome, which the thread that waits for it reads without the lock.
 *
 * <p>Ownership: the native staging blocks it holds (copies of heap memory, an active message's header,
 * a scatter-gather list) belong to it and are freed when it completes.
 */
public class Operation extends SubmissionQueue.Task {
    private final NativeWorker worker;
    final OperationKind kind;
    /** The operation's future: ucx4j's, which users cannot complete; null for a polled operation. */
    private final CompletableFuture<?> future;
    /** How ucx4j completes it; null for a polled operation. */
    private final Completion completion;

    /** The endpoint it runs on, or null for worker-wide operations. */
    final OperationOwner owner;

    final long length;
    int id = -1;
    /** Whether {@link OperationTable} counts it as bulk ({@link OperationTable#BULK_BYTES}). */
    boolean bulk;
    /** UCX's request ({@code void *} as a word), or 0 while there is none. */
    long request;
    /** Set when the operation fails for an outside reason (endpoint failure, close) before UCX says so. */
    UcxException overrideFailure;

    boolean cancelRequested;
    /** What the future fails with when the requested cancellation takes effect (caller cancel or timeout). */
    UcxException cancelReason;
    /** A native copy of a heap buffer, freed at completion. */
    MemorySegment staging;
    /** A native copy of an active message's user header (UCX reads it until completion), freed at completion. */
    MemorySegment headerStaging;
    /** More native blocks freed at completion: a scatter-gather list and its staged heap parts. */
    List<MemorySegment> extraStaging;
    /** Where to copy received bytes back to (heap receives), or null. */
    MemorySegment copyBackTo;
    /** The buffer's {@code ucs_memory_type_t} as the caller declared it, or -1: UCX detects it. */
    private int declaredMemoryType = -1;

    Operation ownerPrev;
    Operation ownerNext;

    // What NativeWorker.startOp submits: kept here, so that the operation is its own submission task.
    private boolean iov;
    private MemorySegment callback;
    private int attrs;
    private int flags;
    private NativeWorker.NbxCall call;
    // The arguments of a constant call (NativeWorker.NbxCall): the endpoint or worker, and three words.
    private MemorySegment target;
    private long arg0;
    private long arg1;
    private long arg2;

    /**
     * Creates an operation; nothing is submitted yet.
     *
     * @param worker the worker it runs on
     * @param kind what it is
     * @param owner the endpoint it runs on, or null for a worker-wide operation
     * @param length the bytes it moves, for error messages
     * @param future the operation's future, which {@code completion} completes with its result
     * @param completion how ucx4j completes {@code future} (users cannot)
     */
    public Operation(
            NativeWorker worker,
            OperationKind kind,
            OperationOwner owner,
            long length,
            CompletableFuture<?> future,
            Completion completion) {
        this.worker = worker;
        this.kind = kind;
        this.owner = owner;
        this.length = length;
        this.future = future;
        this.completion = completion;
    }

    /** For {@link PolledOperation}: no future, no completion. */
    Operation(NativeWorker worker, OperationKind kind, OperationOwner owner, long length, Void polled) {
        this.worker = worker;
        this.kind = kind;
        this.owner = owner;
        this.length = length;
        this.future = null;
        this.completion = null;
    }

    /** Whether it is polled (no future, no UCX callback: {@link PolledOperation}). */
    boolean polled() {
        return false;
    }

    /** Completes the future with the operation's value, unless it is done. Lock holder. */
    boolean succeed(Object value) {
        return completion.succeed(future, value);
    }

    /** Fails the future, unless it is done. Lock holder. */
    boolean fail(Throwable error) {
        return completion.fail(future, error);
    }

    /** Whether the future is done. Any thread. */
    boolean isDone() {
        return future.isDone();
    }

    /**
     * Records what memory the operation's buffer is, as its caller knows it: UCX is told instead of
     * detecting it. Before the operation is started.
     */
    public void declareMemory(org.ucx4j.MemoryKind kind) {
        declaredMemoryType = kind.ucsMemoryType();
    }

    /** The buffer's memory type UCX is told, or -1: a staged heap buffer is host memory. */
    int knownMemoryType() {
        return staging != null ? org.ucx4j.MemoryKind.HOST.ucsMemoryType() : declaredMemoryType;
    }

    /** What it is. */
    public OperationKind kind() {
        return kind;
    }

    /** Keeps what {@link #run()} submits ({@link NativeWorker#startOp}); before the operation is queued. */
    void submission(boolean iov, MemorySegment callback, int attrs, int flags, NativeWorker.NbxCall call) {
        this.iov = iov;
        this.callback = callback;
        this.attrs = attrs;
        this.flags = flags;
        this.call = call;
    }

    /**
     * Keeps the arguments of a constant {@link NativeWorker.NbxCall} (one that captures nothing), before
     * the operation is started; the call reads them back with {@link #target()} and {@link #arg(int)}.
     *
     * @param target the UCX endpoint or worker the call is made on
     * @param a0 the first word (for example the buffer's address)
     * @param a1 the second (for example the tag)
     * @param a2 the third (for example the tag mask)
     */
    public void arguments(MemorySegment target, long a0, long a1, long a2) {
        this.target = target;
        this.arg0 = a0;
        this.arg1 = a1;
        this.arg2 = a2;
    }

    /**
     * The endpoint or worker of a constant call.
     *
     * @return what {@link #arguments} kept
     */
    public MemorySegment target() {
        return target;
    }

    /**
     * A word of a constant call's arguments.
     *
     * @param i 0, 1 or 2
     * @return what {@link #arguments} kept
     */
    public long arg(int i) {
        return switch (i) {
            case 0 -> arg0;
            case 1 -> arg1;
            case 2 -> arg2;
            default -> throw new IllegalArgumentException("argument " + i);
        };
    }

    /**
     * The operation's length in bytes, as it was started with.
     *
     * @return the length
     */
    public long length() {
        return length;
    }

    /**
     * Submits the operation to UCX, once, with the worker's lock held (the progress engine runs it, inline
     * or from its queue); its call is dropped afterwards, with what it captured.
     */
    @Override
    public void run() {
        NativeWorker.NbxCall c = call;
        call = null;
        worker.start(this, iov, callback, attrs, flags, c);
    }

    /**
     * Fails it before it reached UCX (refused: a closed worker, a call from inside a callback), freeing its
     * staging. The thread that made it, before it is shared.
     *
     * @param why what it fails with
     */
    void refuse(Throwable why) {
        worker.operations.failUnsubmitted(this, why);
    }

    /**
     * Requests its cancellation through UCX ({@code ucp_request_cancel}), from any thread; asynchronous: the
     * request is queued for the worker's progress thread (or the next caller-driven round), and the future
     * fails with {@code reason} only when UCX has released the request (or completes normally, if the
     * operation finished first). UCX honours cancellation for receives that have not matched yet; other
     * operations complete when UCX is done with their buffers.
     *
     * @param reason what the future fails with when the cancellation takes effect
     */
    public void cancel(UcxException reason) {
        worker.cancel(this, reason);
    }

    String describe() {
        StringBuilder sb = new StringBuilder();
        sb.append(length).append(" bytes");
        if (owner != null) {
            sb.append(", endpoint ").append(owner.describePeer());
        }
        return sb.toString();
    }
}
