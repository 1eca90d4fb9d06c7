package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Runs work later or elsewhere, each task on a virtual thread of its own, timed by the JDK's
 * {@link CompletableFuture#delayedExecutor}: ucx4j-comm keeps no timer thread or executor of its own
 * that would need starting, sharing or shutting down.
 *
 * <p>Threading: any thread. Cancelling a returned future before its time keeps the task from running.
 */
final class CommTimers {
    private static final Executor OWN_VIRTUAL_THREAD =
            task -> Thread.ofVirtual().name("ucx4j-comm-timer").start(task);

    private CommTimers() {}

    /** Runs {@code task} after {@code delay}; cancel the future to call it off. */
    static CompletableFuture<Void> after(Duration delay, Runnable task) {
        return CompletableFuture.runAsync(
                task, CompletableFuture.delayedExecutor(delay.toNanos(), TimeUnit.NANOSECONDS, OWN_VIRTUAL_THREAD));
    }

    /** Runs {@code task} now on another thread (never on the caller's, which may be UCX's progress thread). */
    static void elsewhere(Runnable task) {
        OWN_VIRTUAL_THREAD.execute(task);
    }
}
