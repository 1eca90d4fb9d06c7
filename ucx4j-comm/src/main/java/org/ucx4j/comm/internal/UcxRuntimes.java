package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxConfig;

/**
 * The {@link UcxRuntime}s of one {@link UcxTransport} instance, and so of one
 * {@link org.ucx4j.comm.CommContext}: one per UCX configuration, and one per same-host peer process of a
 * configuration ({@link SameHost}, at most {@link #MAX_SAME_HOST_WORKERS} in use), created on first use,
 * closed {@link #LINGER} after their last user leaves while the context is open (an idle same-host one
 * sooner when another needs its room), and at once (or when their last user leaves) once it is closed.
 * They share one {@link MessageScopes}, so {@code max-unclosed-bytes} bounds the context.
 *
 * <p>At JVM exit a shutdown hook ({@link #atExit()}) ends closed comms' lingers and closes the runtimes that
 * nobody uses then, rather than leaving their UCX contexts to the process's native teardown: with CUDA loaded,
 * UCX's cleanup there runs after the driver's and logs an error ({@code cuDevicePrimaryCtxGetState ...
 * failed}) at every exit that came within {@link #LINGER} of the last comm's close. Runtimes still in use at
 * exit are left alone (other shutdown hooks may be using them).
 *
 * <p>Threading: thread-safe (one monitor, this object, also guards the runtimes' user counts).
 */
final class UcxRuntimes {
    private static final Logger LOG = LoggerFactory.getLogger(UcxRuntimes.class);

    /** How long an unused runtime stays for the next connection of a burst. */
    static final Duration LINGER = Duration.ofSeconds(2);

    /**
     * The most {@link #atExit()} waits for comms and listeners that are closing to let go of their runtimes;
     * it stops waiting as soon as none has let go for {@link #EXIT_QUIET} (what is left is in use).
     */
    static final Duration EXIT_WAIT = Duration.ofMillis(500);

    static final Duration EXIT_QUIET = Duration.ofMillis(100);

    private final Map<UcxRuntime.Key, UcxRuntime> runtimes = new HashMap<>();
    /** This comm context's process id in same-host tokens ({@link SameHost}): 128 random bits, in hex. */
    private final String process;

    /**
     * The arenas received messages of this context's {@code ucx://} comms live in, every runtime's
     * together: {@code max-unclosed-bytes} bounds the context, however many same-host workers it keeps.
     */
    final MessageScopes scopes = new MessageScopes();

    /**
     * The most same-host workers one comm context keeps at once ({@link SameHost}): each holds a UCX
     * context, a progress thread and about 4 MiB of shared memory segments; beyond it, new same-host
     * peers stay on the shared worker.
     */
    static final int MAX_SAME_HOST_WORKERS = 32;

    UcxRuntimes() {
        byte[] id = new byte[16];
        new java.security.SecureRandom().nextBytes(id);
        this.process = java.util.HexFormat.of().formatHex(id);
    }

    /** This comm context's process id, for same-host tokens. */
    String process() {
        return process;
    }

    /** Written under this object's lock; read without it ({@link #isClosed()}). */
    private volatile boolean closed;
    /** The JVM is exiting (the shutdown hook started): closed comms no longer wait for their peers. */
    private volatile boolean exiting;
    /** The shutdown hook running {@link #atExit()}, registered with the first runtime; null before and after. */
    private Thread exitHook;
    /** How many times a user let go of a runtime (for {@link #atExit()}). */
    private long releases;

    /** The runtime for a configuration, created on first use; pair with {@link UcxRuntime#release()}. */
    UcxRuntime acquire(UcxConfig config) {
        return acquire(UcxRuntime.Key.of(config), config);
    }

    /**
     * The worker kept for one same-host peer process ({@link SameHost}), of {@code shared}'s configuration,
     * created on first use; pair with {@link UcxRuntime#release()}. Like the shared runtime, it stays
     * {@link #LINGER} after its last comm for the next one.
     *
     * @param shared the shared runtime, whose {@link UcxRuntime#sameHostTransports()} is not empty
     * @param peerProcess the peer's process id from its token
     */
    UcxRuntime acquireSameHost(UcxRuntime shared, String peerProcess) {
        String transports = shared.sameHostTransports();
        if (transports.isEmpty()) {
            throw new IllegalStateException("no shared memory transport for a same-host worker");
        }
        return acquire(shared.key.sameHost(shared.config, transports, peerProcess), shared.config);
    }

    /**
     * Whether a worker for one more same-host peer process could be made now: fewer than
     * {@link #MAX_SAME_HOST_WORKERS} in use (lingering ones, which no comm uses, make room when needed).
     */
    synchronized boolean roomForSameHost() {
        return sameHostInUse() < MAX_SAME_HOST_WORKERS;
    }

    private int sameHostInUse() {
        return (int) runtimes.values().stream()
                .filter(r -> r.key.isSameHost() && r.users > 0)
                .count();
    }

    /** With this object's lock, at the cap: closes the same-host workers no comm uses (lingering ones). */
    private void evictIdleSameHost() {
        List<UcxRuntime> idle = runtimes.values().stream()
                .filter(r -> r.key.isSameHost() && r.users == 0)
                .toList();
        for (UcxRuntime r : idle) {
            runtimes.remove(r.key);
            if (r.closing != null) {
                r.closing.cancel(false);
                r.closing = null;
            }
            CommTimers.elsewhere(r::close);
        }
    }

    /** How many same-host workers are open now. */
    synchronized int sameHostCount() {
        return (int)
                runtimes.keySet().stream().filter(UcxRuntime.Key::isSameHost).count();
    }

    private UcxRuntime acquire(UcxRuntime.Key key, UcxConfig config) {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the comm context is closed");
            }
            UcxRuntime r = runtimes.get(key);
            if (r == null && key.isSameHost() && sameHostCount() >= MAX_SAME_HOST_WORKERS) {
                if (sameHostInUse() >= MAX_SAME_HOST_WORKERS) {
                    throw new IllegalStateException(
                            "this comm context keeps " + MAX_SAME_HOST_WORKERS + " same-host workers in use already");
                }
                evictIdleSameHost();
            }
            if (r == null) {
                r = new UcxRuntime(this, key, config);
                runtimes.put(key, r);
                registerExitHook();
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
            releases++;
            notifyAll(); // atExit() may wait for this
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
        Thread hook;
        synchronized (this) {
            closed = true;
            hook = exitHook;
            exitHook = null;
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
        if (hook != null && hook != Thread.currentThread()) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException exiting) {
                // the JVM is shutting down: the hook runs (or ran) and finds this closed
            }
        }
    }

    /** With this object's lock: registers {@link #atExit()} once, unless the JVM is already exiting. */
    private void registerExitHook() {
        if (exitHook != null) {
            return;
        }
        Thread hook = Thread.ofPlatform().name("ucx4j-comm-exit").unstarted(this::atExit);
        try {
            Runtime.getRuntime().addShutdownHook(hook);
            exitHook = hook;
        } catch (IllegalStateException exiting) {
            // created during shutdown: it closes when its users leave, or with the process
        }
    }

    /**
     * The shutdown hook: closed comms stop waiting for their peers (what those have not read is dropped, as
     * the process ends anyway), then, while comms and listeners that are closing still let go of their
     * runtimes ({@link #EXIT_QUIET} apart, {@link #EXIT_WAIT} at most), it waits; then every runtime nobody
     * uses is closed. Runtimes with open comms or listeners are left as they are.
     */
    void atExit() {
        exiting = true; // before ending the lingers: a comm that starts to linger after them closes at once
        List<UcxRuntime> all;
        synchronized (this) {
            all = List.copyOf(runtimes.values());
        }
        all.forEach(UcxRuntime::endLingers);
        List<UcxRuntime> idle = new ArrayList<>();
        synchronized (this) {
            long deadline = System.nanoTime() + EXIT_WAIT.toNanos();
            long left;
            while (anyHeld() && (left = deadline - System.nanoTime()) > 0) {
                long before = releases;
                try {
                    wait(Math.max(1, Math.min(EXIT_QUIET.toMillis(), left / 1_000_000)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                if (releases == before) {
                    break; // nothing let go for a while: what is left is in use
                }
            }
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
        idle.forEach(this::closeIfUnused);
        if (!idle.isEmpty()) {
            LOG.debug("ucx4j-comm: closed {} unused UCX runtime(s) at JVM exit", idle.size());
        }
    }

    /** With this object's lock: whether some runtime has a user. */
    private boolean anyHeld() {
        for (UcxRuntime r : runtimes.values()) {
            if (r.users > 0) {
                return true;
            }
        }
        return false;
    }

    /** Whether closed comms should close now rather than wait for their peers: closed, or the JVM exiting. */
    boolean endsLingersNow() {
        return exiting || isClosed();
    }

    /** Whether {@link #close()} was called (no lock: progress threads ask while a runtime is being made). */
    boolean isClosed() {
        return closed;
    }

    /** How many runtimes are open. */
    synchronized int open() {
        return runtimes.size();
    }
}
