package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.ucx4j.UcxConfig;

/**
 * The {@link UcxRuntime}s of one {@link UcxTransport} instance, and so of one
 * {@link org.ucx4j.comm.CommContext}: one per UCX configuration, created on first use, closed
 * {@link #LINGER} after their last user leaves while the context is open, and at once (or when their
 * last user leaves) once it is closed.
 *
 * <p>Threading: thread-safe (one monitor, this object, also guards the runtimes' user counts).
 */
final class UcxRuntimes {
    /** How long an unused runtime stays for the next connection of a burst. */
    static final Duration LINGER = Duration.ofSeconds(2);

    private final Map<UcxRuntime.Key, UcxRuntime> runtimes = new HashMap<>();
    private boolean closed;

    /** The runtime for a configuration, created on first use; pair with {@link UcxRuntime#release()}. */
    UcxRuntime acquire(UcxConfig config) {
        UcxRuntime.Key key = UcxRuntime.Key.of(config);
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the comm context is closed");
            }
            UcxRuntime r = runtimes.get(key);
            if (r == null) {
                r = new UcxRuntime(this, key, config);
                runtimes.put(key, r);
            }
            r.users++;
            if (r.closing != null) {
                r.closing.cancel(false);
                r.closing = null;
            }
            return r;
        }
    }

    /** A user of {@code r} left: after the last, its close is scheduled (or runs now, when closed). */
    void released(UcxRuntime r) {
        synchronized (this) {
            if (--r.users > 0) {
                return;
            }
            if (!closed) {
                r.closing = CommTimers.after(LINGER, () -> closeIfUnused(r));
                return;
            }
        }
        // Never on the caller's thread, which may be the worker's own progress thread.
        CommTimers.elsewhere(() -> closeIfUnused(r));
    }

    private void closeIfUnused(UcxRuntime r) {
        synchronized (this) {
            if (r.users > 0 || runtimes.get(r.key) != r) {
                return;
            }
            runtimes.remove(r.key);
        }
        r.close();
    }

    /**
     * Refuses new runtimes, ends the linger of closed comms' endpoints, and closes the unused runtimes
     * now; the others close when their last user leaves, without lingering. Idempotent.
     */
    void close() {
        List<UcxRuntime> idle = new ArrayList<>();
        List<UcxRuntime> all;
        synchronized (this) {
            closed = true;
            all = List.copyOf(runtimes.values());
            for (UcxRuntime r : runtimes.values()) {
                if (r.users == 0) {
                    if (r.closing != null) {
                        r.closing.cancel(false);
                        r.closing = null;
                    }
                    idle.add(r);
                }
            }
        }
        all.forEach(UcxRuntime::endLingers);
        idle.forEach(this::closeIfUnused);
    }

    /** Whether {@link #close()} was called. */
    synchronized boolean isClosed() {
        return closed;
    }

    /** How many runtimes are open. */
    synchronized int open() {
        return runtimes.size();
    }
}
