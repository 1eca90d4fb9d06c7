package org.ucx4j.comm;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.internal.Failures;
import org.ucx4j.comm.spi.Transport;

/**
 * What the comms and listeners made through it share, and the owner of its lifetime (as Aeron's
 * {@code Context}): its own instance of every transport, and through them the UCX contexts and workers
 * ({@code ucx://}, one per UCX configuration), the arenas received messages live in, and the names of
 * {@code inproc://} listeners.
 *
 * <p>Lifetime: a UCX worker stays a short while after its last comm or listener closes, so that a burst
 * of short connections does not pay for a new UCX context each time; a closed {@code ucx://} comm keeps
 * its endpoint until the peer has read everything and hung up (at most 30 s, or the close timeout).
 * {@link #close()} ends both at once: closed comms' endpoints close by force (what their peers have not
 * read yet is dropped), what nobody uses is released, and what open comms and listeners use is released
 * when they close (they keep working until then); new connections and listeners are refused.
 *
 * <p>{@link Comms}' static methods use {@link #shared()}, the process-wide context, created on first
 * use. Tests, and applications that want the lifetime in hand, {@link #create()} their own.
 *
 * <pre>{@code
 * try (CommContext ctx = CommContext.create();
 *      CommListener l = ctx.listen(URI.create("ucx://127.0.0.1:0"), handler, CommOptions.defaults());
 *      Comm c = ctx.connect(l.address(), CommOptions.defaults())) {
 *     ...
 * } // the UCX worker is gone here: nothing lingers, nothing to wait for
 * }</pre>
 *
 * <p>Threading: thread-safe. Ownership: the caller closes a context it created; {@code close()} is
 * idempotent. The shared context may be closed too (a later {@link #shared()} makes a fresh one).
 */
public final class CommContext implements AutoCloseable {
    private static final Object SHARED_LOCK = new Object();
    /** The process-wide default; guarded by {@link #SHARED_LOCK}. */
    private static CommContext shared;

    private final List<Transport> transports = new ArrayList<>();
    private final Map<String, Transport> byScheme;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CommContext() {
        Map<String, Transport> m = new LinkedHashMap<>();
        // A fresh ServiceLoader makes fresh provider instances: this context's own transports.
        for (Transport t : ServiceLoader.load(Transport.class, CommContext.class.getClassLoader())) {
            transports.add(t);
            for (String s : t.schemes()) {
                Transport old = m.putIfAbsent(s.toLowerCase(Locale.ROOT), t);
                if (old != null) {
                    LoggerFactory.getLogger(CommContext.class)
                            .warn(
                                    "two transports serve scheme {}: {} (used) and {} (ignored)",
                                    s,
                                    old.getClass().getName(),
                                    t.getClass().getName());
                }
            }
        }
        this.byScheme = Map.copyOf(m);
    }

    /**
     * A new context, owned by the caller.
     *
     * @return the context
     */
    public static CommContext create() {
        return new CommContext();
    }

    /**
     * The process-wide context that {@link Comms}' static methods use, created on first use (and again
     * after it was closed).
     *
     * @return the shared context
     */
    public static CommContext shared() {
        synchronized (SHARED_LOCK) {
            if (shared == null || shared.isClosed()) {
                shared = new CommContext();
            }
            return shared;
        }
    }

    /**
     * Listens.
     *
     * @param address where; port 0 picks a free port (see {@link CommListener#address()})
     * @param handler receives each accepted comm after its handshake, on a virtual thread of its own
     * @param options settings
     * @return the listener, owned by the caller
     * @throws IllegalArgumentException for an unknown scheme or an unusable address
     * @throws IllegalStateException when this context is closed
     * @throws CommException when listening fails
     */
    public CommListener listen(URI address, CommHandler handler, CommOptions options) {
        Objects.requireNonNull(handler, "handler");
        Objects.requireNonNull(options, "options");
        return transport(address).listen(address, handler, options);
    }

    /**
     * Connects, waiting for the handshake.
     *
     * @param address the listener's address
     * @param options settings
     * @return the comm, owned by the caller
     * @throws CommTimeoutException when it takes longer than {@link CommOptions#connectTimeout()}
     * @throws CommAuthenticationException when the shared secrets differ
     * @throws CommException when the peer cannot be reached or refuses
     * @throws IllegalStateException when this context is closed
     */
    public Comm connect(URI address, CommOptions options) {
        CompletableFuture<Comm> f = connectAsync(address, options);
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new CommException("interrupted while connecting to " + address, e);
        } catch (ExecutionException e) {
            throw Failures.unchecked(e.getCause());
        }
    }

    /**
     * Connects asynchronously.
     *
     * @param address the listener's address
     * @param options settings
     * @return completes with the comm after the handshake
     * @throws IllegalStateException when this context is closed
     */
    public CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        Objects.requireNonNull(options, "options");
        return transport(address).connectAsync(address, options);
    }

    /**
     * This context's transport serving a scheme.
     *
     * @param address an address with that scheme
     * @return the transport
     * @throws IllegalArgumentException when no transport serves it
     * @throws IllegalStateException when this context is closed
     */
    public Transport transport(URI address) {
        Objects.requireNonNull(address, "address");
        if (isClosed()) {
            throw new IllegalStateException("the comm context is closed");
        }
        String scheme = address.getScheme();
        if (scheme == null) {
            throw new IllegalArgumentException("comm address '" + address + "' has no scheme; use one of " + schemes());
        }
        Transport t = byScheme.get(scheme.toLowerCase(Locale.ROOT));
        if (t == null) {
            throw new IllegalArgumentException(
                    "no transport for scheme '" + scheme + "' in '" + address + "'; known schemes: " + schemes());
        }
        return t;
    }

    /**
     * The schemes of every transport found.
     *
     * @return the schemes, sorted
     */
    public Set<String> schemes() {
        return new TreeSet<>(byScheme.keySet());
    }

    /**
     * Whether {@link #close()} was called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Refuses new connections and listeners and releases what nobody uses now (see the class comment).
     * Idempotent.
     *
     * @throws RuntimeException the first failure of a transport's close, with the others suppressed
     *     (every transport is closed regardless)
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        RuntimeException failure = null;
        for (Transport t : transports) {
            try {
                t.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "CommContext[" + schemes() + (isClosed() ? ", closed" : "") + "]";
    }
}
