package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommTimeoutException;

/**
 * Bounds blocking set-up work (connect, handshake) in time: at the deadline it runs an abort action
 * that closes the connection, which makes the blocked call fail; the failure is then reported as a
 * {@link CommTimeoutException}.
 *
 * <p>The work's end and the deadline race; exactly one of them wins, decided by one compare-and-set. If
 * the work ends first, the abort never runs and the result is returned. If the deadline comes first,
 * the abort runs, and a result the work still produced (its connection now closed under it) is closed
 * when it is {@link AutoCloseable}, never returned: the caller gets the timeout and nothing leaks.
 *
 * <p>Threading: {@link #within} runs the work on the calling thread; the abort runs on a timer thread
 * of {@link CommTimers}, concurrently with the work.
 */
final class Watchdog {
    private static final int RUNNING = 0;
    private static final int FINISHED = 1;
    private static final int TIMED_OUT = 2;
    private static final int CUT_SHORT = 3;

    private Watchdog() {}

    static <T> T within(Duration limit, String what, Runnable abort, Callable<T> work) {
        return within(limit, what, abort, null, work);
    }

    /**
     * As {@link #within(Duration, String, Runnable, Callable)}, and the work may also be cut short before
     * its deadline: {@code slot}'s eviction (a newcomer took its handshake slot) runs the abort the same way,
     * and the caller gets a {@link CommException} that says so.
     */
    static <T> T within(Duration limit, String what, Runnable abort, HandshakeSlots.Slot slot, Callable<T> work) {
        AtomicInteger state = new AtomicInteger(RUNNING);
        CompletableFuture<Void> timer = CommTimers.after(limit, () -> {
            if (state.compareAndSet(RUNNING, TIMED_OUT)) {
                abort.run();
            }
        });
        if (slot != null) {
            slot.onEvict(() -> {
                if (state.compareAndSet(RUNNING, CUT_SHORT)) {
                    abort.run();
                }
            });
        }
        T result;
        try {
            result = work.call();
        } catch (Exception e) {
            timer.cancel(false);
            if (!state.compareAndSet(RUNNING, FINISHED)) {
                throw ended(state.get(), what, limit, e);
            }
            if (e instanceof CommException c) {
                throw c;
            }
            throw new CommException(what + " failed: " + Failures.describe(e), e);
        }
        timer.cancel(false);
        if (!state.compareAndSet(RUNNING, FINISHED)) {
            // The deadline (or an eviction) won: the abort closed (or is closing) what the result is built on.
            CommException e = ended(state.get(), what, limit, null);
            if (result instanceof AutoCloseable resource) {
                try {
                    resource.close();
                } catch (Exception closing) {
                    e.addSuppressed(closing);
                }
            }
            throw e;
        }
        return result;
    }

    private static CommException ended(int state, String what, Duration limit, Exception cause) {
        if (state == CUT_SHORT) {
            String message = what + " was cut short: every handshake slot was taken (or every one of its source's"
                    + " share), and this one, under way longest, gave its slot to a newcomer (max-pending-handshakes,"
                    + " max-pending-handshakes-per-source, handshake-eviction-age)";
            return cause == null ? new CommException(message) : new CommException(message, cause);
        }
        return timedOut(what, limit, cause);
    }

    private static CommTimeoutException timedOut(String what, Duration limit, Exception cause) {
        String message = what + " did not finish within " + limit + " (connect-timeout)";
        return cause == null ? new CommTimeoutException(message) : new CommTimeoutException(message, cause);
    }
}
