package org.ucx4j.internal.worker;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.ProgressMode;
import org.ucx4j.UcxCanceledException;
import org.ucx4j.UcxException;
import org.ucx4j.UcxStatus;
import org.ucx4j.UcxTimeoutException;
import org.ucx4j.internal.Extensions;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Ucp;

/**
 * Drives one UCX worker: the progress lock, the submission queue, the progress thread (or the caller,
 * in {@link ProgressMode#CALLER} mode), sleeping on the worker's event fd, the adaptive spin (longer
 * while a bulk operation is in flight: {@link #BULK_SPIN_NANOS}), and blocking waits.
 *
 * <p>Why a lock and a queue: UCX is never called concurrently on one worker (it is created
 * {@code UCS_THREAD_MODE_SERIALIZED}). Whoever holds the lock may call UCX. A thread that submits an
 * operation takes the lock if it is free and nothing is queued, and calls UCX itself (no hand-off);
 * otherwise it queues the task and, if the progress thread sleeps, signals it with
 * {@code ucp_worker_signal}. A progress thread holds the lock whenever it is awake, so in the threaded
 * modes submissions are queued while it polls, and run inline while it sleeps, after which it is
 * signalled too (the operation may need progress no event announces). Tasks queued earlier always run
 * before a caller's inline task, so operations reach UCX in the order they were submitted. UCX
 * callbacks only run inside UCX calls, so they always run on the lock holder: that is how "inside a
 * callback" is detected, blocking calls there are refused, and operations submitted there wait in the
 * queue until the UCX call that called back has returned (UCX is never re-entered from its own
 * callbacks; the round runs them right after that call).
 *
 * <p>Where user code runs (the threading contract of the public API): handlers, allocators and the
 * continuations of futures run only in progress rounds ({@code round()}: queued tasks, timers,
 * {@code ucp_worker_progress}), and rounds run only on the progress thread, or in {@link ProgressMode#CALLER}
 * mode on a thread inside {@link #progressOnce()} or a blocking wait. A submitting thread runs its own
 * submission and nothing else (it may hold locks of its own that a handler needs: running other tasks
 * there could deadlock, or enter the caller's critical section through a reentrant lock); a thread
 * waiting on a threaded worker does not progress it. Work that completes other futures (cancel, close)
 * is queued with {@link #later}, never run inline on the caller.
 *
 * <p>Threading: every method is safe from any thread unless it says "lock holder".
 */
public final class ProgressEngine {
    private static final Logger LOG = LoggerFactory.getLogger(ProgressEngine.class);

    private static final int MAX_PROGRESS_PER_ROUND = 64;
    /**
     * The longest a sleeping progress thread waits without an event. UCX should wake it for every
     * event, but a forced round every so often (UCXX does one a second) turns any missed wake-up into
     * a short stall instead of a hang; twenty wake-ups a second cost an idle worker next to nothing.
     */
    private static final int MAX_SLEEP_MS = 50;
    /**
     * How long a thread-blocking progress thread keeps polling after its last progress while a bulk
     * operation ({@link OperationTable#BULK_BYTES}: a send or RMA of that size, or a receive of that size
     * into GPU memory) is in flight, before it sleeps; not at all when the worker's spin is zero. Progress
     * caught in this window does not count as a catch of the adaptive spin. Some transports finish such
     * operations without a prompt fd event: UCX 1.22's cuda_ipc and cuda_copy wake a sleeping worker
     * through a host function that {@code ucp_worker_arm} enqueues on each CUDA stream with copies in
     * flight (a driver thread runs it after the copies, then writes the event fd), tens of microseconds
     * late per wake-up, on every step of a rendezvous. A millisecond covers a 64 MiB copy between GPUs
     * over NVLink; over PCIe one takes about 2.7 ms, so there the thread sleeps before such a copy ends and
     * pays the late wake-up once per copy. Polling stops that long after the last progress even if the
     * operation never ends, so a worker whose bulk send waits for its receiver sleeps as before.
     */
    static final long BULK_SPIN_NANOS = 1_000_000;
    /**
     * How long the last drain before a worker's destruction waits for a submission caught between the two
     * writes of its queueing ({@link SubmissionQueue}): they are two instructions apart, so this is only
     * reached if the submitting thread died between them.
     */
    private static final long LAST_DRAIN_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** How many times a progress round tries the lock before it waits for it ({@link #lockForRound}). */
    private static final int LOCK_SPINS = 256;
    /**
     * Spin loops read the clock on one idle step in this many (a power of two), not on every one:
     * {@code System.nanoTime()} costs about as much as a spin step itself, and a message that lands while
     * a spinner reads the clock is seen that much later (measured: docs/BENCHMARKS.md, "Where a small
     * message's time goes"). Budgets of microseconds to milliseconds are still kept to within a few
     * hundred nanoseconds. Where a spin step yields every time (fewer than 8 cores,
     * {@link AdaptiveSpin#YIELD_EVERY}), every step reads it: eight yields could take a scheduler slice each.
     */
    private static final int CLOCK_EVERY = AdaptiveSpin.YIELD_EVERY == 1 ? 1 : 8;

    private final MemorySegment handle;
    private final int eventFd;
    private final ProgressMode mode;
    private final TimerQueue timers;
    private final AdaptiveSpin spin;
    private final ReentrantLock lock = new ReentrantLock();
    private final SubmissionQueue queue = new SubmissionQueue();
    /** Whether a bulk operation is in flight; asked with the lock held. Set before {@link #start}. */
    private BooleanSupplier bulkInFlight = () -> false;
    /** Whether the lock holder is inside a UCX callback; asked with the lock held. Set before {@link #start}. */
    private BooleanSupplier inCallback = () -> false;
    /** Completes the polled operations UCX has finished, returning how many; lock held. */
    private IntSupplier pollPolled = () -> 0;
    /** Thread-blocking with a non-zero spin: the bulk window applies (a zero spin turns it off too). */
    private final boolean bulkPolling;

    private volatile boolean armed;
    private volatile boolean running = true;
    /**
     * Set, with the lock held, just before the last drain that precedes the worker's destruction: from
     * then on no task runs inline or is queued (it is refused with {@link IllegalStateException}), no
     * round calls UCX, and no signal reaches the worker.
     */
    private volatile boolean destroyed;
    /** Threads inside {@link #signal()}: the destruction waits for them (no signal to a freed worker). */
    private final AtomicInteger signalling = new AtomicInteger();
    // Written once by start(), before any other thread can reach this engine; volatile for those that do.
    private volatile Thread thread;

    ProgressEngine(MemorySegment handle, int eventFd, ProgressMode mode, long spinNanos, TimerQueue timers) {
        this.handle = handle;
        this.eventFd = eventFd;
        this.mode = mode;
        this.timers = timers;
        this.spin = new AdaptiveSpin(spinNanos);
        this.bulkPolling = mode == ProgressMode.THREAD_BLOCKING && spinNanos > 0;
    }

    /**
     * Tells the engine how to learn whether a bulk operation is in flight (the progress thread then polls
     * up to {@link #BULK_SPIN_NANOS} after its last progress before it sleeps). Before {@link #start}.
     *
     * @param bulk asked with the lock held
     */
    void pollWhileBulk(BooleanSupplier bulk) {
        this.bulkInFlight = bulk;
    }

    /**
     * Tells the engine how to learn whether the lock holder is inside a UCX callback now: a task submitted
     * from there is queued, not run inline ({@link #execute}). Before {@link #start}.
     *
     * @param inCallback asked with the lock held
     */
    void deferInsideCallbacks(BooleanSupplier inCallback) {
        this.inCallback = inCallback;
    }

    /**
     * Tells the engine how to complete the operations whose requests have no UCX callback (each round
     * polls them after UCX progress: {@link #runPolled}). Before {@link #start}.
     *
     * @param poll completes those UCX finished and returns how many (0 at once when there are none); run
     *     with the lock held
     */
    void pollRequests(IntSupplier poll) {
        this.pollPolled = poll;
    }

    /** Starts the progress thread, unless the caller drives progress. */
    void start(String threadName) {
        if (mode != ProgressMode.CALLER) {
            thread = Thread.ofPlatform().daemon(true).name(threadName).unstarted(this::loop);
            thread.start();
        }
    }

    // ---------------------------------------------------------------- submission

    /** Whether the current thread holds the progress lock: it is inside a callback or a submission. */
    public boolean inCallbackContext() {
        return lock.isHeldByCurrentThread();
    }

    /** Runs {@code body} with the lock held, on the calling thread (used before the worker is shared). */
    public void runLocked(Runnable body) {
        lock.lock();
        try {
            body.run();
        } finally {
            lock.unlock();
        }
        wakeIfArmed(); // what body posted may need progress that no event announces
    }

    /**
     * Runs {@code task} with the lock held: inline when possible, else in the next round. Tasks reach UCX
     * in the order they were submitted, whichever threads submitted them: the task runs inline only when
     * nothing is queued; otherwise it queues behind what other threads submitted earlier. (Without this, a
     * receive a callback posts could overtake one another thread queued just before, and take its
     * message: tag matching follows the order receives are posted.) A thread that is not already the lock
     * holder never runs other threads' tasks here: those may complete futures or run handlers, which the
     * threading contract keeps on the progress thread. A lock holder inside a UCX callback queues the task
     * too: it runs once UCX has returned.
     *
     * <p>{@code task} must complete no future that user code could already hold: it runs on the caller.
     *
     * @throws IllegalStateException when the worker is being destroyed, or was: {@code task} never runs
     *     (a task queued just before is either run by the last drain or taken back and refused here)
     */
    public void execute(Runnable task) {
        if (destroyed) {
            throw closedWhileSubmitting();
        }
        if (lock.isHeldByCurrentThread()) {
            if (destroyed) {
                throw closedWhileSubmitting();
            }
            if (inCallback.getAsBoolean()) {
                // Inside a UCX callback UCX is not called again: the task runs once the UCX call that
                // called back has returned (the round drains the queue after each progress call). UCX 1.13's
                // tcp transport frees an endpoint that failed while a send made from a callback runs
                // inside that endpoint's receive handler, which then reads the freed endpoint (the
                // process crashed in uct_tcp_iface_progress when a peer closed mid-transfer).
                enqueue(task);
                return;
            }
            if (queue.isEmpty()) {
                task.run();
            } else {
                queue.offer(SubmissionQueue.of(task));
            }
            return;
        }
        // The lock is read before it is tried: while the progress thread holds it, a failing
        // compare-and-set would still take its cache line from that thread, which reads the line every
        // round (handOverIfWanted). And it is read before the queue: an awake progress thread holds it,
        // and the queue's tail is a line the progress thread writes whenever it empties the queue.
        if (!lock.isLocked() && queue.mayBeEmpty() && lock.tryLock()) {
            boolean ran = false;
            try {
                if (destroyed) {
                    throw closedWhileSubmitting();
                }
                if (queue.isEmpty()) {
                    ran = true;
                    task.run();
                }
            } finally {
                lock.unlock();
            }
            if (ran) {
                wakeIfArmed();
                return;
            }
        }
        enqueue(task);
    }

    /**
     * Queues {@code task} for the next round, even when the caller holds the lock. Once the worker is
     * being destroyed the task is dropped: its destruction fails every operation still pending, which
     * is all a later task (a cancel, a close) could have done.
     */
    public void later(Runnable task) {
        try {
            enqueue(task);
        } catch (IllegalStateException destroying) {
            // dropped, as documented
        }
    }

    /**
     * Queues {@code task}; if the destruction began meanwhile and its last drain did not take the task,
     * takes it back and refuses it (a queued task nobody will ever run would leave its caller waiting).
     */
    private void enqueue(Runnable runnable) {
        if (destroyed) {
            // Checked before too: a destroyed worker's queue is never drained again, and revoked tasks
            // would pile up in it (and keep a last drain under way from ending).
            throw closedWhileSubmitting();
        }
        SubmissionQueue.Task task = SubmissionQueue.of(runnable);
        queue.offer(task);
        if (destroyed) {
            if (SubmissionQueue.revoke(task)) {
                throw closedWhileSubmitting();
            }
            return; // the last drain ran it
        }
        wakeIfArmed();
    }

    private static IllegalStateException closedWhileSubmitting() {
        return new IllegalStateException("the UCX worker is closed (it closed before this call reached UCX)");
    }

    private void wakeIfArmed() {
        if (armed) {
            armed = false;
            signal();
        }
    }

    private void signal() {
        signalling.incrementAndGet();
        try {
            if (!destroyed) {
                NativeCalls.callInt(() -> Ucp.workerSignal(handle));
            }
        } finally {
            signalling.decrementAndGet();
        }
    }

    private int drainQueue() {
        int n = 0;
        SubmissionQueue.Task task;
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
        if (destroyed) {
            return 0;
        }
        int n = drainQueue();
        n += timers.runDue();
        for (int i = 0; i < MAX_PROGRESS_PER_ROUND; i++) {
            int c = NativeCalls.callInt(() -> Ucp.workerProgress(handle));
            if (!queue.isEmpty()) {
                // What callbacks of this progress call submitted (execute defers it until UCX returned).
                c += drainQueue();
            }
            if (c == 0) {
                break;
            }
            n += c;
        }
        n += pollPolled.getAsInt();
        return n;
    }

    /**
     * Takes the lock for a progress round, spinning a while before it queues on the lock: submitters
     * usually hold it for one UCX call, and a thread parked on a {@link ReentrantLock} costs the submitter
     * an unpark (a system call) when it unlocks, and itself a wake-up, on every message while traffic
     * flows.
     */
    private void lockForRound() {
        for (int step = 1; !lock.tryLock(); step++) {
            if (step >= LOCK_SPINS) {
                lock.lock();
                return;
            }
            AdaptiveSpin.pause(step);
        }
    }

    /** One round of caller-driven progress; returns how much happened. */
    public int progressOnce() {
        lockForRound();
        try {
            return round();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The progress thread. It holds the lock for as long as it is awake, busy or spinning idle, and lets
     * it go only to sleep, to yield its core, or when another thread queues on the lock ({@link
     * #handOverIfWanted}). While it is held, submitters queue their tasks: a submission then costs a read
     * of the lock word and an append to the queue ({@link SubmissionQueue}: the task itself is the node).
     * (Taken and released on every idle round, the lock word and its owner field were written twice a
     * round, and every submitter's first reads of them missed the cache: 40 % of a thread-blocking
     * submitter's time in the profile of docs/BENCHMARKS.md, "Where thread-blocking's extra time goes".)
     */
    private void loop() {
        Extensions.onProgressThreadStart();
        long idleSince = 0;
        // Whether this idle stretch has outlasted the spin budget (the spin missed; polling goes on only
        // for the bulk window, whose catches are not the spin's).
        boolean spinSpent = false;
        long lastProgress = System.nanoTime() - BULK_SPIN_NANOS; // "never": the window is closed
        // Progress is stamped lazily: at the first clock read of the idle stretch that follows it.
        boolean progressed = false;
        int steps = 0;
        lockForRound();
        try {
            while (running) {
                int n;
                boolean bulk = false;
                try {
                    n = round();
                    bulk = n == 0 && bulkPolling && bulkInFlight.getAsBoolean();
                } catch (Throwable t) {
                    LOG.error("ucx4j progress failed", t);
                    n = 0;
                }
                handOverIfWanted();
                if (n > 0 || mode == ProgressMode.THREAD_POLLING) {
                    if (idleSince != 0 && !spinSpent) {
                        spin.caught();
                    }
                    idleSince = 0;
                    spinSpent = false;
                    if (n == 0) {
                        pauseHolding(++steps);
                    } else {
                        progressed = true;
                    }
                    continue;
                }
                int step = ++steps;
                if (idleSince != 0 && (step & (CLOCK_EVERY - 1)) != 0) {
                    pauseHolding(step); // between clock reads
                    continue;
                }
                long now = System.nanoTime();
                if (progressed) {
                    lastProgress = now;
                    progressed = false;
                }
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (!spinSpent) {
                    if (now - idleSince < spin.budgetNanos()) {
                        pauseHolding(step);
                        continue;
                    }
                    spinSpent = true;
                    spin.missed();
                }
                if (bulk && now - lastProgress < BULK_SPIN_NANOS) {
                    pauseHolding(step);
                    continue;
                }
                idleSince = 0;
                spinSpent = false;
                sleepUntilEvent();
            }
        } finally {
            if (lock.isHeldByCurrentThread()) { // a re-lock that threw left it free
                lock.unlock();
            }
        }
    }

    /**
     * Progress thread, lock holder: one spin step. A step that yields lets the lock go for its length
     * (a thread that yields its core should not keep others from running their submissions inline: on
     * a machine of fewer than 8 cores every step yields).
     */
    private void pauseHolding(int step) {
        if (AdaptiveSpin.yields(step)) {
            lock.unlock();
            Thread.yield();
            lockForRound();
        } else {
            Thread.onSpinWait();
        }
    }

    /**
     * Progress thread, lock holder: lets the lock go to a thread queued on it ({@link #runLocked}, the
     * destruction) and takes it back after that thread's turn. Asked every round: it reads the lock's
     * wait queue, which nobody writes while nobody waits.
     * The wait for the woken thread is bounded ({@link #LOCK_SPINS} steps): a waiter that gets no core
     * must not stop progress, on which the threads that hold the cores may be waiting; this thread then
     * takes the lock back and offers it again after its next round.
     */
    private void handOverIfWanted() {
        if (!lock.hasQueuedThreads()) {
            return;
        }
        lock.unlock();
        // A plain lock() would take the lock back before the woken waiter runs (it is not a fair lock).
        // Until a queued thread has it: with two or more queued, the queue stays non-empty after the first
        // takes the lock.
        for (int step = 1; step <= LOCK_SPINS && !lock.isLocked() && lock.hasQueuedThreads() && running; step++) {
            AdaptiveSpin.pause(step);
        }
        lockForRound();
    }

    /**
     * Progress thread, lock holder, with the lock held on return: progresses to zero, arms the worker and
     * sleeps on its event fd without the lock; returns early when anything arrives or is submitted.
     */
    private void sleepUntilEvent() {
        try {
            if (!idleAndArmed()) {
                return;
            }
        } catch (Throwable t) { // as in the loop: logged, and the thread goes on (it is not idle)
            LOG.error("ucx4j progress failed", t);
            return;
        }
        armed = true;
        int timeoutMs = timers.millisUntilNext(MAX_SLEEP_MS);
        lock.unlock();
        try {
            // Dekker with submitters: they offer then read armed; we wrote armed then read the queue.
            if (running && queue.isEmpty()) {
                Libc.pollIn(eventFd, timeoutMs);
            }
        } finally {
            armed = false;
            lockForRound();
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
        if (destroyed || round() > 0 || !queue.isEmpty()) {
            return false;
        }
        return NativeCalls.callInt(() -> Ucp.workerArm(handle)) == UcxStatus.OK.code();
    }

    /** Whether what a wait waits for is done: a future, or a {@link PolledOperation}. */
    private static boolean isDone(Object waited) {
        return waited instanceof PolledOperation op ? op.isDone() : ((CompletableFuture<?>) waited).isDone();
    }

    /**
     * Blocking wait used by caller-driven workers: progress until {@code f} (a future or a
     * {@link PolledOperation}) is done, sleeping on the fd when idle.
     */
    private void progressUntil(Object f, long deadlineNanos) {
        long idleSince = 0;
        int steps = 0;
        // The deadline and the interrupt are checked on one round in CLOCK_EVERY, busy or idle.
        int rounds = 0;
        while (!isDone(f) && !destroyed) {
            if ((++rounds & (CLOCK_EVERY - 1)) == 0 && givesUp(deadlineNanos)) {
                break;
            }
            if (progressOnce() > 0) {
                idleSince = 0;
                continue;
            }
            // Counted before its pause: every wait starts at 0, and a pause of step 0 (as of any multiple
            // of YIELD_EVERY) yields, which would cost each message a system call.
            int step = ++steps;
            if (idleSince != 0 && (step & (CLOCK_EVERY - 1)) != 0) {
                AdaptiveSpin.pause(step); // between clock reads
                continue;
            }
            long now = System.nanoTime();
            if (givesUp(now, deadlineNanos)) {
                break;
            }
            if (idleSince == 0) {
                idleSince = now;
            }
            if (now - idleSince < spin.configuredNanos()) {
                AdaptiveSpin.pause(step);
                continue;
            }
            lock.lock();
            boolean canSleep;
            try {
                canSleep = idleAndArmed();
            } finally {
                lock.unlock();
            }
            if (canSleep && !isDone(f)) {
                Libc.pollIn(eventFd, 1);
            }
            idleSince = 0;
        }
    }

    /** Whether a caller-mode wait stops, read without the clock when it has no deadline. */
    private static boolean givesUp(long deadlineNanos) {
        return deadlineNanos == Long.MAX_VALUE
                ? Thread.currentThread().isInterrupted()
                : givesUp(System.nanoTime(), deadlineNanos);
    }

    /** Whether a caller-mode wait stops: its deadline passed, or its thread was interrupted. */
    private static boolean givesUp(long now, long deadlineNanos) {
        return now >= deadlineNanos || Thread.currentThread().isInterrupted();
    }

    /**
     * A waiting thread of a threaded worker spins for up to the spin time before it blocks, so a reply
     * that arrives quickly is seen without a park and unpark. It does not progress the worker itself:
     * that would run handlers and other futures' continuations on a thread that may hold locks of its
     * own (the threading contract keeps them on the progress thread). It wakes the progress thread,
     * which may have gone to sleep before this thread's operation was submitted inline.
     */
    private void spinWait(CompletableFuture<?> f) {
        wakeIfArmed();
        spinUntilDone(f);
    }

    /**
     * Spins for up to the spin budget until {@code waited} (a future or a {@link PolledOperation}) is done,
     * and tells the budget whether it caught it.
     *
     * @return whether it is done
     */
    private boolean spinUntilDone(Object waited) {
        long until = System.nanoTime() + spin.budgetNanos();
        int steps = 0;
        while (!isDone(waited) && ((++steps & (CLOCK_EVERY - 1)) != 0 || System.nanoTime() < until)) {
            AdaptiveSpin.pause(steps);
        }
        if (isDone(waited)) {
            spin.caught();
            return true;
        }
        spin.missed();
        return false;
    }

    // ---------------------------------------------------------------- blocking waits

    /**
     * Refuses a blocking call from inside a ucx4j callback, where waiting would deadlock.
     *
     * @throws IllegalStateException when the current thread holds the progress lock
     */
    public void checkMayBlock(String what) {
        if (lock.isHeldByCurrentThread()) {
            throw mayNotBlock(what);
        }
    }

    private static IllegalStateException mayNotBlock(String what) {
        return new IllegalStateException("blocking call '" + what + "' from inside a ucx4j callback (progress "
                + "thread) would deadlock: use the async variant and chain on its future");
    }

    /**
     * A blocking call: refuses inside a callback before starting anything (no orphaned operation), then
     * starts the operation and waits for it.
     */
    public <T> T call(Supplier<? extends CompletableFuture<T>> start, String what) {
        checkMayBlock(what);
        return await(start.get(), what, Long.MAX_VALUE);
    }

    /**
     * Waits for an operation from an ordinary thread (platform or virtual), helping progress meanwhile.
     *
     * @throws IllegalStateException when called from inside a UCX callback, where waiting would deadlock
     */
    public <T> T await(CompletableFuture<T> f, String what) {
        return await(f, what, Long.MAX_VALUE);
    }

    /**
     * Like {@link #await(CompletableFuture, String)} with a time limit.
     *
     * @throws UcxTimeoutException when it does not complete in time (the operation is left running)
     */
    public <T> T await(CompletableFuture<T> f, String what, long timeoutNanos) {
        checkMayBlock(what);
        long deadline = timeoutNanos == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + timeoutNanos;
        if (deadline < 0 && timeoutNanos != Long.MAX_VALUE) {
            deadline = Long.MAX_VALUE;
        }
        if (mode == ProgressMode.CALLER) {
            progressUntil(f, deadline);
            if (destroyed && !f.isDone()) {
                // Nobody progresses a destroyed worker: wait for its destruction to end (which fails
                // every operation still pending), then give up on anything else.
                lock.lock();
                lock.unlock();
                if (!f.isDone()) {
                    throw new IllegalStateException("'" + what + "' cannot complete: the UCX worker closed");
                }
            }
        } else if (!f.isDone() && running) {
            spinWait(f);
        }
        try {
            // Not CompletableFuture.get() while f is pending: its waiter may run f's stages once it wakes,
            // and they belong on the progress thread (DoneWaits).
            if (timeoutNanos == Long.MAX_VALUE) {
                DoneWaits.awaitDone(f, -1);
                return f.get();
            }
            long left = deadline - System.nanoTime();
            if (!DoneWaits.awaitDone(f, Math.max(0, left))) {
                throw new TimeoutException();
            }
            return f.get();
        } catch (ExecutionException | CompletionException e) {
            throw NativeCalls.unchecked(e.getCause());
        } catch (TimeoutException e) {
            throw new UcxTimeoutException(
                    what,
                    UcxStatus.TIMED_OUT.code(),
                    "no completion within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UcxCanceledException(what, "interrupted while waiting");
        }
    }

    /**
     * How long an interrupted blocking call goes on waiting (progressing, on a caller-driven worker) after it
     * asked UCX to cancel its operation ({@link #runPolled}): a matched receive or a send ends when the peer has done
     * its part, which takes microseconds to milliseconds from a live peer.
     */
    static final long INTERRUPTED_CANCEL_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    /** Whether the calling threads drive this worker ({@link ProgressMode#CALLER}). */
    public boolean callerDriven() {
        return mode == ProgressMode.CALLER;
    }

    /**
     * A blocking call made without a future, a UCX callback or an upcall. The calling thread reads the
     * outcome from {@code op}: this returns when it succeeded and throws what it failed with otherwise.
     * <ul>
     *   <li>Caller-driven worker: takes the lock, runs what other threads queued before (submission order
     *       holds), submits {@code op} (its submission set: {@link Operation#run()}) and runs one round;
     *       then progresses as {@link #await} does until the round that finds its request done completes
     *       it.
     *   <li>Threaded worker: submits {@code op} as any submission ({@link #execute}: at once when the lock
     *       is free and nothing is queued, else through the queue, the operation its own node), and waits
     *       for the progress thread's round that finds its request done: a spin on the operation's flag
     *       for up to the spin time, then a park that the completion ends. No user code runs on the calling
     *       thread, and nothing is completed there but {@code op}: the threading contract holds.
     * </ul>
     *
     * <p>An interrupt asks UCX to cancel {@code op} and goes on waiting until UCX lets go of it (up to
     * {@link #INTERRUPTED_CANCEL_WAIT_NANOS}): a receive that had not matched fails with
     * {@link UcxCanceledException}; one that had matched, or a send, completes as usual (returns or fails
     * with UCX's status), with the thread's interrupt flag set again either way (further interrupts during
     * that wait are kept, not acted on). Only if UCX holds on past that time does the call throw a plain
     * {@link UcxException} of status {@code UCS_INPROGRESS}: the operation is still under way, uses the
     * buffer, and may yet complete (a receive take its message, a send be delivered); a later round
     * completes it. Refused from inside a callback, or once the worker is closed: {@code op} fails (its
     * staging is freed).
     *
     * @param op a polled operation, not yet started
     * @param what the call's name, for errors
     * @throws IllegalStateException from inside a ucx4j callback, or when the worker was closed before the
     *     call reached UCX
     * @throws UcxCanceledException when interrupted before a receive matched (above), or when the worker or
     *     the operation's endpoint closes while the call waits
     * @throws UcxException of status {@code UCS_INPROGRESS} when interrupted and UCX held on (above)
     */
    public void runPolled(PolledOperation op, String what) {
        boolean caller = mode == ProgressMode.CALLER;
        if (lock.isHeldByCurrentThread()) {
            op.refuse(mayNotBlock(what));
        } else if (!caller) {
            try {
                execute(op);
            } catch (IllegalStateException closed) {
                if (!op.isDone()) {
                    op.refuse(closed);
                }
            }
        } else {
            lockForRound();
            try {
                if (destroyed) {
                    op.refuse(closedWhileSubmitting());
                } else {
                    if (!queue.isEmpty()) {
                        drainQueue(); // submitted before this call: they reach UCX first
                    }
                    op.run();
                    if (!op.isDone()) {
                        round();
                    }
                }
            } finally {
                lock.unlock();
            }
        }
        boolean interrupted = false;
        try {
            if (!op.isDone()) {
                if (caller) {
                    wakeIfArmed(); // a thread asleep on the fd may wait for what this call's progress finishes
                }
                waitPolled(op, Long.MAX_VALUE);
                if (!op.isDone() && !destroyed) {
                    // Interrupted. UCX cancels a receive that has not matched; one that has, and a send, run
                    // on into the caller's buffer: this call waits for UCX to let go (a while at most), so
                    // that it neither returns while UCX still uses the buffer nor reports a consumed message
                    // as canceled. Further interrupts meanwhile do not cut the wait short (they are kept).
                    interrupted = Thread.interrupted();
                    op.cancel(new UcxCanceledException(what, "interrupted while waiting"));
                    long deadline = System.nanoTime() + INTERRUPTED_CANCEL_WAIT_NANOS;
                    while (!op.isDone() && !destroyed && System.nanoTime() - deadline < 0) {
                        waitPolled(op, deadline);
                        interrupted |= Thread.interrupted();
                    }
                }
                if (!op.isDone() && destroyed) {
                    lock.lock(); // the destruction fails every pending operation before it lets go
                    lock.unlock();
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt(); // kept for the caller, whether the call completed or not
            }
        }
        if (!op.isDone()) {
            if (destroyed) {
                throw new IllegalStateException("'" + what + "' cannot complete: the UCX worker closed");
            }
            // Not "canceled": UCX still holds the operation, and it may yet complete.
            throw new UcxException(
                    what,
                    UcxStatus.INPROGRESS.code(),
                    "interrupted while waiting, and UCX did not let go of the operation within "
                            + TimeUnit.NANOSECONDS.toMillis(INTERRUPTED_CANCEL_WAIT_NANOS)
                            + " ms: it is still under way and uses the buffer (a receive may yet take its"
                            + " message, a send be delivered)");
        }
        Throwable error = op.error();
        if (error != null) {
            throw NativeCalls.unchecked(error);
        }
    }

    /** The longest park of a thread waiting for a polled operation before it looks at the worker again. */
    private static final long POLLED_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /**
     * Waits until {@code op} is done, the deadline passes, the thread is interrupted or the worker is being
     * destroyed. Caller-driven: progresses the worker ({@link #progressUntil}). Threaded: spins on the
     * operation's flag for up to the spin time, then parks; the completion unparks it
     * ({@link PolledOperation#waitFor}).
     */
    private void waitPolled(PolledOperation op, long deadlineNanos) {
        if (mode == ProgressMode.CALLER) {
            progressUntil(op, deadlineNanos);
            return;
        }
        if (spinUntilDone(op)) {
            return;
        }
        op.waitFor(Thread.currentThread());
        ForkJoinPool.ManagedBlocker blocker = new ForkJoinPool.ManagedBlocker() {
            /** Blocks until released, as CompletableFuture's blocker does: one spare thread per wait. */
            @Override
            public boolean block() {
                parkUntilReleased(op, deadlineNanos);
                return true;
            }

            @Override
            public boolean isReleasable() {
                return polledWaitEnds(op, deadlineNanos);
            }
        };
        try {
            // Through managedBlock: a ForkJoinPool worker that blocks here gets a spare thread in its pool,
            // as it would in CompletableFuture.get() (tasks of one pool that wait for each other's messages
            // must not starve it).
            ForkJoinPool.managedBlock(blocker);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the pool's (it is terminating): an interrupt for the caller
        } catch (RuntimeException noSpare) {
            // The pool could not add a thread (RejectedExecutionException): wait all the same, without one.
            // Leaving now would let the caller return while UCX still uses its buffer.
            parkUntilReleased(op, deadlineNanos);
        } finally {
            op.waitFor(null);
        }
    }

    /** Whether a threaded wait for {@code op} ends: done, the worker going, the deadline or an interrupt. */
    private boolean polledWaitEnds(PolledOperation op, long deadlineNanos) {
        return op.isDone() || destroyed || givesUp(deadlineNanos);
    }

    /** Parks until {@link #polledWaitEnds}, at most {@link #POLLED_PARK_NANOS} at a time. */
    private void parkUntilReleased(PolledOperation op, long deadlineNanos) {
        while (!polledWaitEnds(op, deadlineNanos)) {
            long left = deadlineNanos == Long.MAX_VALUE ? POLLED_PARK_NANOS : deadlineNanos - System.nanoTime();
            LockSupport.parkNanos(this, Math.min(left, POLLED_PARK_NANOS));
        }
    }

    // ---------------------------------------------------------------- shutdown

    /**
     * Progresses (on whichever thread drives this worker) until {@code f} is done or the time passes. For
     * the worker's close, which must not be cut short by an interrupt: the flag is cleared (on entry and
     * whenever an interrupt comes) and reported, for the caller to set again once it is done. A close whose
     * waits an interrupt skipped would destroy the worker with its endpoints still open and a rendezvous
     * send still listed on one, which aborts the process on UCX builds with assertions
     * ({@code ucp_ep_destroy_base}, ucp_ep.c:437 in 1.13.1): a thread interrupted in a blocking call (which
     * keeps the flag) that then closed its worker did exactly that.
     *
     * @return whether the thread was interrupted (before or during the wait); its flag is now clear
     */
    public boolean drive(CompletableFuture<?> f, long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        boolean interrupted = Thread.interrupted();
        while (!f.isDone() && System.nanoTime() - deadline < 0) {
            if (mode == ProgressMode.CALLER || thread == null || !thread.isAlive()) {
                if (destroyed) {
                    break;
                }
                progressUntil(f, deadline);
            } else {
                try {
                    f.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | TimeoutException | java.util.concurrent.CancellationException e) {
                    break; // the caller inspects f
                }
            }
            interrupted |= Thread.interrupted();
        }
        return interrupted;
    }

    /** Stops the progress thread; afterwards the caller holds the only access. */
    void stop() {
        running = false;
        if (thread != null) {
            signal();
            // Not cut short by an interrupt (kept, and set again): the worker is destroyed next.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            boolean interrupted = false;
            while (thread.isAlive() && System.nanoTime() - deadline < 0) {
                try {
                    thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** False once the worker is stopping for good: no UCX object of it may be touched after that. */
    public boolean isRunning() {
        return running;
    }

    /** Runs what is still queued, with the lock held, before the worker is destroyed. */
    void runLockedAfterDrain(Runnable body) {
        lock.lock();
        try {
            destroyed = true;
            drainQueue();
            // A producer between its exchange of the queue's tail and its link reads destroyed only after
            // it linked; whichever value it reads, its task is run here or revoked by it: wait for the
            // link, so that the task (and any behind it) is not left. A link that never comes (its
            // producer died between the two writes) is given up on after a while, loudly.
            long giveUpAt = System.nanoTime() + LAST_DRAIN_WAIT_NANOS;
            for (int step = 1; !queue.isEmpty(); step++) {
                if (System.nanoTime() - giveUpAt > 0) {
                    LOG.error("ucx4j worker closing: a submission was never completed by its thread; tasks"
                            + " queued behind it are dropped");
                    break;
                }
                AdaptiveSpin.pause(step);
                drainQueue();
            }
            while (signalling.get() != 0) {
                Thread.onSpinWait(); // a signal under way: it read destroyed before it was set
            }
            body.run();
        } finally {
            lock.unlock();
        }
    }
}
