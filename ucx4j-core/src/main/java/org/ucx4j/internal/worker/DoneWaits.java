package org.ucx4j.internal.worker;

import java.lang.ref.WeakReference;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.locks.LockSupport;

/**
 * Waiting for a future without running its dependent stages. A thread parked in {@link
 * CompletableFuture#get()} that wakes once the future completed runs the stages still attached to it
 * ("helps" the completing thread), so a stage of a ucx4j future could run on a thread that only waited
 * for it, against the threading contract ({@link org.ucx4j.UcxFuture}: stages run on the progress
 * thread); a blocking call made in such a stage was then allowed and could wait for ever. Here the waiter
 * is woken by a stage of its own, which only unparks it, and reads the result once the future is done.
 *
 * <p>Threading: any thread; a {@link ForkJoinPool} worker gets a spare thread while it waits, as in
 * {@code CompletableFuture.get()}.
 */
public final class DoneWaits {
    /** The future this thread last registered its wake-up stage on (weakly: it may be gone). */
    private static final ThreadLocal<WeakReference<CompletableFuture<?>>> LAST_REGISTERED = new ThreadLocal<>();

    private DoneWaits() {}

    /**
     * Waits until {@code f} is done or {@code timeoutNanos} passed, running none of its stages.
     *
     * @param f the future
     * @param timeoutNanos how long to wait; negative: for ever
     * @return whether it is done
     * @throws InterruptedException when the thread is interrupted first (the flag is cleared)
     */
    public static boolean awaitDone(CompletableFuture<?> f, long timeoutNanos) throws InterruptedException {
        if (f.isDone()) {
            return true;
        }
        Thread me = Thread.currentThread();
        // A stage that only wakes this thread, run where f completes. One per thread and future: a loop of
        // timed waits on the same pending future (a poll with a timeout) must not pile up stages on it,
        // which would stay until it completes. A stage that wakes a thread already waiting for something
        // else costs it a spurious wake-up, which its park loop absorbs.
        WeakReference<CompletableFuture<?>> last = LAST_REGISTERED.get();
        if (last == null || last.get() != f) {
            f.whenComplete((v, e) -> LockSupport.unpark(me));
            LAST_REGISTERED.set(new WeakReference<>(f));
        }
        long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        ForkJoinPool.managedBlock(new ForkJoinPool.ManagedBlocker() {
            @Override
            public boolean block() throws InterruptedException {
                while (!isReleasable()) {
                    if (Thread.interrupted()) {
                        throw new InterruptedException();
                    }
                    if (timeoutNanos < 0) {
                        LockSupport.park(f);
                    } else {
                        LockSupport.parkNanos(f, deadline - System.nanoTime());
                    }
                }
                return true;
            }

            @Override
            public boolean isReleasable() {
                return f.isDone() || (timeoutNanos >= 0 && deadline - System.nanoTime() <= 0);
            }
        });
        return f.isDone();
    }
}
