package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommTimeoutException;

/**
 * Bounds blocking set-up work (connect, handshake) in time: at the deadline it runs an abort action
 * that closes the connection, which makes the blocked call fail; the failure is then reported as a
 * {@link CommTimeoutException}.
 */
final class Watchdog {
    private Watchdog() {}

    static <T> T within(Duration limit, String what, Runnable abort, Callable<T> work) {
        AtomicBoolean fired = new AtomicBoolean();
        CompletableFuture<Void> timer = CommTimers.after(limit, () -> {
            fired.set(true);
            abort.run();
        });
        try {
            T result = work.call();
            if (!timer.cancel(false) && fired.get()) {
                throw new CommTimeoutException(what + " did not finish within " + limit + " (connect-timeout)");
            }
            return result;
        } catch (Exception e) {
            timer.cancel(false);
            if (fired.get()) {
                throw new CommTimeoutException(what + " did not finish within " + limit + " (connect-timeout)", e);
            }
            if (e instanceof CommException c) {
                throw c;
            }
            throw new CommException(what + " failed: " + Failures.describe(e), e);
        }
    }
}
