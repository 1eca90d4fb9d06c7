package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.IdTable;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.Extensions;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.UpcallTarget;
import org.ucx4j.internal.Upcalls;

/**
 * The machinery behind a {@link UcxWorker}: the progress lock, the submission queue, the progress thread,
 * the table of in-flight operations, timers, and the dispatch of UCX callbacks.
 *
 * <p>Why a lock and a queue: UCX is never called concurrently on one worker (it is created
 * {@code UCS_THREAD_MODE_SERIALIZED}). Whoever holds {@link #lock} may call UCX. A thread that submits an
 * operation takes the lock if it is free and calls UCX itself (no hand-off, no wake-up); otherwise it
 * queues the task and, if the progress thread sleeps, signals it with {@code ucp_worker_signal}. Tasks
 * queued earlier always run before a caller's inline task (and before the lock holder's own, see
 * {@link #execute}), so operations reach UCX in the order they were submitted.
 * UCX callbacks only run inside UCX calls, so they always run on the lock holder: that is how
 * "inside a callback" is detected and blocking calls there are refused.
 */
final class WorkerRuntime implements UpcallTarget {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerRuntime.class);


    // ucp_request_param_t fields and flags.
    static final int OP_ATTR_FIELD_CALLBACK = 1 << 1;
    static final int OP_ATTR_FIELD_USER_DATA = 1 << 2;
    static final int OP_ATTR_FIELD_FLAGS = 1 << 4;
    static final int OP_ATTR_FIELD_RECV_INFO = 1 << 7;
    static final int OP_ATTR_FLAG_NO_IMM_CMPL = 1 << 16;
    static final long P_OP_ATTR = Structs.offset(Structs.UCP_REQUEST_PARAM, "op_attr_mask");
    static final long P_FLAGS = Structs.offset(Structs.UCP_REQUEST_PARAM, "flags");
    static final long P_CB = Structs.offset(Structs.UCP_REQUEST_PARAM, "cb");
    static final long P_USER_DATA = Structs.offset(Structs.UCP_REQUEST_PARAM, "user_data");
    static final long P_RECV_INFO = Structs.offset(Structs.UCP_REQUEST_PARAM, "recv_info");
    static final long P_DATATYPE = Structs.offset(Structs.UCP_REQUEST_PARAM, "datatype");
    static final int OP_ATTR_FIELD_DATATYPE = 1 << 3;
    /** {@code ucp_dt_make_iov()}. */
    static final long DATATYPE_IOV = 2;

    private static final int MAX_PROGRESS_PER_ROUND = 64;
    /**
     * The longest a sleeping progress thread waits without an event. UCX should wake it for every
     * event, but a forced round every so often (UCXX does one a second) turns any missed wake-up into
     * a short stall instead of a hang; twenty wake-ups a second cost an idle worker next to nothing.
     */
    private static final int MAX_SLEEP_MS = 50;

    final UcxWorker worker;
    final int id;
    final ProgressMode mode;
    final MemorySegment handle;
    final ReentrantLock lock = new ReentrantLock();
    private final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
    private final Arena arena = Arena.ofShared();
    /** Scratch structs, used only by the lock holder. */
    final MemorySegment param;
    final MemorySegment tagInfo;
    final MemorySegment lengthOut;
    final MemorySegment pointerOut;
    final MemorySegment sockaddr;
    private final MemorySegment pollfd;
    private final int eventFd;
    private final long spinNanos;
    private volatile boolean armed;
    private volatile boolean running = true;
    private final Thread thread;
    private final IdTable<Operation> ops = new IdTable<>(64);
    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    /** Set while the worker is being destroyed: late callbacks must not free requests again. */
    private boolean destroying;
    /** How deep we are inside UCX callbacks (lock holder only). */
    private int upcallDepth;
    private long timerSeq;

    WorkerRuntime(UcxWorker worker, MemorySegment contextHandle, WorkerOptions options) {
        this.worker = worker;
        this.mode = options.progressMode();
        this.spinNanos = options.spin().toNanos();
        this.spinBudget = spinNanos;
        this.param = arena.allocate(Structs.UCP_REQUEST_PARAM);
        this.tagInfo = arena.allocate(Structs.UCP_TAG_RECV_INFO);
        this.lengthOut = arena.allocate(JAVA_LONG);
        this.pointerOut = arena.allocate(ADDRESS);
        this.sockaddr = arena.allocate(Structs.SOCKADDR_STORAGE_SIZE, 8);
        this.pollfd = arena.allocate(8, 8);
        MemorySegment params = arena.allocate(Structs.UCP_WORKER_PARAMS);
        // UCP_WORKER_PARAM_FIELD_THREAD_MODE: SERIALIZED, since whichever thread holds the lock calls UCX.
        params.set(JAVA_LONG, Structs.offset(Structs.UCP_WORKER_PARAMS, "field_mask"), 1L);
        params.set(JAVA_INT, Structs.offset(Structs.UCP_WORKER_PARAMS, "thread_mode"), 1);
        int status = NativeCalls.callInt(() -> (byte) Ucp.worker_create.invokeExact(contextHandle, params, pointerOut));
        if (status != UcxStatus.OK.code()) {
            arena.close();
            throw UcxException.of("ucp_worker_create", status, "worker '" + options.name() + "'");
        }
        this.handle = pointerOut.get(ADDRESS, 0);
        MemorySegment fdOut = arena.allocate(JAVA_INT);
        status = NativeCalls.callInt(() -> (byte) Ucp.worker_get_efd.invokeExact(handle, fdOut));
        if (status != UcxStatus.OK.code()) {
            NativeCalls.invoke(() -> { Ucp.worker_destroy.invokeExact(handle); });
            arena.close();
            throw UcxException.of("ucp_worker_get_efd", status, "the context needs Feature.WAKEUP");
        }
        this.eventFd = fdOut.get(JAVA_INT, 0);
        this.id = Upcalls.register(this);
        if (mode == ProgressMode.CALLER) {
            this.thread = null;
        } else {
            this.thread = Thread.ofPlatform().daemon(true).name(options.name() + "-progress").unstarted(this::loop);
            this.thread.start();
        }
    }

    // ---------------------------------------------------------------- submission

    boolean inCallbackContext() {
        return lock.isHeldByCurrentThread();
    }

    /**
     * Whether the current thread is inside a UCX callback. UCX is then in the middle of its own work on
     * the objects involved (for an error callback: tearing down the failed endpoint), so calls that
     * destroy objects must wait for the next round ({@link #later}); UCX 1.13 aborts otherwise.
     */
    boolean inUpcall() {
        return upcallDepth > 0 && lock.isHeldByCurrentThread();
    }

    /**
     * Runs {@code task} with the lock held: inline when possible, else on the progress thread. Tasks
     * reach UCX in the order they were submitted, whichever threads submitted them: the lock holder
     * (inside a callback, say) runs its task inline only when nothing is queued; otherwise the task
     * queues behind what other threads submitted earlier and runs in the next round. (Without this, a
     * receive a callback posts could overtake one another thread queued just before, and take its
     * message: tag matching follows the order receives are posted.)
     */
    void execute(Runnable task) {
        if (lock.isHeldByCurrentThread()) {
            if (queue.isEmpty()) {
                task.run();
            } else {
                queue.offer(task);
            }
            return;
        }
        if (lock.tryLock()) {
            try {
                drainQueue();
                task.run();
            } finally {
                lock.unlock();
            }
            wakeIfArmed();
            return;
        }
        queue.offer(task);
        wakeIfArmed();
    }

    /**
     * Runs an operation's submission with the lock held; if it throws, the operation fails with that
     * exception instead of being lost.
     */
    void submit(Operation op, Runnable task) {
        execute(() -> {
            try {
                task.run();
            } catch (Throwable t) {
                if (!op.future.isDone()) {
                    failUnsubmitted(op, t);
                }
            }
        });
    }

    /** A {@code *_nbx} call, given the filled request parameters; returns UCX's status pointer. */
    @FunctionalInterface
    interface NbxCall {
        MemorySegment call(MemorySegment param) throws Throwable;
    }

    /**
     * Submits one operation: with the lock held, checks its endpoint (if any) is usable, fills the
     * request parameters (contiguous or scatter-gather), calls UCX and tracks what it returned. Any
     * failure on the way fails the operation instead of losing it.
     */
    void startOp(Operation op, boolean iov, MemorySegment callback, int attrs, int flags, NbxCall call) {
        submit(op, () -> {
            if (op.endpoint != null && !op.endpoint.usable(op)) {
                return;
            }
            MemorySegment p = iov ? iovParam(op, callback, attrs, flags) : param(op, callback, attrs, flags);
            MemorySegment r;
            try {
                r = call.call(p);
            } catch (Throwable t) {
                failUnsubmitted(op, t);
                return;
            }
            boolean streamDoneNow = op.kind.lengthOnImmediateCompletion && r.address() == 0;
            started(op, r, streamDoneNow ? (Object) lengthOut.get(JAVA_LONG, 0) : null);
        });
    }

    /** Queues {@code task} for the next round, even when the caller holds the lock. */
    void later(Runnable task) {
        queue.offer(task);
        wakeIfArmed();
    }

    private void wakeIfArmed() {
        if (armed) {
            armed = false;
            signal();
        }
    }

    void signal() {
        NativeCalls.callInt(() -> (byte) Ucp.worker_signal.invokeExact(handle));
    }

    private int drainQueue() {
        int n = 0;
        Runnable task;
        while ((task = queue.poll()) != null) {
            n++;
            try {
                task.run();
            } catch (Throwable t) {
                LOG.error("ucx4j worker task failed", t);
            }
        }
        return n;
    }

    // ---------------------------------------------------------------- progress

    /** One round with the lock held: queued tasks, due timers, UCX progress. */
    private int round() {
        int n = drainQueue();
        n += runTimers();
        for (int i = 0; i < MAX_PROGRESS_PER_ROUND; i++) {
            int c = NativeCalls.callInt(() -> (int) Ucp.worker_progress.invokeExact(handle));
            if (c == 0) {
                break;
            }
            n += c;
        }
        return n;
    }

    /** Caller-driven progress. */
    int progressOnce() {
        lock.lock();
        try {
            return round();
        } finally {
            lock.unlock();
        }
    }

    private void loop() {
        Extensions.onProgressThreadStart();
        long idleSince = 0;
        while (running) {
            int n;
            lock.lock();
            try {
                n = round();
            } catch (Throwable t) {
                LOG.error("ucx4j progress failed", t);
                n = 0;
            } finally {
                lock.unlock();
            }
            if (n > 0 || mode == ProgressMode.THREAD_POLLING) {
                if (idleSince != 0) {
                    spinCaught();
                }
                idleSince = 0;
                if (n == 0) {
                    spinPause();
                }
                continue;
            }
            long now = System.nanoTime();
            if (idleSince == 0) {
                idleSince = now;
            }
            if (now - idleSince < spinBudget) {
                spinPause();
                continue;
            }
            idleSince = 0;
            spinMissed();
            sleepUntilEvent();
        }
    }

    /**
     * With the lock held: progresses to zero and arms the worker, in one hold of the lock, because an
     * operation posted inline by another thread since the last round may need progress that no fd event
     * will ever announce.
     *
     * @return true when nothing is pending and the worker is armed (its event fd may be waited on);
     *     false when there was work or UCX reported pending events (BUSY): progress again
     */
    private boolean idleAndArmed() {
        if (round() > 0 || !queue.isEmpty()) {
            return false;
        }
        return NativeCalls.callInt(() -> (byte) Ucp.worker_arm.invokeExact(handle)) == UcxStatus.OK.code();
    }

    /** Arms the worker and sleeps on its event fd; returns early when anything arrives or is submitted. */
    private void sleepUntilEvent() {
        int timeoutMs;
        lock.lock();
        try {
            if (!idleAndArmed()) {
                return;
            }
            armed = true;
            timeoutMs = nextTimerMillis();
        } finally {
            lock.unlock();
        }
        // Dekker with submitters: they offer then read armed; we wrote armed then read the queue.
        if (!queue.isEmpty() || !running) {
            armed = false;
            return;
        }
        Libc.pollIn(pollfd, eventFd, timeoutMs);
        armed = false;
    }

    /** Blocking wait used by caller-driven workers: progress until done, sleeping on the fd when idle. */
    private void progressUntil(CompletableFuture<?> f, long deadlineNanos) {
        long idleSince = 0;
        while (!f.isDone() && System.nanoTime() < deadlineNanos && !Thread.currentThread().isInterrupted()) {
            if (progressOnce() > 0) {
                idleSince = 0;
                continue;
            }
            long now = System.nanoTime();
            if (idleSince == 0) {
                idleSince = now;
            }
            if (now - idleSince < spinNanos) {
                spinPause();
                continue;
            }
            lock.lock();
            boolean canSleep;
            try {
                canSleep = idleAndArmed();
            } finally {
                lock.unlock();
            }
            if (canSleep && !f.isDone()) {
                try (Arena a = Arena.ofConfined()) {
                    Libc.pollIn(a.allocate(8, 8), eventFd, 1);
                }
            }
            idleSince = 0;
        }
    }

    /**
     * How long spins last now: between the configured spin and {@link #MAX_SPIN_FACTOR} times it,
     * doubled when a spin caught what it waited for and halved when it ran out. A ping-pong whose
     * replies take longer than the configured spin (two JVMs on two cores: 80-100 usec round trips
     * against a 50 usec spin) otherwise never catches one and pays for two wake-ups on every message;
     * sparse traffic shrinks it back, so a worker that gets a message now and then spins no longer than
     * configured, and an idle one not at all (measured against fixed spins in docs/BENCHMARKS.md, "After
     * the adaptive spin"). Racy updates from several threads are harmless: it is a hint.
     */
    private volatile long spinBudget;
    private static final int MAX_SPIN_FACTOR = 16;

    private void spinCaught() {
        long b = spinBudget;
        if (b < spinNanos * MAX_SPIN_FACTOR) {
            spinBudget = Math.min(spinNanos * MAX_SPIN_FACTOR, b * 2);
        }
    }

    private void spinMissed() {
        long b = spinBudget;
        if (b > spinNanos) {
            spinBudget = Math.max(spinNanos, b / 2);
        }
    }

    /**
     * One step of a bounded spin: {@code sched_yield}, not a busy pause. With as many spinning threads
     * as cores (two JVMs on two cores: each has a progress thread and a waiting thread that helps), the
     * thread a reply was for sat runnable behind a busy spinner for a scheduler slice; yielding lets it
     * run, which halved small-message latency; a busy pause before yielding was slower (docs/BENCHMARKS.md,
     * "After the spins yield").
     */
    private static void spinPause() {
        Thread.yield();
    }

    /**
     * A waiting thread of a threaded worker helps: for up to the spin time it progresses the worker
     * itself whenever the lock is free, so a reply that arrives quickly completes on the waiting thread
     * without two thread hand-offs. Then it wakes the progress thread (it may have slept through work
     * this thread started) and leaves the rest to it.
     */
    private void assist(CompletableFuture<?> f) {
        long until = System.nanoTime() + spinBudget;
        boolean progressed = false;
        while (!f.isDone() && System.nanoTime() < until) {
            if (lock.tryLock()) {
                try {
                    if (!running || f.isDone()) {
                        break;
                    }
                    round();
                    progressed = true;
                } finally {
                    lock.unlock();
                }
            }
            spinPause();
        }
        if (f.isDone()) {
            spinCaught();
        } else {
            spinMissed();
        }
        if (progressed) {
            wakeIfArmed();
        }
    }

    /**
     * Waits for an operation from an ordinary thread (platform or virtual).
     *
     * @throws IllegalStateException when called from inside a UCX callback, where waiting would deadlock
     */
    <T> T await(CompletableFuture<T> f, String what) {
        return await(f, what, Long.MAX_VALUE);
    }

    /**
     * A blocking call: refuses inside a callback before starting anything (no orphaned operation), then
     * starts the operation and waits for it.
     */
    <T> T call(java.util.function.Supplier<? extends CompletableFuture<T>> start, String what) {
        checkMayBlock(what);
        return await(start.get(), what, Long.MAX_VALUE);
    }

    void checkMayBlock(String what) {
        if (lock.isHeldByCurrentThread()) {
            throw new IllegalStateException("blocking call '" + what + "' from inside a ucx4j callback (progress "
                    + "thread) would deadlock: use the async variant and chain on its future");
        }
    }

    <T> T await(CompletableFuture<T> f, String what, long timeoutNanos) {
        checkMayBlock(what);
        long deadline = timeoutNanos == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + timeoutNanos;
        if (deadline < 0 && timeoutNanos != Long.MAX_VALUE) {
            deadline = Long.MAX_VALUE;
        }
        if (mode == ProgressMode.CALLER) {
            progressUntil(f, deadline);
        } else if (!f.isDone() && running) {
            assist(f);
        }
        try {
            if (timeoutNanos == Long.MAX_VALUE) {
                return f.get();
            }
            long left = deadline - System.nanoTime();
            return f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | CompletionException e) {
            throw NativeCalls.unchecked(e.getCause());
        } catch (TimeoutException e) {
            throw new UcxTimeoutException(what, UcxStatus.TIMED_OUT.code(),
                    "no completion within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UcxCanceledException(what, "interrupted while waiting");
        }
    }


    // ---------------------------------------------------------------- operations

    /** Registers an operation and returns its user-data word. Lock held. */
    MemorySegment register(Operation op) {
        int slot = ops.add(op);
        op.id = slot;
        if (op.endpoint != null) {
            op.endpoint.link(op);
        }
        return Upcalls.userData(id, slot);
    }

    /** Fills the scratch param for a callback-driven request. Lock held. */
    MemorySegment param(Operation op, MemorySegment callback, int extraAttrs, int flags) {
        MemorySegment userData = register(op);
        MemorySegment p = param;
        p.set(JAVA_INT, P_OP_ATTR, OP_ATTR_FIELD_CALLBACK | OP_ATTR_FIELD_USER_DATA | extraAttrs);
        p.set(JAVA_INT, P_FLAGS, flags);
        p.set(ADDRESS, P_CB, callback);
        p.set(ADDRESS, P_USER_DATA, userData);
        return p;
    }

    /**
     * Handles what an {@code *_nbx} call returned: NULL (done now), an error code, or a request.
     * Lock held.
     */
    void started(Operation op, MemorySegment statusPtr, Object immediateValue) {
        long raw = statusPtr.address();
        if (raw == 0) {
            finish(op, UcxStatus.OK.code(), immediateValue);
        } else if (Long.compareUnsigned(raw, -100L) >= 0) {
            finish(op, (int) raw, null);
        } else {
            op.request = statusPtr;
            if (op.cancelRequested || op.overrideFailure != null) {
                cancelRequest(op);
            }
        }
    }

    /** Fails an operation that could not even be submitted. Lock held or not yet registered. */
    /** Fills the scratch param for a scatter-gather request (datatype iov). Lock held. */
    MemorySegment iovParam(Operation op, MemorySegment callback, int extraAttrs, int flags) {
        MemorySegment p = param(op, callback, OP_ATTR_FIELD_DATATYPE | extraAttrs, flags);
        p.set(JAVA_LONG, P_DATATYPE, DATATYPE_IOV);
        return p;
    }

    void failUnsubmitted(Operation op, Throwable t) {
        if (op.id >= 0) {
            release(op);
        }
        freeStaging(op);
        op.future.completeExceptionally(t);
    }

    void cancel(Operation op) {
        execute(() -> {
            if (op.future.isDone()) {
                return;
            }
            op.cancelRequested = true;
            if (!op.request.equals(MemorySegment.NULL)) {
                cancelRequest(op);
            }
        });
    }

    /** Cancels or fails an operation for an outside reason (endpoint failure, close). Lock held. */
    void abort(Operation op, UcxException reason) {
        if (op.overrideFailure == null) {
            op.overrideFailure = reason;
        }
        if (!op.request.equals(MemorySegment.NULL)) {
            cancelRequest(op);
        }
    }

    private void cancelRequest(Operation op) {
        MemorySegment req = op.request;
        NativeCalls.invoke(() -> { Ucp.request_cancel.invokeExact(handle, req); });
    }

    /** Completes an operation: bookkeeping first, then the future. Lock held. */
    void finish(Operation op, int status, Object value) {
        if (!op.request.equals(MemorySegment.NULL)) {
            MemorySegment req = op.request;
            op.request = MemorySegment.NULL;
            NativeCalls.invoke(() -> { Ucp.request_free.invokeExact(req); });
        }
        release(op);
        if (status == UcxStatus.OK.code() && op.copyBackTo != null && op.staging != null && value instanceof TagInfo info) {
            long n = Math.min(info.length(), op.copyBackTo.byteSize());
            MemorySegment.copy(op.staging, 0, op.copyBackTo, 0, n);
        } else if (status == UcxStatus.OK.code() && op.copyBackTo != null && op.staging != null && value instanceof Long len) {
            MemorySegment.copy(op.staging, 0, op.copyBackTo, 0, Math.min(len, op.copyBackTo.byteSize()));
        } else if (status == UcxStatus.OK.code() && op.copyBackTo != null && op.staging != null && op.kind == OperationKind.GET) {
            // RMA get into heap memory: UCX filled the whole staging buffer.
            MemorySegment.copy(op.staging, 0, op.copyBackTo, 0, op.copyBackTo.byteSize());
        }
        freeStaging(op);
        if (status == UcxStatus.OK.code()) {
            op.future.complete(value);
        } else if (op.overrideFailure != null) {
            op.future.completeExceptionally(op.overrideFailure);
        } else if (status == UcxStatus.MESSAGE_TRUNCATED.code()) {
            op.future.completeExceptionally(new UcxException(op.kind.call, status,
                    "the incoming message is larger than the " + op.length + "-byte receive buffer"));
        } else if (status == UcxStatus.CANCELED.code() && op.cancelRequested) {
            op.future.completeExceptionally(new UcxCanceledException(op.kind.call, status, "canceled by the caller"));
        } else {
            op.future.completeExceptionally(UcxException.of(op.kind.call, status, op.describe()));
        }
    }

    private void release(Operation op) {
        if (op.id >= 0) {
            ops.remove(op.id, op);
        }
        if (op.endpoint != null) {
            op.endpoint.unlink(op);
        }
    }

    private static void freeStaging(Operation op) {
        if (op.staging != null) {
            Libc.free(op.staging);
            op.staging = null;
        }
        if (op.headerStaging != null) {
            Libc.free(op.headerStaging);
            op.headerStaging = null;
        }
        if (op.extraStaging != null) {
            for (MemorySegment block : op.extraStaging) {
                Libc.free(block);
            }
            op.extraStaging = null;
        }
    }

    int pendingOperations() {
        return ops.size();
    }

    /** Every in-flight operation, for close. Lock held. */
    List<Operation> pending() {
        return ops.all();
    }

    private Operation lookup(int opId) {
        Operation op = ops.get(opId);
        if (op == null && !destroying) {
            LOG.warn("UCX completion for unknown operation {} on worker {}", opId, id);
        }
        return op;
    }

    // ---------------------------------------------------------------- upcalls

    @Override
    public void onSendComplete(int opId, MemorySegment request, int status) {
        upcallDepth++;
        try {
            Operation op = lookup(opId);
            if (op != null) {
                op.request = request;
                finish(op, status, null);
            } else if (!destroying) {
                NativeCalls.invoke(() -> { Ucp.request_free.invokeExact(request); });
            }
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public void onTagRecvComplete(int opId, MemorySegment request, int status, long senderTag, long length) {
        upcallDepth++;
        try {
            Operation op = lookup(opId);
            if (op != null) {
                op.request = request;
                finish(op, status, status == UcxStatus.OK.code() ? new TagInfo(senderTag, length) : null);
            } else if (!destroying) {
                NativeCalls.invoke(() -> { Ucp.request_free.invokeExact(request); });
            }
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public void onStreamRecvComplete(int opId, MemorySegment request, int status, long length) {
        upcallDepth++;
        try {
            Operation op = lookup(opId);
            if (op != null) {
                op.request = request;
                finish(op, status, status == UcxStatus.OK.code() ? length : null);
            } else if (!destroying) {
                NativeCalls.invoke(() -> { Ucp.request_free.invokeExact(request); });
            }
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public void onEndpointError(int endpointId, MemorySegment ep, int status) {
        upcallDepth++;
        try {
            worker.endpointFailed(endpointId, status);
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public void onConnectionRequest(int listenerId, MemorySegment connRequest) {
        upcallDepth++;
        try {
            worker.connectionRequested(listenerId, connRequest);
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public byte onActiveMessage(int handlerId, MemorySegment header, long headerLength, MemorySegment data,
                                long length, MemorySegment param) {
        upcallDepth++;
        try {
            return worker.activeMessages().onMessage(handlerId, header, headerLength, data, length, param);
        } finally {
            upcallDepth--;
        }
    }

    @Override
    public void onUpcallFailure(String what, Throwable failure) {
        LOG.error("ucx4j worker {}: failure in {}", worker.name(), what, failure);
    }

    // ---------------------------------------------------------------- timers

    /** A one-shot timer run by the lock holder. */
    final class Timer implements Comparable<Timer> {
        final long deadline;
        final long seq;
        final Runnable action;
        boolean cancelled;

        Timer(long deadline, Runnable action) {
            this.deadline = deadline;
            this.seq = timerSeq++;
            this.action = action;
        }

        void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Timer o) {
            int c = Long.compare(deadline, o.deadline);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /** Schedules {@code action} after {@code delayNanos}. Lock held. */
    Timer schedule(long delayNanos, Runnable action) {
        Timer t = new Timer(System.nanoTime() + delayNanos, action);
        timers.add(t);
        return t;
    }

    private int runTimers() {
        if (timers.isEmpty()) {
            return 0;
        }
        long now = System.nanoTime();
        int n = 0;
        Timer t;
        while ((t = timers.peek()) != null && t.deadline - now <= 0) {
            timers.poll();
            if (!t.cancelled) {
                n++;
                try {
                    t.action.run();
                } catch (Throwable e) {
                    LOG.error("ucx4j timer failed", e);
                }
            }
        }
        return n;
    }

    private int nextTimerMillis() {
        Timer t = timers.peek();
        if (t == null) {
            return MAX_SLEEP_MS;
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(t.deadline - System.nanoTime()) + 1;
        return (int) Math.max(0, Math.min(ms, MAX_SLEEP_MS));
    }

    // ---------------------------------------------------------------- shutdown

    /** Progresses (on whichever thread drives this worker) until {@code f} is done or the time passes. */
    void drive(CompletableFuture<?> f, long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        if (mode == ProgressMode.CALLER || thread == null || !thread.isAlive()) {
            progressUntil(f, deadline);
            return;
        }
        try {
            f.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // The caller inspects f.
        }
    }

    /** Stops the progress thread; afterwards the caller holds the only access. */
    void stopThread() {
        running = false;
        if (thread != null) {
            signal();
            try {
                thread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** False once the worker is stopping for good: no UCX object of it may be touched after that. */
    boolean isRunning() {
        return running;
    }

    /** Destroys the UCX worker; fails whatever is still pending. */
    void destroy() {
        lock.lock();
        try {
            drainQueue();
            destroying = true;
            for (Operation op : pending()) {
                // Hand every outstanding request back to UCX: destroying a worker (or an endpoint) whose
                // requests the user still holds trips an assertion in UCX 1.13. UCX may still call back for
                // them while it destroys the worker; 'destroying' stops those callbacks from freeing again.
                if (!op.request.equals(MemorySegment.NULL)) {
                    MemorySegment req = op.request;
                    op.request = MemorySegment.NULL;
                    NativeCalls.invoke(() -> { Ucp.request_free.invokeExact(req); });
                }
                release(op);
                freeStaging(op);
                op.future.completeExceptionally(op.overrideFailure != null ? op.overrideFailure
                        : new UcxCanceledException(op.kind.call, UcxStatus.CANCELED.code(), "worker closed"));
            }
            NativeCalls.invoke(() -> { Ucp.worker_destroy.invokeExact(handle); });
            Upcalls.unregister(id);
        } finally {
            lock.unlock();
            arena.close();
        }
    }
}
